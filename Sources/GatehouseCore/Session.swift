import Foundation

/// One sign-in on one device. Its refresh tokens form a chain (the family); revoking the
/// session ends them all.
public struct Session: Sendable, Equatable {
    public var id: SessionID
    public var userID: UserID
    /// How the person signed in (a `Provider`'s raw value): `email` (a password or a magic
    /// link), `apple`, `google`, `anonymous`.
    public var provider: Provider
    public var createdAt: Date
    public var lastActiveAt: Date
    /// The end of the absolute lifetime, when the preset sets one.
    public var expiresAt: Date?
    public var revokedAt: Date?
    public var revokedReason: String?
    /// As the preset's privacy setting keeps them.
    public var userAgent: String?
    public var ipAddress: String?

    public init(
        id: SessionID = .random(), userID: UserID, provider: Provider, createdAt: Date, lastActiveAt: Date? = nil,
        expiresAt: Date? = nil, revokedAt: Date? = nil, revokedReason: String? = nil, userAgent: String? = nil,
        ipAddress: String? = nil
    ) {
        self.id = id
        self.userID = userID
        self.provider = provider
        self.createdAt = createdAt
        self.lastActiveAt = lastActiveAt ?? createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.revokedReason = revokedReason
        self.userAgent = userAgent
        self.ipAddress = ipAddress
    }

    public var isRevoked: Bool { revokedAt != nil }

    /// How long after its sign-in a session proves a recent sign-in by itself (deleting the
    /// account, adding a passkey).
    public static let recentSignInSeconds: TimeInterval = 300

    /// Whether the sign-in that opened this session was recent enough at `now`.
    public func isRecentSignIn(at now: Date) -> Bool {
        now.timeIntervalSince(createdAt) < Self.recentSignInSeconds
    }

    /// Whether the session may still be used at `now` under `settings`.
    public func isLive(at now: Date, settings: TokenSettings) -> Bool {
        if revokedAt != nil { return false }
        if let expiresAt, expiresAt <= now { return false }
        if let inactivity = settings.refreshInactivityTTLSeconds,
            lastActiveAt.addingTimeInterval(TimeInterval(inactivity)) <= now
        {
            return false
        }
        return true
    }
}

/// A refresh token as stored: only its SHA-256 hash.
public struct RefreshTokenRecord: Sendable, Equatable {
    public var hash: [UInt8]
    public var sessionID: SessionID
    public var issuedAt: Date
    /// Sliding: each rotation issues a token valid for the preset's refresh lifetime from then.
    public var expiresAt: Date
    /// When it was exchanged for its successor; `nil` while it is the session's newest.
    public var rotatedAt: Date?

    public init(hash: [UInt8], sessionID: SessionID, issuedAt: Date, expiresAt: Date, rotatedAt: Date? = nil) {
        self.hash = hash
        self.sessionID = sessionID
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.rotatedAt = rotatedAt
    }
}
