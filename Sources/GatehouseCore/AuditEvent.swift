import Foundation
import GatehouseWire

/// One line of the audit trail: who did what, from where, and how it went. Never a secret.
public struct AuditEvent: Sendable, Equatable {
    public var id: UUID
    /// Position in the trail, assigned by the store; orders events that share a second.
    public var sequence: Int64?
    public var createdAt: Date
    /// An `AuditEvent.Name`'s raw value, e.g. `signup`, `login`, `refresh_reuse_detected`.
    public var event: Name
    /// An `AuditEvent.Outcome`'s raw value: `success` or `failure` (or another word the event
    /// defines, e.g. the type of an `apple_event`).
    public var outcome: Outcome
    public var userID: UserID?
    public var sessionID: SessionID?
    public var ipAddress: String?
    public var userAgent: String?
    /// Non-secret facts, e.g. `reason`, `scope`.
    public var details: [String: String]

    public init(
        id: UUID = UUID(), sequence: Int64? = nil, createdAt: Date, event: Name, outcome: Outcome, userID: UserID? = nil,
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

extension AuditEvent {
    /// What happened (`event`); the stored and listed strings are the raw values.
    public struct Name: GatehouseValue {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let signup: Name = "signup"
        public static let login: Name = "login"
        /// A failure that locked the account (`details.retry_after`).
        public static let lockout: Name = "lockout"
        public static let logout: Name = "logout"
        /// A session ended by its owner from the sessions list.
        public static let sessionRevoked: Name = "session_revoked"
        /// A rotated refresh token presented again after the reuse interval: the session ends.
        public static let refreshReuseDetected: Name = "refresh_reuse_detected"
        public static let passwordChange: Name = "password_change"
        public static let passwordReset: Name = "password_reset"
        public static let emailVerified: Name = "email_verified"
        /// What an unverified account had before its inbox owner proved the address (a
        /// pre-hijack) was removed.
        public static let unverifiedAccessRemoved: Name = "unverified_access_removed"
        public static let identityLinked: Name = "identity_linked"
        public static let identityUnlinked: Name = "identity_unlinked"
        /// A passkey registered (`passkey_id`, `backup_eligible`).
        public static let passkeyAdded: Name = "passkey_added"
        /// A passkey removed by its owner (`passkey_id`).
        public static let passkeyRemoved: Name = "passkey_removed"
        /// A passkey sign-in or proof that failed (`reason`).
        public static let passkeyAssertion: Name = "passkey_assertion"
        /// A second factor enrolled, confirmed or removed (`factor_id`, `by` for an admin's).
        public static let mfaFactorAdded: Name = "mfa_factor_added"
        public static let mfaFactorConfirmed: Name = "mfa_factor_confirmed"
        public static let mfaFactorRemoved: Name = "mfa_factor_removed"
        /// A sign-in asked for its second factor.
        public static let mfaChallenge: Name = "mfa_challenge"
        /// A second-factor code tried at sign-in, at a step-up or at confirmation (`method`,
        /// `reason` on failure).
        public static let mfaVerify: Name = "mfa_verify"
        /// A recovery code was used (`remaining`), or a new set was made.
        public static let recoveryCodeUsed: Name = "recovery_code_used"
        public static let recoveryCodesRegenerated: Name = "recovery_codes_regenerated"
        public static let accountMerged: Name = "account_merged"
        /// The password proof before a deletion (a failed or locked attempt).
        public static let deleteAccount: Name = "delete_account"
        public static let accountDeleted: Name = "account_deleted"
        public static let accountDisabled: Name = "account_disabled"
        public static let planOverride: Name = "plan_override"
        /// A disabled account enabled again by an operator.
        public static let accountEnabled: Name = "account_enabled"
        /// Credits given by an operator (`credit`, `amount`, `reason`).
        public static let creditsGranted: Name = "credits_granted"
        /// A sign-in to the admin console with the admin key (success or failure).
        public static let adminSignIn: Name = "admin_sign_in"
        /// A mail an operator had sent: a reset or magic link, a verification, a test (`kind`).
        public static let adminMail: Name = "admin_mail"
        /// The signing key rotated by an operator (`retired_kid`, `kid`).
        public static let signingKeyRotated: Name = "signing_key_rotated"
        /// A Sign in with Apple server-to-server notification; its type is the outcome.
        public static let appleEvent: Name = "apple_event"
    }

    /// How it went (`outcome`).
    public struct Outcome: GatehouseValue {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let success: Outcome = "success"
        public static let failure: Outcome = "failure"
        /// Refused while the account is locked, or the failure that locked it.
        public static let locked: Outcome = "locked"
        /// A refresh token's reuse ended its session.
        public static let sessionRevoked: Outcome = "session_revoked"
    }
}
