/// `POST /v1/auth/anonymous`: `{user, session, name_suggestions}`.
public struct AnonymousResponse: Codable, Sendable, Hashable {
    public var user: UserPayload
    public var session: SessionPayload
    /// Three distinct names; `POST /v1/me/anonymous-name` accepts one of them.
    public var nameSuggestions: [String]
    public init(user: UserPayload, session: SessionPayload, nameSuggestions: [String]) {
        self.user = user
        self.session = session
        self.nameSuggestions = nameSuggestions
    }
    enum CodingKeys: String, CodingKey {
        case user, session
        case nameSuggestions = "name_suggestions"
    }
}

/// `POST /v1/me/anonymous-name`.
public struct AnonymousNameRequest: Codable, Sendable, Hashable {
    public var name: String
    public init(name: String) { self.name = name }
    enum CodingKeys: String, CodingKey {
        case name
    }
}

/// `PATCH /v1/me`: only the fields present change; `avatar_url: null` removes the avatar.
public struct ProfilePatch: Codable, Sendable, Hashable {
    public var displayName: String?
    public var handle: String?
    public var avatarURL: String?
    /// True when `avatar_url` was in the body (possibly as null).
    public var setsAvatarURL: Bool
    public var onboardingComplete: Bool?
    /// Keys to merge into the account's `user_metadata` (`null` removes one), at most 4 KiB of
    /// JSON once merged.
    public var userMetadata: [String: JSONValue]?

    public init(
        displayName: String? = nil, handle: String? = nil, avatarURL: String? = nil, setsAvatarURL: Bool = false, onboardingComplete: Bool? = nil,
        userMetadata: [String: JSONValue]? = nil
    ) {
        self.userMetadata = userMetadata
        self.displayName = displayName
        self.handle = handle
        self.avatarURL = avatarURL
        self.setsAvatarURL = setsAvatarURL || avatarURL != nil
        self.onboardingComplete = onboardingComplete
    }

    enum CodingKeys: String, CodingKey {
        case displayName = "display_name"
        case handle
        case avatarURL = "avatar_url"
        case onboardingComplete = "onboarding_complete"
        case userMetadata = "user_metadata"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        userMetadata = try c.decodeIfPresent([String: JSONValue].self, forKey: .userMetadata)
        displayName = try c.decodeIfPresent(String.self, forKey: .displayName)
        handle = try c.decodeIfPresent(String.self, forKey: .handle)
        setsAvatarURL = c.contains(.avatarURL)
        avatarURL = try c.decodeIfPresent(String.self, forKey: .avatarURL)
        onboardingComplete = try c.decodeIfPresent(Bool.self, forKey: .onboardingComplete)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(displayName, forKey: .displayName)
        try c.encodeIfPresent(handle, forKey: .handle)
        if setsAvatarURL { try c.encode(avatarURL, forKey: .avatarURL) }
        try c.encodeIfPresent(onboardingComplete, forKey: .onboardingComplete)
        try c.encodeIfPresent(userMetadata, forKey: .userMetadata)
    }
}

/// `GET /v1/handles/{handle}`.
public struct HandleAvailability: Codable, Sendable, Hashable {
    public var handle: String
    public var available: Bool
    /// `too_short`, `too_long`, `invalid_characters`, `reserved`, `taken`, or null.
    public var reason: String?
    public init(handle: String, available: Bool, reason: String?) {
        self.handle = handle
        self.available = available
        self.reason = reason
    }
    enum CodingKeys: String, CodingKey {
        case handle, available, reason
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(handle, forKey: .handle)
        try c.encode(available, forKey: .available)
        try c.encode(reason, forKey: .reason)
    }
}

/// `POST /v1/auth/merge`.
public struct MergeRequest: Codable, Sendable, Hashable {
    public var mergeToken: String
    public init(mergeToken: String) { self.mergeToken = mergeToken }
    enum CodingKeys: String, CodingKey {
        case mergeToken = "merge_token"
    }
}

/// One event of `GET /admin/v1/events`.
public struct EventEntry: Codable, Sendable, Hashable {
    public var id: String
    /// Pass the last one as `after` to read on.
    public var cursor: String
    public var type: String
    public var userID: String?
    public var data: [String: String]
    public var createdAt: String
    public init(id: String, cursor: String, type: String, userID: String?, data: [String: String], createdAt: String) {
        self.id = id
        self.cursor = cursor
        self.type = type
        self.userID = userID
        self.data = data
        self.createdAt = createdAt
    }
    enum CodingKeys: String, CodingKey {
        case id, cursor, type, data
        case userID = "user_id"
        case createdAt = "created_at"
    }
}

/// `GET /admin/v1/events?after=<cursor>`: oldest first.
public struct EventList: Codable, Sendable, Hashable {
    public var events: [EventEntry]
    /// The cursor to continue from (the last event's, or the one given when there is nothing new).
    public var nextCursor: String?
    public init(events: [EventEntry], nextCursor: String?) {
        self.events = events
        self.nextCursor = nextCursor
    }
    enum CodingKeys: String, CodingKey {
        case events
        case nextCursor = "next_cursor"
    }
}

/// `PUT /admin/v1/users/{id}/plan`: a plan override, or null to remove it.
public struct PlanOverrideRequest: Codable, Sendable, Hashable {
    public var plan: String?
    public init(plan: String?) { self.plan = plan }
    enum CodingKeys: String, CodingKey {
        case plan
    }
}

/// A mailed link in an export: what and when, never the token.
public struct ExportedLink: Codable, Sendable, Hashable {
    public var purpose: String
    public var email: String
    public var createdAt: String
    public var expiresAt: String
    public var usedAt: String?
    public init(purpose: String, email: String, createdAt: String, expiresAt: String, usedAt: String?) {
        self.purpose = purpose
        self.email = email
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
    }
    enum CodingKeys: String, CodingKey {
        case purpose, email
        case createdAt = "created_at"
        case expiresAt = "expires_at"
        case usedAt = "used_at"
    }
}

/// `GET /v1/me/export`: everything Gatehouse stores about the person. Keys are the store's
/// tables (`users`, `identities`, `sessions`, `email_tokens`, `audit_log`, `events`,
/// `idempotency_keys`, `credit_ledger`, `usage_records`, `usage_meters`…) so that a test can
/// prove nothing is left out.
public struct AccountExport: Codable, Sendable, Hashable {
    public var exportedAt: String
    public var users: UserPayload
    public var planOverride: String?
    public var identities: [IdentityPayload]
    public var sessions: [SessionInfo]
    public var emailTokens: [ExportedLink]
    public var auditLog: [AuditEntry]
    public var events: [EventEntry]
    /// When the account's requests carried an `Idempotency-Key` (the keys are kept hashed).
    public var idempotencyKeys: [String]
    /// Every credit spent.
    public var creditLedger: [ExportedCreditSpend]
    /// App Store subscriptions the account owns.
    public var subscriptions: [ExportedSubscription]
    public var entitlements: EntitlementsPayload
    /// Each use an app's backend counted on a usage meter (`POST /v1/usage/{meter}`).
    public var usageRecords: [ExportedUsage]
    /// Each meter's count per period.
    public var usageMeters: [ExportedUsageCount]
    /// The account's passkeys (their public keys stay on the server: they identify nothing).
    public var passkeys: [PasskeyPayload]
    /// Passkey ceremonies opened for the account and not finished yet.
    public var passkeyChallenges: [ExportedPasskeyChallenge]
    public var mfaFactors: [MFAFactorPayload]
    public var mfaRecoveryCodes: [ExportedRecoveryCode]
    public var mfaChallenges: [ExportedMFAChallenge]
    /// SMS codes sent to add a number to the account: the number and times, never the code.
    public var phoneCodes: [ExportedPhoneCode]
    /// The plan ledger's other rows: the Stripe customer's id, Stripe's subscriptions as last
    /// read, and operators' grants (revoked and ended ones included).
    public var stripeCustomers: [String], stripeSubscriptions: [ExportedStripeSubscription], planGrants: [GrantPayload]
    /// Google Play subscription purchases as last read from Google, replaced and voided ones included.
    public var googlePlayPurchases: [ExportedGooglePlayPurchase]
    /// The OpenID provider's clients the person let in, and the one-time codes made for them
    /// (never a code itself).
    public var oauthConsents: [ExportedOAuthConsent], oauthCodes: [ExportedOAuthCode]

    public init(
        exportedAt: String, users: UserPayload, planOverride: String?, identities: [IdentityPayload], sessions: [SessionInfo],
        emailTokens: [ExportedLink], auditLog: [AuditEntry], events: [EventEntry], idempotencyKeys: [String],
        creditLedger: [ExportedCreditSpend], subscriptions: [ExportedSubscription], entitlements: EntitlementsPayload,
        usageRecords: [ExportedUsage] = [], usageMeters: [ExportedUsageCount] = [], passkeys: [PasskeyPayload] = [],
        passkeyChallenges: [ExportedPasskeyChallenge] = [], mfaFactors: [MFAFactorPayload] = [],
        mfaRecoveryCodes: [ExportedRecoveryCode] = [], mfaChallenges: [ExportedMFAChallenge] = [], phoneCodes: [ExportedPhoneCode] = [],
        stripeCustomers: [String] = [], stripeSubscriptions: [ExportedStripeSubscription] = [], planGrants: [GrantPayload] = [],
        oauthConsents: [ExportedOAuthConsent] = [], oauthCodes: [ExportedOAuthCode] = [],
        googlePlayPurchases: [ExportedGooglePlayPurchase] = []
    ) {
        self.googlePlayPurchases = googlePlayPurchases
        self.oauthConsents = oauthConsents
        self.oauthCodes = oauthCodes
        self.stripeCustomers = stripeCustomers
        self.stripeSubscriptions = stripeSubscriptions
        self.planGrants = planGrants
        self.phoneCodes = phoneCodes
        self.mfaFactors = mfaFactors
        self.mfaRecoveryCodes = mfaRecoveryCodes
        self.mfaChallenges = mfaChallenges
        self.exportedAt = exportedAt
        self.users = users
        self.planOverride = planOverride
        self.identities = identities
        self.sessions = sessions
        self.emailTokens = emailTokens
        self.auditLog = auditLog
        self.events = events
        self.idempotencyKeys = idempotencyKeys
        self.creditLedger = creditLedger
        self.subscriptions = subscriptions
        self.entitlements = entitlements
        self.usageRecords = usageRecords
        self.usageMeters = usageMeters
        self.passkeys = passkeys
        self.passkeyChallenges = passkeyChallenges
    }

    enum CodingKeys: String, CodingKey {
        case exportedAt = "exported_at"
        case users
        case planOverride = "plan_override"
        case identities, sessions
        case emailTokens = "email_tokens"
        case auditLog = "audit_log"
        case events
        case idempotencyKeys = "idempotency_keys"
        case creditLedger = "credit_ledger"
        case subscriptions, entitlements
        case usageRecords = "usage_records"
        case usageMeters = "usage_meters"
        case passkeys
        case passkeyChallenges = "passkey_challenges"
        case mfaFactors = "mfa_factors"
        case mfaRecoveryCodes = "mfa_recovery_codes"
        case mfaChallenges = "mfa_challenges"
        case phoneCodes = "phone_codes"
        case stripeCustomers = "stripe_customers"
        case stripeSubscriptions = "stripe_subscriptions"
        case planGrants = "plan_grants"
        case googlePlayPurchases = "google_play_purchases"
        case oauthConsents = "oauth_consents"
        case oauthCodes = "oauth_codes"
    }
}
