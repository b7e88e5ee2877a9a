import Foundation
import GatehouseCore

/// Accounts and their linked identities.
public protocol UserStore: Sendable {
    /// Inserts a new user; `.uniqueViolation` when the email or handle is taken.
    func insertUser(_ user: User) async throws(StoreError)
    func user(id: UserID) async throws(StoreError) -> User?
    func user(normalizedEmail: String) async throws(StoreError) -> User?
    /// Newest first. `search` matches the start of the normalised email or handle, or the exact id.
    func users(search: String?, before: UserCursor?, limit: Int) async throws(StoreError) -> [User]
    /// Sets or clears the disabled state; false when no such user exists.
    func setDisabled(_ id: UserID, at date: Date?, reason: String?, now: Date) async throws(StoreError) -> Bool
    func insertIdentity(_ identity: Identity) async throws(StoreError)
    func identities(of userID: UserID) async throws(StoreError) -> [Identity]
    /// Replaces the password hash (after a change, a reset or a re-hash); `nil` removes it.
    func updatePassword(_ id: UserID, hash: String?, changedAt: Date?, now: Date) async throws(StoreError)
    /// Marks the email verified (now) when it is still `normalizedEmail`; false otherwise.
    func markEmailVerified(_ id: UserID, normalizedEmail: String, at date: Date) async throws(StoreError) -> Bool
    /// The identity a provider knows as `subject`.
    func identity(provider: Provider, subject: String) async throws(StoreError) -> Identity?
    /// Updates what a provider says of an identity (its address, whether it is a relay).
    func updateIdentity(_ id: UUID, email: String?, isPrivateRelay: Bool) async throws(StoreError)
    /// Removes a user's identities of `provider`; returns how many it removed.
    func deleteIdentities(of userID: UserID, provider: Provider) async throws(StoreError) -> Int
    /// Sets the display name and avatar only where they are empty (a provider never overwrites a profile).
    func fillProfile(_ id: UserID, displayName: String?, avatarURL: String?, now: Date) async throws(StoreError)
    /// Replaces the account's address (`.uniqueViolation` when another account has it).
    func updateEmail(_ id: UserID, email: String?, normalizedEmail: String?, verifiedAt: Date?, now: Date) async throws(StoreError)
    /// Deletes the account and, by cascade, everything that belongs to it; strips the client
    /// addresses from its audit rows and its address from the outbox.
    func deleteUser(_ id: UserID) async throws(StoreError) -> Bool
}

/// Sessions and their refresh-token chains.
public protocol SessionStore: Sendable {
    func insertSession(_ session: Session) async throws(StoreError)
    func session(id: SessionID) async throws(StoreError) -> Session?
    /// Live and ended sessions of a user, newest first.
    func sessions(of userID: UserID) async throws(StoreError) -> [Session]
    /// Whether the user has had any session, and any from `userAgent` (`nil` matches `nil`).
    func sessionHistory(of userID: UserID, userAgent: String?) async throws(StoreError) -> (any: Bool, fromAgent: Bool)
    func touchSession(_ id: SessionID, at date: Date) async throws(StoreError)
    /// Revokes one session; false when it was already revoked or does not exist.
    func revokeSession(_ id: SessionID, reason: String, at date: Date) async throws(StoreError) -> Bool
    /// Revokes every live session of a user except `keeping`; returns the ones it revoked.
    func revokeSessions(of userID: UserID, keeping: SessionID?, reason: String, at date: Date) async throws(StoreError) -> [SessionID]
    /// Revokes every live session of a user opened with `provider`.
    func revokeSessions(of userID: UserID, provider: String, reason: String, at date: Date) async throws(StoreError) -> [SessionID]
    func insertRefreshToken(_ token: RefreshTokenRecord) async throws(StoreError)
    /// The token with this hash; inside a transaction on PostgreSQL the row is locked until
    /// the transaction ends, so concurrent refreshes of one token are serialised.
    func refreshToken(hash: [UInt8]) async throws(StoreError) -> RefreshTokenRecord?
    func markRefreshTokenRotated(hash: [UInt8], at date: Date) async throws(StoreError)
}

/// Counters for login lockout and per-IP limits; in the database so that every node sees them.
public protocol ThrottleStore: Sendable {
    func throttle(key: String) async throws(StoreError) -> ThrottleState?
    /// Reserves one attempt on `key` in one atomic statement, before the work it limits: while
    /// the key is locked nothing is counted and `.locked` comes back; otherwise the attempt
    /// counts as a failure at once, and the attempt that reaches the schedule's threshold locks
    /// the key in the same statement. Any number of parallel callers therefore get at most the
    /// threshold's worth of attempts between locks. A success undoes it with `clearThrottle`.
    func reserveAttempt(key: String, at date: Date, schedule: LockSchedule) async throws(StoreError) -> AttemptReservation
    func clearThrottle(key: String) async throws(StoreError)
    /// Adds one hit to `key` in the window starting at `windowStart` and returns the window's count.
    func hitRateLimit(key: String, windowStart: Int64) async throws(StoreError) -> Int
    /// The window's count without adding to it.
    func rateLimitCount(key: String, windowStart: Int64) async throws(StoreError) -> Int
}

/// The audit trail.
public protocol AuditStore: Sendable {
    func insertAudit(_ event: AuditEvent) async throws(StoreError)
    /// Newest first; optionally one user's; `before` is the sequence of the previous page's last event.
    func auditEvents(userID: UserID?, before: Int64?, limit: Int) async throws(StoreError) -> [AuditEvent]
}

/// Server-wide secrets (e.g. the refresh-token chain key), sealed like signing keys.
public protocol SecretStore: Sendable {
    func secret(named name: String) async throws(StoreError) -> (value: [UInt8], encryption: String)?
    /// `.uniqueViolation` when another node stored it first.
    func insertSecret(named name: String, value: [UInt8], encryption: String, at date: Date) async throws(StoreError)
    func updateSecret(named name: String, value: [UInt8], encryption: String) async throws(StoreError)
}

/// Where a page of the user list ends: the last user's creation time and id.
public struct UserCursor: Sendable, Equatable {
    public var createdAt: Int64
    public var id: String

    public init(createdAt: Int64, id: String) {
        self.createdAt = createdAt
        self.id = id
    }

    public init?(_ token: String) {
        let parts = token.split(separator: "_", maxSplits: 1)
        guard parts.count == 2, let time = Int64(parts[0]), UserID(String(parts[1])) != nil else { return nil }
        self.createdAt = time
        self.id = String(parts[1])
    }

    public var token: String { "\(createdAt)_\(id)" }
}

/// A token-signing key as stored. The private key is encrypted when `encryption` is not `none`.
public struct SigningKeyRecord: Sendable, Equatable {
    public var kid: String
    public var algorithm: String
    public var privateKey: [UInt8]
    public var encryption: String
    /// The public JWK as JSON.
    public var publicJWK: String
    /// `active` (signs new tokens) or `retired` (verifies until `publishUntil`).
    public var status: String
    public var createdAt: Date
    public var retiredAt: Date?
    public var publishUntil: Date?

    public init(
        kid: String, algorithm: String, privateKey: [UInt8], encryption: String, publicJWK: String,
        status: String, createdAt: Date, retiredAt: Date? = nil, publishUntil: Date? = nil
    ) {
        self.kid = kid
        self.algorithm = algorithm
        self.privateKey = privateKey
        self.encryption = encryption
        self.publicJWK = publicJWK
        self.status = status
        self.createdAt = createdAt
        self.retiredAt = retiredAt
        self.publishUntil = publishUntil
    }
}

/// Token-signing keys.
public protocol SigningKeyStore: Sendable {
    /// The active key and every retired key still published at `now`, newest first.
    func signingKeys(publishedAt now: Date) async throws(StoreError) -> [SigningKeyRecord]
    /// Every key ever stored, newest first (for `gatehouse keys list`).
    func allSigningKeys() async throws(StoreError) -> [SigningKeyRecord]
    /// `.uniqueViolation` when another active key exists already.
    func insertSigningKey(_ key: SigningKeyRecord) async throws(StoreError)
    /// Retires the active key; false when `kid` was not the active key.
    func retireSigningKey(kid: String, at date: Date, publishUntil: Date) async throws(StoreError) -> Bool
    /// Replaces a key's stored private key and encryption, e.g. when encryption is turned on.
    func updateSigningKeyMaterial(kid: String, privateKey: [UInt8], encryption: String) async throws(StoreError)
}

/// The mail outbox: the queue the mail worker delivers from.
public protocol OutboxStore: Sendable {
    /// Queues a mail; call it inside the transaction of what caused it.
    func enqueueMail(_ message: OutboxMessage) async throws(StoreError)
    /// Leases up to `limit` due mails for `leaseSeconds`, so that several nodes never send one
    /// mail twice at once; a crashed node's lease simply runs out.
    func claimDueMail(now: Date, limit: Int, leaseSeconds: Int) async throws(StoreError) -> [OutboxMessage]
    /// Marks a mail delivered; `keepBodies` false clears its bodies (and the tokens in them).
    func markMailSent(_ id: UUID, at date: Date, keepBodies: Bool) async throws(StoreError)
    /// Records a failed attempt: retried at `nextAttempt`, or failed for good when it is `nil`.
    func markMailFailed(_ id: UUID, error: String, nextAttempt: Date?, at date: Date) async throws(StoreError)
    /// Newest first.
    func recentMail(limit: Int) async throws(StoreError) -> [OutboxMessage]
    /// Fills in a queued request's mail (see `OutboxMessage.isRequest`).
    func composeMail(_ id: UUID, recipient: String, subject: String, text: String, html: String?, linkHost: String?) async throws(StoreError)
    /// Ends a queued request that has nothing to send (no such account); forgets the address.
    func dropMail(_ id: UUID, reason: String, at date: Date) async throws(StoreError)
}

/// The links Gatehouse mails (verification, password reset, magic link), stored as hashes.
public protocol EmailTokenStore: Sendable {
    func insertEmailToken(_ token: EmailToken) async throws(StoreError)
    func emailToken(hash: [UInt8]) async throws(StoreError) -> EmailToken?
    /// Marks a token used; false when it was used already (a concurrent use won).
    func useEmailToken(hash: [UInt8], at date: Date) async throws(StoreError) -> Bool
    /// Marks every unused token of `purpose` for a user, or for an address, used: a newer link
    /// replaces them, a password change ends reset links.
    func retireEmailTokens(userID: UserID?, normalizedEmail: String?, purpose: EmailTokenPurpose, at date: Date) async throws(StoreError)
    /// The newest token of `purpose` for an address, used or not.
    func newestEmailToken(normalizedEmail: String, purpose: EmailTokenPurpose) async throws(StoreError) -> EmailToken?
    /// Reserves one code attempt before the code is compared, in one conditional update: only
    /// while the token is unused, unexpired at `now` and below `limit` attempts. Returns the
    /// attempts counted so far, this one included, or nil when no attempt is left.
    func reserveCodeAttempt(hash: [UInt8], limit: Int, now: Date) async throws(StoreError) -> Int?
    /// When a user's tokens of `purpose` were made, since `date` (for resend limits).
    func emailTokenTimes(userID: UserID, purpose: EmailTokenPurpose, since date: Date) async throws(StoreError) -> [Date]
}

/// Durable background work (Apple token exchange and revocation, …): leased like the outbox.
public protocol JobStore: Sendable {
    func enqueueJob(_ job: Job) async throws(StoreError)
    /// Leases the next due job for `leaseSeconds`.
    func claimDueJob(now: Date, leaseSeconds: Int) async throws(StoreError) -> Job?
    func completeJob(_ id: UUID) async throws(StoreError)
    /// Records a failed attempt: retried at `nextAttempt`, or failed for good when it is `nil`.
    func failJob(_ id: UUID, error: String, nextAttempt: Date?) async throws(StoreError)
    /// A provider's own token for a user's identity (sealed), and setting it.
    func providerToken(of userID: UserID, provider: Provider) async throws(StoreError) -> (value: [UInt8], encryption: String)?
    func setProviderToken(userID: UserID, provider: Provider, subject: String, value: [UInt8], encryption: String) async throws(StoreError)
}

/// The account's own data beyond sign-in: profile, anonymous names, idempotency keys, the
/// event feed, and what an export needs.
public protocol AccountStore: Sendable {
    /// Replaces the profile fields; `.uniqueViolation` naming `handle` when the handle is taken.
    func updateProfile(
        _ id: UserID, displayName: String?, handle: String?, avatarURL: String?, onboardingComplete: Bool, now: Date
    ) async throws(StoreError)
    func setNameSuggestions(_ id: UserID, _ names: [String]?, now: Date) async throws(StoreError)
    /// An anonymous account that gained a real identity.
    func markUpgraded(_ id: UserID, now: Date) async throws(StoreError)
    func setPlanOverride(_ id: UserID, _ plan: String?, now: Date) async throws(StoreError)
    func user(handle: String) async throws(StoreError) -> User?
    /// Anonymous accounts created before `before` with no session active since then.
    func staleAnonymousUsers(before: Date, limit: Int) async throws(StoreError) -> [UserID]

    /// The user an idempotency key (hashed) made in `scope` since `since`, and the session that
    /// request opened.
    func idempotentUser(scope: String, keyHash: [UInt8], since: Date) async throws(StoreError) -> (user: UserID, session: SessionID?)?
    /// `.uniqueViolation` when the key was stored meanwhile.
    func insertIdempotencyKey(scope: String, keyHash: [UInt8], userID: UserID, sessionID: SessionID, at date: Date) async throws(StoreError)
    /// Forgets every idempotency key of the account (an upgrade, a global logout or a new
    /// password ends what a replay could reach).
    func deleteIdempotencyKeys(of userID: UserID) async throws(StoreError)
    func idempotencyKeyTimes(of userID: UserID) async throws(StoreError) -> [Date]

    /// Appends to the feed; inside a transaction, feed order is commit order.
    func insertEvent(_ event: DomainEvent) async throws(StoreError)
    /// Gives a user the analytics a device sent before it had an account.
    func attachAnonymousEvents(_ anonymousID: String, to userID: UserID) async throws(StoreError)
    /// Oldest first, after the cursor `after`; optionally one user's.
    func events(after: Int64?, userID: UserID?, limit: Int) async throws(StoreError) -> [DomainEvent]
    /// The user's mailed links, for an export (hashes left out by the caller).
    func emailTokens(of userID: UserID) async throws(StoreError) -> [EmailToken]
}

/// One spend of a credit, as the ledger keeps it.
public struct CreditSpend: Sendable, Equatable {
    public var id: UUID
    public var userID: UserID
    public var credit: String
    public var amount: Int
    public var action: String
    public var subject: String?
    public var idempotencyKey: String
    public var periodStart: Date
    public var createdAt: Date

    public init(
        id: UUID = UUID(), userID: UserID, credit: String, amount: Int = 1, action: String, subject: String?, idempotencyKey: String,
        periodStart: Date, createdAt: Date
    ) {
        self.id = id
        self.userID = userID
        self.credit = credit
        self.amount = amount
        self.action = action
        self.subject = subject
        self.idempotencyKey = idempotencyKey
        self.periodStart = periodStart
        self.createdAt = createdAt
    }
}

/// Trials and the credit ledger.
public protocol EntitlementStore: Sendable {
    /// Starts the account's one trial; false when it had one already.
    func startTrial(_ id: UserID, at date: Date) async throws(StoreError) -> Bool
    /// Credits spent per name since `periodStart`.
    func creditsSpent(of userID: UserID, since periodStart: Date) async throws(StoreError) -> [String: Int]
    /// The spend recorded under an idempotency key, if any.
    func creditSpend(of userID: UserID, idempotencyKey: String) async throws(StoreError) -> CreditSpend?
    /// `.uniqueViolation` when the idempotency key was used meanwhile.
    func insertCreditSpend(_ spend: CreditSpend) async throws(StoreError)
    /// Inside a transaction: holds the user's row until it ends, so one user's spends take turns
    /// (PostgreSQL row lock; SQLite's single writer already serialises them).
    func lockUser(_ id: UserID) async throws(StoreError)
    func creditLedger(of userID: UserID) async throws(StoreError) -> [CreditSpend]
}

/// One use of a usage meter, kept under its idempotency key so a retry answers the same use.
public struct UsageRecord: Sendable, Equatable {
    public var userID: UserID
    public var meter: String
    public var amount: Int
    public var idempotencyKey: String
    public var periodStart: Date
    public var createdAt: Date

    public init(userID: UserID, meter: String, amount: Int, idempotencyKey: String, periodStart: Date, createdAt: Date) {
        self.userID = userID
        self.meter = meter
        self.amount = amount
        self.idempotencyKey = idempotencyKey
        self.periodStart = periodStart
        self.createdAt = createdAt
    }
}

/// Usage meters the app's backend counts in Gatehouse (`POST /v1/usage/{meter}`).
public protocol UsageStore: Sendable {
    /// The use recorded under an idempotency key, if any.
    func usageRecord(of userID: UserID, meter: String, idempotencyKey: String) async throws(StoreError) -> UsageRecord?
    /// The count of `meter` in the period starting at `periodStart` (0 when nothing was used).
    func usage(of userID: UserID, meter: String, periodStart: Date) async throws(StoreError) -> Int
    /// Inside a transaction: records the use and adds its amount to the period's count in one
    /// conditional statement, unless that would take the count past `limit` (`nil`: no limit).
    /// Answers the new count, or `nil` when the limit refused it (the caller rolls back).
    /// `.uniqueViolation` when the idempotency key was used meanwhile.
    func addUsage(_ record: UsageRecord, limit: Int?) async throws(StoreError) -> Int?
    /// Every use recorded for the user, oldest first (the export).
    func usageRecords(of userID: UserID) async throws(StoreError) -> [UsageRecord]
    /// Every meter's count per period for the user: (meter, period start, used), oldest first.
    func usageCounts(of userID: UserID) async throws(StoreError) -> [(meter: String, periodStart: Date, used: Int)]
    /// Deletes uses and counts of periods that started before `before`.
    func purgeUsage(before: Date) async throws(StoreError) -> Int
}

/// App Store subscriptions and the notifications already applied.
public protocol SubscriptionStore: Sendable {
    /// With `forUpdate`, inside a transaction: holds the row until it ends (PostgreSQL).
    func subscription(originalTransactionID: String, forUpdate: Bool) async throws(StoreError) -> SubscriptionRecord?
    func subscriptions(of userID: UserID) async throws(StoreError) -> [SubscriptionRecord]
    /// Inserts the record or replaces the stored one, unless the stored one was signed later.
    func saveSubscription(_ record: SubscriptionRecord) async throws(StoreError)
    /// Gives `from`'s subscriptions to `to` (an anonymous account merged into another).
    func moveSubscriptions(from: UserID, to: UserID) async throws(StoreError)
    /// Notes a notification as applied; false when it had been already.
    func recordNotification(uuid: String, type: String, at date: Date) async throws(StoreError) -> Bool
}

/// Ids of signed messages from outside that may be used once (Apple's server-to-server
/// events by `jti`), kept until they could no longer be accepted anyway.
public protocol ReplayStore: Sendable {
    /// Records `id` from `issuer` by a unique key; false when it was recorded before.
    func recordMessageID(issuer: String, id: String, keepUntil: Date) async throws(StoreError) -> Bool
}

/// What a retention sweep removed.
public struct PurgeCounts: Sendable, Equatable {
    public var auditRows = 0
    public var sessions = 0
    public var sessionsCleared = 0
    public var rateLimitWindows = 0
    public var notifications = 0
    /// Single-use message ids past the time they could be accepted (and two days more).
    public var messageIDs = 0
    /// Usage meter rows of periods that started over 62 days ago (two months: a monthly
    /// meter's current and previous periods stay).
    public var usageRows = 0
    public init() {}
}

/// Deleting what is kept only for a while (decision 11).
public protocol RetentionStore: Sendable {
    /// Audit rows older than `cutoff`; ended sessions (revoked, or idle since before
    /// `idleBefore`) last active before `cutoff`; the client address and user agent of live
    /// sessions created before `cutoff`; rate-limit windows that started before `windowsBefore`,
    /// and single-use message ids kept until before it; App Store notification ids received
    /// before `notificationsBefore`.
    func purge(cutoff: Date, idleBefore: Date, windowsBefore: Date, notificationsBefore: Date) async throws(StoreError) -> PurgeCounts
}

/// All of Gatehouse's storage, behind one protocol with a SQLite and a PostgreSQL
/// implementation that pass the same contract suite.
public protocol GatehouseStore: UserStore, SigningKeyStore, SessionStore, ThrottleStore, AuditStore, SecretStore, OutboxStore,
    EmailTokenStore, JobStore, AccountStore, EntitlementStore, SubscriptionStore, ReplayStore, RetentionStore, UsageStore
{
    var dialect: SQLDialect { get }
    /// Runs `body` in one transaction against a store bound to it.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any GatehouseStore) async throws -> T) async throws -> T
    /// Throws `.unavailable` when the database does not answer promptly.
    func ping() async throws(StoreError)
}
