import Foundation
import GatehouseWire

/// A UUID that names one kind of thing (random, or for sessions beginning with their time); the
/// tag keeps a user id from being passed where a session id is expected.
public struct TypedID<Tag>: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID
    public init(_ rawValue: UUID) { self.rawValue = rawValue }
    /// Parses a lowercase or uppercase UUID string (`UUIDText`).
    public init?(_ string: String) {
        guard let uuid = UUIDText.parse(string) else { return nil }
        self.rawValue = uuid
    }
    /// A new random (version 4) id, never derived from a device or an email.
    public static func random() -> TypedID { TypedID(SecureRandom.uuid()) }
    /// A new id that begins with `time` (version 7), for things made as time passes (sessions):
    /// see `SecureRandom.timeOrderedUUID(at:)`.
    public static func timeOrdered(at time: Date) -> TypedID { TypedID(SecureRandom.timeOrderedUUID(at: time)) }
    /// Lowercase, as the contract requires.
    public var description: String { UUIDText.lowercase(rawValue) }
}

public enum UserTag {}
public enum SessionTag {}

/// A user's immutable id.
public typealias UserID = TypedID<UserTag>
/// A session's id (one per sign-in).
public typealias SessionID = TypedID<SessionTag>
