/// A value from a set Gatehouse owns, such as a plan state or a sign-in provider: open like
/// `ErrorCode` (a newer server may send one an older SDK has no constant for, and a stored row
/// keeps whatever string it was written with), compared with the constants, written as a string
/// literal where that reads better. Encoded as its raw string.
public protocol GatehouseValue: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral where RawValue == String
{
    init(rawValue: String)
}

extension GatehouseValue {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }
}
