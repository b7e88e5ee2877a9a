/// A value from a set the server owns, like `ErrorCode`: open (a newer server may send one this
/// SDK has no constant for), compared with the constants, written as a string literal where
/// that reads better, coded as the bare string.
public protocol GatehouseValue: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral where RawValue == String
{
    init(rawValue: String)
}

extension GatehouseValue {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }
}
