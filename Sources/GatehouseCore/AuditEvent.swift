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
        id: UUID? = nil, sequence: Int64? = nil, createdAt: Date, event: Name, outcome: Outcome, userID: UserID? = nil,
        sessionID: SessionID? = nil, ipAddress: String? = nil, userAgent: String? = nil, details: [String: String] = [:]
    ) {
        self.id = id ?? SecureRandom.timeOrderedUUID(at: createdAt)
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
    public enum Name: String, Sendable, CaseIterable, Codable, CustomStringConvertible {
        public var description: String { rawValue }

        case signup
        case login
        /// A failure that locked the account (`details.retry_after`).
        case lockout
        case logout
        /// A session ended by its owner from the sessions list.
        case sessionRevoked = "session_revoked"
        /// A rotated refresh token presented again after the reuse interval: the session ends.
        case refreshReuseDetected = "refresh_reuse_detected"
        case passwordChange = "password_change"
        case passwordReset = "password_reset"
        case emailVerified = "email_verified"
        /// What an unverified account had before its inbox owner proved the address (a
        /// pre-hijack) was removed.
        case unverifiedAccessRemoved = "unverified_access_removed"
        case identityLinked = "identity_linked"
        case identityUnlinked = "identity_unlinked"
        /// A passkey registered (`passkey_id`, `backup_eligible`).
        case passkeyAdded = "passkey_added"
        /// A passkey removed by its owner (`passkey_id`).
        case passkeyRemoved = "passkey_removed"
        /// A passkey sign-in or proof that failed (`reason`).
        case passkeyAssertion = "passkey_assertion"
        /// A second factor enrolled, confirmed or removed (`factor_id`, `by` for an admin's).
        case mfaFactorAdded = "mfa_factor_added"
        case mfaFactorConfirmed = "mfa_factor_confirmed"
        case mfaFactorRemoved = "mfa_factor_removed"
        /// A sign-in asked for its second factor.
        case mfaChallenge = "mfa_challenge"
        /// A second-factor code tried at sign-in, at a step-up or at confirmation (`method`,
        /// `reason` on failure).
        case mfaVerify = "mfa_verify"
        /// A recovery code was used (`remaining`), or a new set was made.
        case recoveryCodeUsed = "recovery_code_used"
        case recoveryCodesRegenerated = "recovery_codes_regenerated"
        case accountMerged = "account_merged"
        /// An account brought in by an import (`source`, `source_id`, `providers`).
        case userImported = "user_imported"
        /// The password proof before a deletion (a failed or locked attempt).
        case deleteAccount = "delete_account"
        case accountDeleted = "account_deleted"
        case accountDisabled = "account_disabled"
        case planOverride = "plan_override"
        /// A disabled account enabled again by an operator.
        case accountEnabled = "account_enabled"
        /// Credits given by an operator (`credit`, `amount`, `reason`).
        case creditsGranted = "credits_granted"
        /// A sign-in to the admin console with the admin key (success or failure).
        case adminSignIn = "admin_sign_in"
        /// A mail an operator had sent: a reset or magic link, a verification, a test (`kind`).
        case adminMail = "admin_mail"
        /// The signing key rotated by an operator (`retired_kid`, `kid`).
        case signingKeyRotated = "signing_key_rotated"
        /// A Sign in with Apple server-to-server notification; its type is the outcome.
        case appleEvent = "apple_event"
        /// A number proved with a code became the account's (`phone`), or was removed.
        case phoneVerified = "phone_verified"
        /// An app's hook that rejected, or failed (`hook`, `decision`: `rejected`, `failed`,
        /// `failed_open`; `reason` for a failure).
        case hookCall = "hook_call"
        case phoneRemoved = "phone_removed"
        /// A send of an SMS code refused by a pumping defence (`reason`: an `SMSDefence`).
        case smsRefused = "sms_refused"
        /// Deliveries to a number kept failing: its sends pause for a day (`failures`).
        case smsNumberPaused = "sms_number_paused"
        /// An operator's promotional grant (`grant_id`, `tier`, `until`, `reason`, `by`).
        case grantCreated = "grant_created"
        case grantRevoked = "grant_revoked"
        /// The OpenID provider (`client_id` in the details): a code issued after a sign-in at
        /// `/oauth/authorize`, a consent given or withdrawn, tokens issued at `/oauth/token`
        /// (`grant_type`), a token revoked (RFC 7009), a code used twice (its session revoked),
        /// the app's hand-over made or used, a browser signed out (RP-initiated logout).
        case oauthAuthorized = "oauth_authorized"
        case oauthConsentGranted = "oauth_consent_granted"
        case oauthConsentRevoked = "oauth_consent_revoked"
        case oauthTokenIssued = "oauth_token_issued"
        case oauthTokenRevoked = "oauth_token_revoked"
        case oauthCodeReuse = "oauth_code_reuse"
        case oauthHandover = "oauth_handover"
        case oauthLogout = "oauth_logout"
        /// An operator registered a client, rotated its secret or deleted it (`client_id`, `by`).
        case oauthClientCreated = "oauth_client_created"
        case oauthClientSecretRotated = "oauth_client_secret_rotated"
        /// Its name or redirect URIs changed (`client_id`, `by`).
        case oauthClientUpdated = "oauth_client_updated"
        case oauthClientDeleted = "oauth_client_deleted"
        /// An operator (the service role too) changed the account's metadata (`kind`:
        /// `user_metadata`, `app_metadata`, `by`), its address (`email_changed`: `by`,
        /// `verified`), or made a sign-in link for it without a mail (`link_generated`: `type`,
        /// `by`); the holder changed their own `user_metadata` (`by`: `user`).
        case metadataChanged = "metadata_changed"
        case emailChanged = "email_changed"
        case linkGenerated = "link_generated"
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
