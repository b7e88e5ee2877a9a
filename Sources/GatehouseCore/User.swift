import Foundation
import GatehouseWire

/// How a person signs in: an identity's kind, a session's sign-in (`Session.provider`), the
/// `provider` of `user.created` and `user.upgraded`. Open so that providers can be added
/// without breaking stored rows.
public struct Provider: GatehouseValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Email and password; also the identity a magic link signs in to.
    public static let email: Provider = "email"
    public static let apple: Provider = "apple"
    public static let google: Provider = "google"
    /// A magic link or its code: the `provider` of the events of an account it made or
    /// upgraded, and the SDK's last way in on a device. Its identity and session are `email`.
    public static let magicLink: Provider = "magic_link"
    public static let anonymous: Provider = "anonymous"
    /// A passkey (WebAuthn): the `provider` of its sessions and of the accounts it made. A
    /// passkey is not an identity row: the account's passkeys are listed on their own.
    public static let passkey: Provider = "passkey"

    /// The access token's `amr` method for a session opened this way, where the session says
    /// it exactly (an `email` session may be a password or a magic link, so it has none yet).
    public var authenticationMethod: String? {
        [.passkey, .apple, .google, .anonymous].contains(self) ? rawValue : nil
    }
}

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
        id: UUID = UUID(), userID: UserID, provider: Provider, subject: String, email: String? = nil,
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
                    provider: $0.provider.rawValue, email: $0.email, isPrivateRelay: $0.isPrivateRelay,
                    createdAt: $0.createdAt.rfc3339)
            })
    }
}
