/// Authenticator assurance (NIST SP 800-63B): `aal1` one factor, `aal2` two.
public struct AssuranceLevel: GatehouseValue, Comparable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let aal1: AssuranceLevel = "aal1"
    public static let aal2: AssuranceLevel = "aal2"

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
