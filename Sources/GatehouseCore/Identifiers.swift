import Foundation

/// A user's immutable id: a random UUIDv4, never derived from a device or an email.
public struct UserID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID
    public init(_ rawValue: UUID) { self.rawValue = rawValue }
    /// Parses a lowercase or uppercase UUID string.
    public init?(_ string: String) {
        guard let uuid = UUID(uuidString: string) else { return nil }
        self.rawValue = uuid
    }
    public static func random() -> UserID { UserID(UUID()) }
    /// Lowercase, as the contract requires.
    public var description: String { rawValue.uuidString.lowercased() }
}

/// A session's id (one per sign-in).
public struct SessionID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID
    public init(_ rawValue: UUID) { self.rawValue = rawValue }
    public init?(_ string: String) {
        guard let uuid = UUID(uuidString: string) else { return nil }
        self.rawValue = uuid
    }
    public static func random() -> SessionID { SessionID(UUID()) }
    public var description: String { rawValue.uuidString.lowercased() }
}
