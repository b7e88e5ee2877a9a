import Foundation

/// One line of the audit trail: who did what, from where, and how it went. Never a secret.
public struct AuditEvent: Sendable, Equatable {
    public var id: UUID
    /// Position in the trail, assigned by the store; orders events that share a second.
    public var sequence: Int64?
    public var createdAt: Date
    /// e.g. `signup`, `login`, `refresh_reuse_detected`, `logout`, `password_change`, `lockout`.
    public var event: String
    /// `success` or `failure` (or another word the event defines).
    public var outcome: String
    public var userID: UserID?
    public var sessionID: SessionID?
    public var ipAddress: String?
    public var userAgent: String?
    /// Non-secret facts, e.g. `reason`, `scope`.
    public var details: [String: String]

    public init(
        id: UUID = UUID(), sequence: Int64? = nil, createdAt: Date, event: String, outcome: String, userID: UserID? = nil,
        sessionID: SessionID? = nil, ipAddress: String? = nil, userAgent: String? = nil, details: [String: String] = [:]
    ) {
        self.id = id
        self.sequence = sequence
        self.createdAt = createdAt
        self.event = event
        self.outcome = outcome
        self.userID = userID
        self.sessionID = sessionID
        self.ipAddress = ipAddress
        self.userAgent = userAgent
        self.details = details
    }
}
