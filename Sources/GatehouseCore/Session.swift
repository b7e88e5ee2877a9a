import Foundation
import GatehouseWire

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
    /// The access token's first `amr` method (`password`, `magic_link`, `apple`, …); nil on
    /// sessions from before it was stored, which fall back to the provider's.
    public var method: String?
    /// `aal2` once a second factor was verified (at sign-in or by a step-up), or when a
    /// passkey counted as two.
    public var assurance: AssuranceLevel
    /// The second factor verified (`totp`, `recovery_code`) and when.
    public var secondFactor: String?
    public var secondFactorAt: Date?
    /// The OpenID provider's client the session was issued to (issue 45); nil for the app's own
    /// sessions and a browser's sign-in at the provider. A browser signed in by the app's
    /// hand-over carries the link's client: it is signed in at the provider for that one only. Its refresh tokens work only at
    /// `/oauth/token` for that client, the app's only at `/v1/auth/refresh`.
    public var clientID: String?
    /// The scopes granted to the client (space-separated), with `clientID`.
    public var scope: String?
    /// When the person last proved a first factor for a client's session (the ID token's
    /// `auth_time`): the browser session's sign-in, not the code's exchange.
    public var authTime: Date?
    /// The door the session was opened through (`SessionIssuer` records it); nil on sessions
    /// from before it was stored.
    public var door: SessionDoor?

    public init(
        id: SessionID? = nil, userID: UserID, provider: Provider, createdAt: Date, lastActiveAt: Date? = nil,
        expiresAt: Date? = nil, revokedAt: Date? = nil, revokedReason: String? = nil, userAgent: String? = nil,
        ipAddress: String? = nil, method: String? = nil, assurance: AssuranceLevel = .aal1, secondFactor: String? = nil,
        secondFactorAt: Date? = nil, clientID: String? = nil, scope: String? = nil, authTime: Date? = nil,
        door: SessionDoor? = nil
    ) {
        self.door = door
        self.clientID = clientID
        self.scope = scope
        self.authTime = authTime
        self.method = method
        self.assurance = assurance
        self.secondFactor = secondFactor
        self.secondFactorAt = secondFactorAt
        self.id = id ?? .timeOrdered(at: createdAt)
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

    /// The methods of the access token's `amr`, each with its time: the sign-in's, then the
    /// second factor's.
    public var authenticationMethods: [(method: String, at: Date)] {
        var methods: [(method: String, at: Date)] = []
        if let first = method ?? provider.authenticationMethod { methods.append((first, createdAt)) }
        if let secondFactor, let secondFactorAt { methods.append((secondFactor, secondFactorAt)) }
        return methods
    }

    /// The first factor the session was opened with (its `amr`'s first method).
    public var firstFactor: String { method ?? provider.authenticationMethod ?? provider.rawValue }

    /// The session as an access token minted from it sees it: when the token claims less than
    /// the session now holds (it was minted before a step-up), the request is judged by the
    /// token, as `GatehouseVerifier` judges it offline, so the server and the verifier decide
    /// the same token the same way (issue 39, finding 5).
    public func limited(by claimed: Assurance?) -> Session {
        guard let claimed else { return self }
        let stepUpAfterToken = secondFactorAt.map { claimed.authenticatedAt < $0 } ?? false
        guard claimed.level < assurance || stepUpAfterToken else { return self }
        var limited = self
        limited.assurance = min(claimed.level, assurance)
        if stepUpAfterToken {
            // The token's own second factor, if it had one; none when it was minted at aal1.
            let tokenHadOne = limited.assurance == .aal2 && claimed.authenticatedAt > createdAt
            limited.secondFactorAt = tokenHadOne ? claimed.authenticatedAt : nil
            if !tokenHadOne { limited.secondFactor = nil }
        }
        return limited
    }

    /// What gates see: the level, and the last time a factor was proved.
    public var assuranceState: Assurance {
        Assurance(level: assurance, authenticatedAt: max(createdAt, secondFactorAt ?? createdAt))
    }

    /// How long after its sign-in a session proves a recent sign-in by itself (deleting the
    /// account, adding a passkey).
    public static let recentSignInSeconds: TimeInterval = 300

    /// Whether the sign-in that opened this session, or a second factor verified since, was
    /// recent enough at `now`.
    public func isRecentSignIn(at now: Date) -> Bool {
        now.timeIntervalSince(assuranceState.authenticatedAt) < Self.recentSignInSeconds
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

/// Why a session ended: the `revoked_reason` of its row. Closed: the server alone writes it.
public enum SessionRevokeReason: String, Sendable, CaseIterable {
    /// `POST /v1/auth/logout`, scope `local`.
    case logout
    /// Scope `others`: every session but the caller's.
    case logoutOthers = "logout_others"
    /// Scope `global`.
    case logoutGlobal = "logout_global"
    /// The person ended one of their sessions (`DELETE /v1/auth/sessions/{id}`).
    case revokedByUser = "revoked_by_user"
    /// An operator did.
    case revokedByAdmin = "revoked_by_admin"
    case passwordChange = "password_change"
    case passwordReset = "password_reset"
    /// An operator set the password (`/auth/v1/admin/users`).
    case passwordSetByOperator = "password_set_by_operator"
    case accountDisabled = "account_disabled"
    /// A rotated refresh token came back: the chain is stolen or replayed.
    case refreshTokenReuse = "refresh_token_reuse"
    /// The owner proved the inbox of an unverified account: what came before the proof ends.
    case unverifiedTakeoverGuard = "unverified_takeover_guard"
    /// Apple told of a revoked consent, or of a deleted Apple account.
    case appleConsentRevoked = "apple_consent-revoked"
    case appleAccountDelete = "apple_account-delete"
    /// The OpenID provider: a client's token revoked (RFC 7009), a code used twice, the person
    /// withdrew the client's consent, an operator deleted the client, or the browser signed out
    /// (RP-initiated logout).
    case oauthTokenRevoked = "oauth_token_revoked"
    case oauthCodeReuse = "oauth_code_reuse"
    case oauthConsentRevoked = "oauth_consent_revoked"
    case oauthClientDeleted = "oauth_client_deleted"
    case oauthLogout = "oauth_logout"
}
