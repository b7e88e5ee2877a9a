import Foundation
import GatehouseWire

/// An account as the domain sees it.
public struct User: Sendable, Equatable {
    public var id: UserID
    /// The address as the person typed it; mail goes here.
    public var email: String?
    /// The identity key for the address (decision 7); unique across accounts.
    public var normalizedEmail: String?
    public var emailVerifiedAt: Date?
    public var isAnonymous: Bool
    public var displayName: String?
    /// Stored lowercase.
    public var handle: String?
    public var avatarURL: String?
    public var onboardingComplete: Bool
    /// A PHC-format hash (Argon2id, or bcrypt imported from elsewhere); `nil` for passwordless accounts.
    public var passwordHash: String?
    public var passwordChangedAt: Date?
    public var disabledAt: Date?
    public var disabledReason: String?
    public var createdAt: Date
    public var updatedAt: Date
    /// The names last offered to an anonymous user; one of them may become the display name.
    public var nameSuggestions: [String]?
    /// A plan set by an operator, overriding what purchases say (read by the entitlement engine).
    public var planOverride: String?
    /// When the account's one trial began (`nil`: never).
    public var trialStartedAt: Date?
    /// The last sign-in an import brought from another system (this server's own sign-ins
    /// are its sessions).
    public var lastSignInAt: Date?
    /// The account's number in E.164 (unique across accounts, like the address).
    public var phone: String?
    /// When the number was proved with a code; nil while it is not (a sign-up with a number
    /// and a password on `/auth/v1` before its code).
    public var phoneVerifiedAt: Date?
    /// Free JSON the account's holder and the operator keep on it (GoTrue's `user_metadata`),
    /// written under `AccountMetadata`'s rules.
    public var userMetadata: [String: JSONValue] = [:]
    /// Free JSON only operators and the service role write (`app_metadata`: roles, a tenant),
    /// what an app's own rules read from the token.
    public var appMetadata: [String: JSONValue] = [:]

    public init(
        id: UserID, email: String? = nil, normalizedEmail: String? = nil, emailVerifiedAt: Date? = nil,
        isAnonymous: Bool = false, displayName: String? = nil, handle: String? = nil,
        avatarURL: String? = nil, onboardingComplete: Bool = false, passwordHash: String? = nil,
        passwordChangedAt: Date? = nil, disabledAt: Date? = nil, disabledReason: String? = nil,
        createdAt: Date, updatedAt: Date? = nil
    ) {
        self.id = id
        self.email = email
        self.normalizedEmail = normalizedEmail
        self.emailVerifiedAt = emailVerifiedAt
        self.isAnonymous = isAnonymous
        self.displayName = displayName
        self.handle = handle
        self.avatarURL = avatarURL
        self.onboardingComplete = onboardingComplete
        self.passwordHash = passwordHash
        self.passwordChangedAt = passwordChangedAt
        self.disabledAt = disabledAt
        self.disabledReason = disabledReason
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
    }

    public var isDisabled: Bool { disabledAt != nil }
    public var emailVerified: Bool { emailVerifiedAt != nil }
}

/// A provider identity linked to a user, keyed by (provider, subject).
public struct Identity: Sendable, Equatable {
    public var id: UUID
    public var userID: UserID
    public var provider: Provider
    /// The provider's stable id for the person (`sub`), the normalised email for `email`,
    /// or the user id for `anonymous`.
    public var subject: String
    public var email: String?
    public var isPrivateRelay: Bool
    public var createdAt: Date

    public init(
        id: UUID = SecureRandom.uuid(), userID: UserID, provider: Provider, subject: String, email: String? = nil,
        isPrivateRelay: Bool = false, createdAt: Date
    ) {
        self.id = id
        self.userID = userID
        self.provider = provider
        self.subject = subject
        self.email = email
        self.isPrivateRelay = isPrivateRelay
        self.createdAt = createdAt
    }
}

extension User {
    /// The contract's User object.
    public func payload(identities: [Identity]) -> UserPayload {
        UserPayload(
            id: id.description, email: email, emailVerified: emailVerified, isAnonymous: isAnonymous,
            displayName: displayName, handle: handle, avatarURL: avatarURL, createdAt: createdAt.rfc3339,
            onboardingComplete: onboardingComplete,
            identities: identities.map {
                IdentityPayload(
                    provider: $0.provider, email: $0.email, isPrivateRelay: $0.isPrivateRelay,
                    createdAt: $0.createdAt.rfc3339)
            }, phone: phone, phoneVerified: phoneVerifiedAt != nil, userMetadata: AccountMetadata.shown(userMetadata, of: self), appMetadata: appMetadata)
    }
}
