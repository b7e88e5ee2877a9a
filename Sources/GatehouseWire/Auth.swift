/// `POST /v1/auth/signup` and `POST /v1/auth/login`.
public struct EmailPasswordRequest: Codable, Sendable, Hashable {
    public var email: String
    public var password: String
    /// The CAPTCHA provider's response token, needed past the preset's threshold of failed
    /// logins from one IP (login and sign-up).
    public var captchaToken: String?
    public init(email: String, password: String, captchaToken: String? = nil) {
        self.email = email
        self.password = password
        self.captchaToken = captchaToken
    }
    enum CodingKeys: String, CodingKey {
        case email, password
        case captchaToken = "captcha_token"
    }
}

/// `POST /v1/auth/refresh`.
public struct RefreshRequest: Codable, Sendable, Hashable {
    public var refreshToken: String
    public init(refreshToken: String) { self.refreshToken = refreshToken }
    enum CodingKeys: String, CodingKey {
        case refreshToken = "refresh_token"
    }
}

/// `POST /v1/auth/logout`: `local` (default) ends this session, `others` every other one,
/// `global` all of them.
public struct LogoutRequest: Codable, Sendable, Hashable {
    public var scope: SignOutScope?
    public init(scope: SignOutScope? = nil) { self.scope = scope }
    enum CodingKeys: String, CodingKey {
        case scope
    }
}

/// `POST /v1/auth/password/change`.
public struct PasswordChangeRequest: Codable, Sendable, Hashable {
    public var currentPassword: String
    public var newPassword: String
    /// Defaults to false: other devices stay signed in (decision 5).
    public var signOutOtherSessions: Bool?
    public init(currentPassword: String, newPassword: String, signOutOtherSessions: Bool? = nil) {
        self.currentPassword = currentPassword
        self.newPassword = newPassword
        self.signOutOtherSessions = signOutOtherSessions
    }
    enum CodingKeys: String, CodingKey {
        case currentPassword = "current_password"
        case newPassword = "new_password"
        case signOutOtherSessions = "sign_out_other_sessions"
    }
}

/// `{user, session}`: the answer of every sign-in.
public struct AuthResponse: Codable, Sendable, Hashable {
    public var user: UserPayload
    public var session: SessionPayload
    public init(user: UserPayload, session: SessionPayload) {
        self.user = user
        self.session = session
    }
    enum CodingKeys: String, CodingKey {
        case user, session
    }
}

/// `{session}`: the answer of a refresh.
public struct SessionResponse: Codable, Sendable, Hashable {
    public var session: SessionPayload
    public init(session: SessionPayload) { self.session = session }
    enum CodingKeys: String, CodingKey {
        case session
    }
}

/// `{user}`.
public struct UserResponse: Codable, Sendable, Hashable {
    public var user: UserPayload
    public init(user: UserPayload) { self.user = user }
    enum CodingKeys: String, CodingKey {
        case user
    }
}

/// One entry of `GET /v1/auth/sessions`.
public struct SessionInfo: Codable, Sendable, Hashable {
    public var id: String
    public var createdAt: String
    public var lastActiveAt: String
    public var userAgent: String?
    public var provider: Provider
    /// The session of the token that asked.
    public var current: Bool

    public init(id: String, createdAt: String, lastActiveAt: String, userAgent: String?, provider: Provider, current: Bool) {
        self.id = id
        self.createdAt = createdAt
        self.lastActiveAt = lastActiveAt
        self.userAgent = userAgent
        self.provider = provider
        self.current = current
    }

    enum CodingKeys: String, CodingKey {
        case id
        case createdAt = "created_at"
        case lastActiveAt = "last_active_at"
        case userAgent = "user_agent"
        case provider
        case current
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(lastActiveAt, forKey: .lastActiveAt)
        try container.encode(userAgent, forKey: .userAgent)
        try container.encode(provider, forKey: .provider)
        try container.encode(current, forKey: .current)
    }
}

/// `GET /v1/auth/sessions`.
public struct SessionsResponse: Codable, Sendable, Hashable {
    public var sessions: [SessionInfo]
    public init(sessions: [SessionInfo]) { self.sessions = sessions }
    enum CodingKeys: String, CodingKey {
        case sessions
    }
}

/// `GET /v1/me`.
public struct MeResponse: Codable, Sendable, Hashable {
    public var user: UserPayload
    public var entitlements: EntitlementsPayload
    public init(user: UserPayload, entitlements: EntitlementsPayload) {
        self.user = user
        self.entitlements = entitlements
    }
    enum CodingKeys: String, CodingKey {
        case user, entitlements
    }
}

/// One row of `GET /admin/v1/audit`.
public struct AuditEntry: Codable, Sendable, Hashable {
    public var id: String
    public var createdAt: String
    public var event: String
    public var outcome: String
    public var userID: String?
    public var sessionID: String?
    public var ipAddress: String?
    public var userAgent: String?
    public var details: [String: String]

    public init(
        id: String, createdAt: String, event: String, outcome: String, userID: String?, sessionID: String?,
        ipAddress: String?, userAgent: String?, details: [String: String]
    ) {
        self.id = id
        self.createdAt = createdAt
        self.event = event
        self.outcome = outcome
        self.userID = userID
        self.sessionID = sessionID
        self.ipAddress = ipAddress
        self.userAgent = userAgent
        self.details = details
    }

    enum CodingKeys: String, CodingKey {
        case id
        case createdAt = "created_at"
        case event, outcome
        case userID = "user_id"
        case sessionID = "session_id"
        case ipAddress = "ip_address"
        case userAgent = "user_agent"
        case details
    }
}

/// `GET /admin/v1/audit`: newest first.
public struct AuditList: Codable, Sendable, Hashable {
    public var events: [AuditEntry]
    public var nextCursor: String?
    public init(events: [AuditEntry], nextCursor: String?) {
        self.events = events
        self.nextCursor = nextCursor
    }
    enum CodingKeys: String, CodingKey {
        case events
        case nextCursor = "next_cursor"
    }
}

/// `POST /v1/auth/password/forgot`.
public struct EmailRequest: Codable, Sendable, Hashable {
    public var email: String
    public init(email: String) { self.email = email }
    enum CodingKeys: String, CodingKey {
        case email
    }
}

/// `POST /v1/auth/email/verify`: the token from a verification link.
public struct TokenRequest: Codable, Sendable, Hashable {
    public var token: String
    public init(token: String) { self.token = token }
    enum CodingKeys: String, CodingKey {
        case token
    }
}

/// `POST /v1/auth/password/reset`.
public struct PasswordResetRequest: Codable, Sendable, Hashable {
    public var token: String
    public var password: String
    public init(token: String, password: String) {
        self.token = token
        self.password = password
    }
    enum CodingKeys: String, CodingKey {
        case token, password
    }
}

/// `POST /v1/auth/magic-link`.
public struct MagicLinkRequest: Codable, Sendable, Hashable {
    public var email: String
    /// Where the link sends the person back to; must match `GATEHOUSE_REDIRECT_ALLOWLIST`.
    public var redirectTo: String?
    public init(email: String, redirectTo: String? = nil) {
        self.email = email
        self.redirectTo = redirectTo
    }
    enum CodingKeys: String, CodingKey {
        case email
        case redirectTo = "redirect_to"
    }
}

/// `POST /v1/auth/magic-link/verify`: the link's token, or the address and the 6-digit code.
public struct MagicLinkVerifyRequest: Codable, Sendable, Hashable {
    public var token: String?
    public var email: String?
    public var code: String?
    public init(token: String? = nil, email: String? = nil, code: String? = nil) {
        self.token = token
        self.email = email
        self.code = code
    }
    enum CodingKeys: String, CodingKey {
        case token, email, code
    }
}

/// `{user, session, created}`: a sign-in that may have made the account.
public struct SignInResponse: Codable, Sendable, Hashable {
    public var user: UserPayload
    public var session: SessionPayload
    /// True when this sign-in created the account.
    public var created: Bool
    public init(user: UserPayload, session: SessionPayload, created: Bool) {
        self.user = user
        self.session = session
        self.created = created
    }
    enum CodingKeys: String, CodingKey {
        case user, session, created
    }
}

/// The name Apple shares on the first sign-in only.
public struct PersonName: Codable, Sendable, Hashable {
    public var givenName: String?
    public var familyName: String?
    public init(givenName: String? = nil, familyName: String? = nil) {
        self.givenName = givenName
        self.familyName = familyName
    }
    enum CodingKeys: String, CodingKey {
        case givenName = "given_name"
        case familyName = "family_name"
    }
}

/// `POST /v1/auth/apple`, `/v1/auth/google` and their `/v1/auth/identities/…` twins.
public struct ProviderSignInRequest: Codable, Sendable, Hashable {
    public var idToken: String
    /// The nonce the app generated; Apple's token carries its SHA-256 (hex), Google's the value.
    public var rawNonce: String?
    /// Apple only, first sign-in only.
    public var fullName: PersonName?
    /// Apple only: exchanged for Apple's refresh token so it can be revoked at deletion.
    public var authorizationCode: String?
    public init(idToken: String, rawNonce: String? = nil, fullName: PersonName? = nil, authorizationCode: String? = nil) {
        self.idToken = idToken
        self.rawNonce = rawNonce
        self.fullName = fullName
        self.authorizationCode = authorizationCode
    }
    enum CodingKeys: String, CodingKey {
        case idToken = "id_token"
        case rawNonce = "raw_nonce"
        case fullName = "full_name"
        case authorizationCode = "authorization_code"
    }
}

/// `POST /v1/webhooks/apple/sign-in`: Apple's server-to-server notification.
public struct AppleEventRequest: Codable, Sendable, Hashable {
    /// A JWT signed by Apple whose `events` claim describes what happened.
    public var payload: String
    public init(payload: String) { self.payload = payload }
    enum CodingKeys: String, CodingKey {
        case payload
    }
}

/// `DELETE /v1/me`: proof that fits the account (decision 2), unless the session is young.
public struct DeleteAccountRequest: Codable, Sendable, Hashable {
    public var password: String?
    /// A fresh Apple or Google id_token of one of the account's identities.
    public var idToken: String?
    public var rawNonce: String?
    /// A magic-link code mailed to the account's address.
    public var code: String?
    /// An assertion by one of the account's passkeys, on a challenge from
    /// `POST /v1/passkeys/authentication/options`.
    public var passkey: PasskeyAssertionRequest?
    /// An SMS code sent to the account's verified number (`POST /v1/auth/phone/code`).
    public var smsCode: String?
    public init(
        password: String? = nil, idToken: String? = nil, rawNonce: String? = nil, code: String? = nil,
        passkey: PasskeyAssertionRequest? = nil, smsCode: String? = nil
    ) {
        self.smsCode = smsCode
        self.password = password
        self.idToken = idToken
        self.rawNonce = rawNonce
        self.code = code
        self.passkey = passkey
    }
    enum CodingKeys: String, CodingKey {
        case password
        case idToken = "id_token"
        case rawNonce = "raw_nonce"
        case code, passkey
        case smsCode = "sms_code"
    }
}
