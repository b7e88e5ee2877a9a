/// A sign-in method attached to a user, as the contract's `identities` array shows it.
public struct IdentityPayload: Codable, Sendable, Hashable {
    /// `email`, `apple`, `google` or `anonymous`.
    public var provider: Provider
    public var email: String?
    public var isPrivateRelay: Bool
    /// RFC 3339 UTC.
    public var createdAt: String

    public init(provider: Provider, email: String?, isPrivateRelay: Bool, createdAt: String) {
        self.provider = provider
        self.email = email
        self.isPrivateRelay = isPrivateRelay
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case provider
        case email
        case isPrivateRelay = "is_private_relay"
        case createdAt = "created_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(provider, forKey: .provider)
        try container.encode(email, forKey: .email)
        try container.encode(isPrivateRelay, forKey: .isPrivateRelay)
        try container.encode(createdAt, forKey: .createdAt)
    }
}

/// The contract's User object. Optional members are sent as `null`, never left out.
public struct UserPayload: Codable, Sendable, Hashable {
    public var id: String
    public var email: String?
    public var emailVerified: Bool
    public var isAnonymous: Bool
    public var displayName: String?
    public var handle: String?
    public var avatarURL: String?
    /// RFC 3339 UTC.
    public var createdAt: String
    public var onboardingComplete: Bool
    public var identities: [IdentityPayload]
    /// The account's number in E.164 (`+14155550100`), or nil.
    public var phone: String?
    /// Whether the number was proved with a code.
    public var phoneVerified: Bool
    /// Free JSON the holder keeps on the account (`PATCH /v1/me` `user_metadata`); `{}` when none.
    public var userMetadata: [String: JSONValue]
    /// Free JSON only operators write (roles and the like); `{}` when none.
    public var appMetadata: [String: JSONValue]

    public init(
        id: String, email: String?, emailVerified: Bool, isAnonymous: Bool, displayName: String?,
        handle: String?, avatarURL: String?, createdAt: String, onboardingComplete: Bool,
        identities: [IdentityPayload], phone: String? = nil, phoneVerified: Bool = false,
        userMetadata: [String: JSONValue] = [:], appMetadata: [String: JSONValue] = [:]
    ) {
        self.userMetadata = userMetadata
        self.appMetadata = appMetadata
        self.phone = phone
        self.phoneVerified = phoneVerified
        self.id = id
        self.email = email
        self.emailVerified = emailVerified
        self.isAnonymous = isAnonymous
        self.displayName = displayName
        self.handle = handle
        self.avatarURL = avatarURL
        self.createdAt = createdAt
        self.onboardingComplete = onboardingComplete
        self.identities = identities
    }

    enum CodingKeys: String, CodingKey {
        case id
        case email
        case emailVerified = "email_verified"
        case isAnonymous = "is_anonymous"
        case displayName = "display_name"
        case handle
        case avatarURL = "avatar_url"
        case createdAt = "created_at"
        case onboardingComplete = "onboarding_complete"
        case identities
        case phone
        case phoneVerified = "phone_verified"
        case userMetadata = "user_metadata"
        case appMetadata = "app_metadata"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        email = try container.decodeIfPresent(String.self, forKey: .email)
        emailVerified = try container.decode(Bool.self, forKey: .emailVerified)
        isAnonymous = try container.decode(Bool.self, forKey: .isAnonymous)
        displayName = try container.decodeIfPresent(String.self, forKey: .displayName)
        handle = try container.decodeIfPresent(String.self, forKey: .handle)
        avatarURL = try container.decodeIfPresent(String.self, forKey: .avatarURL)
        createdAt = try container.decode(String.self, forKey: .createdAt)
        onboardingComplete = try container.decode(Bool.self, forKey: .onboardingComplete)
        identities = try container.decode([IdentityPayload].self, forKey: .identities)
        // A server from before phone numbers sends neither.
        phone = try container.decodeIfPresent(String.self, forKey: .phone)
        phoneVerified = try container.decodeIfPresent(Bool.self, forKey: .phoneVerified) ?? false
        // Nor metadata, before issue 46.
        userMetadata = try container.decodeIfPresent([String: JSONValue].self, forKey: .userMetadata) ?? [:]
        appMetadata = try container.decodeIfPresent([String: JSONValue].self, forKey: .appMetadata) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(email, forKey: .email)
        try container.encode(emailVerified, forKey: .emailVerified)
        try container.encode(isAnonymous, forKey: .isAnonymous)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(handle, forKey: .handle)
        try container.encode(avatarURL, forKey: .avatarURL)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(onboardingComplete, forKey: .onboardingComplete)
        try container.encode(identities, forKey: .identities)
        try container.encode(phone, forKey: .phone)
        try container.encode(phoneVerified, forKey: .phoneVerified)
        try container.encode(userMetadata, forKey: .userMetadata)
        try container.encode(appMetadata, forKey: .appMetadata)
    }
}

/// The contract's Session object.
public struct SessionPayload: Codable, Sendable, Hashable {
    public var accessToken: String
    public var tokenType: String
    /// Seconds until the access token expires.
    public var expiresIn: Int
    /// Unix seconds.
    public var expiresAt: Int64
    public var refreshToken: String
    public var sessionID: String

    public init(accessToken: String, expiresIn: Int, expiresAt: Int64, refreshToken: String, sessionID: String) {
        self.accessToken = accessToken
        self.tokenType = "bearer"
        self.expiresIn = expiresIn
        self.expiresAt = expiresAt
        self.refreshToken = refreshToken
        self.sessionID = sessionID
    }

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case expiresAt = "expires_at"
        case refreshToken = "refresh_token"
        case sessionID = "session_id"
    }
}

/// `GET /admin/v1/users`: one page of users, newest first.
public struct AdminUserList: Codable, Sendable, Hashable {
    public var users: [AdminUser]
    /// Pass as `before` to get the next page; `null` on the last page.
    public var nextCursor: String?

    public init(users: [AdminUser], nextCursor: String?) {
        self.users = users
        self.nextCursor = nextCursor
    }

    enum CodingKeys: String, CodingKey {
        case users
        case nextCursor = "next_cursor"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(users, forKey: .users)
        try container.encode(nextCursor, forKey: .nextCursor)
    }
}

/// A user as the admin API shows it: the public User plus operational state.
public struct AdminUser: Codable, Sendable, Hashable {
    public var user: UserPayload
    public var disabled: Bool
    /// RFC 3339 UTC, or `null` when the account is enabled.
    public var disabledAt: String?
    public var disabledReason: String?
    /// The account's passkeys.
    public var passkeys: [PasskeyPayload]
    /// How many of each way in and second factor the account holds, by the catalogue's names
    /// (`password`, `email_link`, `apple`, `google`, `passkey`, `anonymous`, `totp`,
    /// `recovery_codes`); null in lists.
    public var credentials: [String: Int]?

    public init(
        user: UserPayload, disabled: Bool, disabledAt: String?, disabledReason: String?, passkeys: [PasskeyPayload] = [],
        credentials: [String: Int]? = nil
    ) {
        self.user = user
        self.disabled = disabled
        self.disabledAt = disabledAt
        self.disabledReason = disabledReason
        self.passkeys = passkeys
        self.credentials = credentials
    }

    enum CodingKeys: String, CodingKey {
        case user
        case disabled
        case disabledAt = "disabled_at"
        case disabledReason = "disabled_reason"
        case passkeys, credentials
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        user = try container.decode(UserPayload.self, forKey: .user)
        disabled = try container.decode(Bool.self, forKey: .disabled)
        disabledAt = try container.decodeIfPresent(String.self, forKey: .disabledAt)
        disabledReason = try container.decodeIfPresent(String.self, forKey: .disabledReason)
        passkeys = try container.decodeIfPresent([PasskeyPayload].self, forKey: .passkeys) ?? []
        credentials = try container.decodeIfPresent([String: Int].self, forKey: .credentials)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(user, forKey: .user)
        try container.encode(disabled, forKey: .disabled)
        try container.encode(disabledAt, forKey: .disabledAt)
        try container.encode(disabledReason, forKey: .disabledReason)
        try container.encode(passkeys, forKey: .passkeys)
        try container.encode(credentials, forKey: .credentials)
    }
}

/// `POST /admin/v1/users/{id}/disable` body.
public struct DisableUserRequest: Codable, Sendable, Hashable {
    /// Why, for the audit log; optional.
    public var reason: String?
    public init(reason: String?) { self.reason = reason }

    enum CodingKeys: String, CodingKey {
        case reason
    }
}

/// `PATCH /admin/v1/users/{id}/metadata` body: each object given is merged into the account's
/// at the top level (each key replaces its key, `null` removes it, keys not sent stay), at most
/// 4096 bytes of JSON once merged. Absent or `null` leaves that object as it is.
public struct AdminMetadataRequest: Codable, Sendable, Hashable {
    /// Keys to merge into `user_metadata`.
    public var userMetadata: [String: JSONValue]?
    /// Keys to merge into `app_metadata` (roles, a tenant: what only operators write).
    public var appMetadata: [String: JSONValue]?

    public init(userMetadata: [String: JSONValue]? = nil, appMetadata: [String: JSONValue]? = nil) {
        self.userMetadata = userMetadata
        self.appMetadata = appMetadata
    }

    enum CodingKeys: String, CodingKey {
        case userMetadata = "user_metadata"
        case appMetadata = "app_metadata"
    }
}
