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
    public var scope: String?
    public init(scope: String? = nil) { self.scope = scope }
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
    public var provider: String
    /// The session of the token that asked.
    public var current: Bool

    public init(id: String, createdAt: String, lastActiveAt: String, userAgent: String?, provider: String, current: Bool) {
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

/// The contract's Entitlements snapshot.
public struct EntitlementsPayload: Codable, Sendable, Hashable {
    public var planState: String
    public var capabilities: [String: Bool]
    public var limits: [String: Int?]
    public var credits: [String: CreditBalance]
    public var trial: TrialInfo?
    public var readOnly: Bool
    public var tier: String?
    public var subscription: SubscriptionInfo?
    public var evaluatedAt: String

    public init(
        planState: String, capabilities: [String: Bool] = [:], limits: [String: Int?] = [:],
        credits: [String: CreditBalance] = [:], trial: TrialInfo? = nil, readOnly: Bool = false, tier: String? = nil,
        subscription: SubscriptionInfo? = nil, evaluatedAt: String
    ) {
        self.planState = planState
        self.capabilities = capabilities
        self.limits = limits
        self.credits = credits
        self.trial = trial
        self.readOnly = readOnly
        self.tier = tier
        self.subscription = subscription
        self.evaluatedAt = evaluatedAt
    }

    enum CodingKeys: String, CodingKey {
        case planState = "plan_state"
        case capabilities, limits, credits, trial
        case readOnly = "read_only"
        case tier, subscription
        case evaluatedAt = "evaluated_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(planState, forKey: .planState)
        try container.encode(capabilities, forKey: .capabilities)
        try container.encode(limits, forKey: .limits)
        try container.encode(credits, forKey: .credits)
        try container.encode(trial, forKey: .trial)
        try container.encode(readOnly, forKey: .readOnly)
        try container.encode(tier, forKey: .tier)
        try container.encode(subscription, forKey: .subscription)
        try container.encode(evaluatedAt, forKey: .evaluatedAt)
    }
}

public struct CreditBalance: Codable, Sendable, Hashable {
    public var remaining: Int
    public var granted: Int
    public var resetsAt: String?
    public init(remaining: Int, granted: Int, resetsAt: String?) {
        self.remaining = remaining
        self.granted = granted
        self.resetsAt = resetsAt
    }
    enum CodingKeys: String, CodingKey {
        case remaining, granted
        case resetsAt = "resets_at"
    }
    /// Every member of the contract's object is present, `null` when unknown.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(remaining, forKey: .remaining)
        try container.encode(granted, forKey: .granted)
        try container.encode(resetsAt, forKey: .resetsAt)
    }
}

public struct TrialInfo: Codable, Sendable, Hashable {
    public var endsAt: String
    public var daysLeft: Int
    public init(endsAt: String, daysLeft: Int) {
        self.endsAt = endsAt
        self.daysLeft = daysLeft
    }
    enum CodingKeys: String, CodingKey {
        case endsAt = "ends_at"
        case daysLeft = "days_left"
    }
}

public struct SubscriptionInfo: Codable, Sendable, Hashable {
    public var productID: String
    public var status: String
    public var renewsAt: String?
    public var expiresAt: String?
    public var willRenew: Bool
    public init(productID: String, status: String, renewsAt: String?, expiresAt: String?, willRenew: Bool) {
        self.productID = productID
        self.status = status
        self.renewsAt = renewsAt
        self.expiresAt = expiresAt
        self.willRenew = willRenew
    }
    enum CodingKeys: String, CodingKey {
        case productID = "product_id"
        case status
        case renewsAt = "renews_at"
        case expiresAt = "expires_at"
        case willRenew = "will_renew"
    }
    /// Every member of the contract's object is present, `null` when unknown.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(productID, forKey: .productID)
        try container.encode(status, forKey: .status)
        try container.encode(renewsAt, forKey: .renewsAt)
        try container.encode(expiresAt, forKey: .expiresAt)
        try container.encode(willRenew, forKey: .willRenew)
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
    public init(
        password: String? = nil, idToken: String? = nil, rawNonce: String? = nil, code: String? = nil,
        passkey: PasskeyAssertionRequest? = nil
    ) {
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
    }
}

/// An action a gate offers (`upgrade` "Upgrade to Pro", `manage_flows` "Manage flows", …).
public struct GateAction: Codable, Sendable, Hashable {
    public var id: String
    public var label: String
    public init(id: String, label: String) {
        self.id = id
        self.label = label
    }
    enum CodingKeys: String, CodingKey {
        case id, label
    }
}

/// The contract's gate decision.
public struct GateDecision: Codable, Sendable, Hashable {
    public var allowed: Bool
    /// `account`, `paywall`, `cap`, `soft_cap`, `verification`, or null.
    public var gate: String?
    public var reasonCode: String?
    public var message: String?
    public var secondaryMessage: String?
    public var actions: [GateAction]

    public init(allowed: Bool, gate: String?, reasonCode: String?, message: String?, secondaryMessage: String?, actions: [GateAction]) {
        self.allowed = allowed
        self.gate = gate
        self.reasonCode = reasonCode
        self.message = message
        self.secondaryMessage = secondaryMessage
        self.actions = actions
    }

    enum CodingKeys: String, CodingKey {
        case allowed, gate, actions
        case reasonCode = "reason_code"
        case message
        case secondaryMessage = "secondary_message"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(allowed, forKey: .allowed)
        try c.encode(gate, forKey: .gate)
        try c.encode(reasonCode, forKey: .reasonCode)
        try c.encode(message, forKey: .message)
        try c.encode(secondaryMessage, forKey: .secondaryMessage)
        try c.encode(actions, forKey: .actions)
    }
}

extension GateDecision {
    /// The error code a refusal of this decision answers with, the same from the server and from
    /// `GatehouseVerifier` (one mapping, so the two never disagree on a token): a step-up gate
    /// keeps its own reason (`mfa_required`, `reauthentication_required`) so a client can tell it
    /// from a paywall; everything else is `plan_required`.
    public var refusalCode: ErrorCode {
        switch reasonCode.map(ErrorCode.init(rawValue:)) {
        case .mfaRequired?: .mfaRequired
        case .reauthenticationRequired?: .reauthenticationRequired
        default: .planRequired
        }
    }
}

/// `POST /v1/entitlements/check`.
public struct EntitlementCheckRequest: Codable, Sendable, Hashable {
    public var action: String
    /// Counts before the action, e.g. `{"saved_count": 2}`.
    public var context: [String: Int]?
    public init(action: String, context: [String: Int]? = nil) {
        self.action = action
        self.context = context
    }
    enum CodingKeys: String, CodingKey {
        case action, context
    }
}

/// `POST /v1/credits/{name}/spend`.
public struct CreditSpendRequest: Codable, Sendable, Hashable {
    public var idempotencyKey: String
    public var action: String
    public var subject: String?
    public init(idempotencyKey: String, action: String, subject: String? = nil) {
        self.idempotencyKey = idempotencyKey
        self.action = action
        self.subject = subject
    }
    enum CodingKeys: String, CodingKey {
        case idempotencyKey = "idempotency_key"
        case action, subject
    }
}

/// `{remaining, spent}`: `remaining` is null when the plan does not count this credit.
public struct CreditSpendResponse: Codable, Sendable, Hashable {
    public var remaining: Int?
    public var spent: Int
    public init(remaining: Int?, spent: Int) {
        self.remaining = remaining
        self.spent = spent
    }
    enum CodingKeys: String, CodingKey {
        case remaining, spent
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(remaining, forKey: .remaining)
        try c.encode(spent, forKey: .spent)
    }
}

/// One client analytics event of `POST /v1/events`.
public struct ClientEvent: Codable, Sendable, Hashable {
    public var name: String
    public var properties: [String: JSONValue]?
    /// RFC 3339.
    public var occurredAt: String
    /// A device-local id, for events sent before an account exists.
    public var anonymousID: String?
    public init(name: String, properties: [String: JSONValue]? = nil, occurredAt: String, anonymousID: String? = nil) {
        self.name = name
        self.properties = properties
        self.occurredAt = occurredAt
        self.anonymousID = anonymousID
    }
    enum CodingKeys: String, CodingKey {
        case name, properties
        case occurredAt = "occurred_at"
        case anonymousID = "anonymous_id"
    }
}

/// `POST /v1/events`.
public struct ClientEventBatch: Codable, Sendable, Hashable {
    public var events: [ClientEvent]
    public init(events: [ClientEvent]) { self.events = events }
    enum CodingKeys: String, CodingKey {
        case events
    }
}

/// `POST /v1/usage/{meter}`, from an app's backend with the service key: one use of a meter
/// by `user_id`. The same `idempotency_key` answers the same use again, never a second one.
public struct UsageRequest: Codable, Sendable, Hashable {
    public var userID: String
    /// How much this use adds (1 when absent).
    public var amount: Int?
    public var idempotencyKey: String
    public init(userID: String, amount: Int? = nil, idempotencyKey: String) {
        self.userID = userID
        self.amount = amount
        self.idempotencyKey = idempotencyKey
    }
    enum CodingKeys: String, CodingKey {
        case userID = "user_id"
        case amount
        case idempotencyKey = "idempotency_key"
    }
}

/// `{used, limit, resets_at}`: the period's count after the use, the plan's limit (null:
/// unlimited) and when the count starts again (RFC 3339).
public struct UsageResponse: Codable, Sendable, Hashable {
    public var used: Int
    public var limit: Int?
    public var resetsAt: String
    public init(used: Int, limit: Int?, resetsAt: String) {
        self.used = used
        self.limit = limit
        self.resetsAt = resetsAt
    }
    enum CodingKeys: String, CodingKey {
        case used, limit
        case resetsAt = "resets_at"
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(used, forKey: .used)
        try c.encode(limit, forKey: .limit)
        try c.encode(resetsAt, forKey: .resetsAt)
    }
}
