import Foundation
import GatehouseWire

/// What a mailed link is for.
public struct EmailTokenPurpose: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let verifyEmail = EmailTokenPurpose(rawValue: "verify_email")
    public static let passwordReset = EmailTokenPurpose(rawValue: "password_reset")
    public static let magicLink = EmailTokenPurpose(rawValue: "magic_link")
    /// A link that makes its address (the token's `email`) the account's: sent to the new
    /// address it proves it; sent to the current one (`…_current`), it moves the account to the
    /// new address unverified (issue 46, GoTrue's `email_change_new` and `email_change_current`).
    public static let emailChangeNew = EmailTokenPurpose(rawValue: "email_change_new")
    public static let emailChangeCurrent = EmailTokenPurpose(rawValue: "email_change_current")
    public var description: String { rawValue }
}

/// A link token as stored: only its SHA-256 hash, never the token itself. A magic link also
/// carries a 6-digit code, stored as a keyed hash beside it.
public struct EmailToken: Sendable, Equatable {
    public var hash: [UInt8]
    public var purpose: EmailTokenPurpose
    /// The account it acts on; `nil` for a magic link to an address with no account yet.
    public var userID: UserID?
    /// The address as the person typed it (mail goes here).
    public var email: String
    /// The identity key of the address: a verification link verifies only this address.
    public var normalizedEmail: String
    public var codeHash: [UInt8]?
    public var codeAttempts: Int
    /// Where the app asked to be sent back to (magic links), already checked against the allowlist.
    public var redirectTo: String?
    /// The account's `password_changed_at` when the link was made: a reset link dies when the
    /// password changes after it.
    public var passwordStamp: Int64?
    public var createdAt: Date
    public var expiresAt: Date
    public var usedAt: Date?
    /// For a magic link asked for by a signed-in anonymous account: the account it upgrades.
    public var upgradeUserID: UserID?

    public init(
        hash: [UInt8], purpose: EmailTokenPurpose, userID: UserID?, email: String, normalizedEmail: String,
        codeHash: [UInt8]? = nil, codeAttempts: Int = 0, redirectTo: String? = nil, passwordStamp: Int64? = nil,
        createdAt: Date, expiresAt: Date, usedAt: Date? = nil, upgradeUserID: UserID? = nil
    ) {
        self.hash = hash
        self.purpose = purpose
        self.userID = userID
        self.email = email
        self.normalizedEmail = normalizedEmail
        self.codeHash = codeHash
        self.codeAttempts = codeAttempts
        self.redirectTo = redirectTo
        self.passwordStamp = passwordStamp
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
        self.upgradeUserID = upgradeUserID
    }

    /// What a link is worth right now.
    public enum State: Sendable, Equatable {
        case valid
        case expired
        /// Used, superseded, or killed by too many wrong codes.
        case used
    }

    public func state(at now: Date) -> State {
        if usedAt != nil { return .used }
        if now >= expiresAt { return .expired }
        return .valid
    }

    /// The reset-link binding: the link was made under the account's current password.
    public func matchesPassword(of user: User) -> Bool {
        passwordStamp == user.passwordChangedAt?.unixSeconds
    }
}
