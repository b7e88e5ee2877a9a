import Foundation
import GatehouseCore
import GatehouseWire

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
    /// `.uniqueViolation` (`.activeSigningKey`) when another active key exists already.
    func insertSigningKey(_ key: SigningKeyRecord) async throws(StoreError)
    /// Retires the active key; false when `kid` was not the active key.
    func retireSigningKey(kid: String, at date: Date, publishUntil: Date) async throws(StoreError) -> Bool
    /// Replaces a key's stored private key and encryption, e.g. when encryption is turned on.
    func updateSigningKeyMaterial(kid: String, privateKey: [UInt8], encryption: String) async throws(StoreError)
}

/// Server-wide secrets (e.g. the refresh-token chain key), sealed like signing keys.
public protocol SecretStore: Sendable {
    func secret(named name: String) async throws(StoreError) -> (value: [UInt8], encryption: String)?
    /// `.uniqueViolation` (`.secret`) when another node stored it first.
    func insertSecret(named name: String, value: [UInt8], encryption: String, at date: Date) async throws(StoreError)
    func updateSecret(named name: String, value: [UInt8], encryption: String) async throws(StoreError)
}

/// The audit trail.
public protocol AuditStore: Sendable {
    func insertAudit(_ event: AuditEvent) async throws(StoreError)
    /// Newest first; optionally one user's; `before` is the sequence of the previous page's last event.
    func auditEvents(userID: UserID?, before: Int64?, limit: Int) async throws(StoreError) -> [AuditEvent]
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

/// What a retention sweep removed.
public struct PurgeCounts: Sendable, Equatable {
    public var auditRows = 0
    /// Events of the feed older than the cut-off.
    public var events = 0
    public var sessions = 0
    public var sessionsCleared = 0
    /// Rotated refresh tokens expired before the idle cut-off (`idleBefore`).
    public var refreshTokens = 0
    public var rateLimitWindows = 0
    public var notifications = 0
    /// Single-use message ids past the time they could be accepted (and two days more).
    public var messageIDs = 0
    /// SMS codes expired before the rate-limit windows' cut-off (they can no longer be tried).
    public var phoneCodes = 0
    /// The OpenID provider's one-time codes and browser sign-ins past their end (a used code is
    /// kept until the windows' cut-off, so a late second use still revokes what it issued).
    public var oauthRows = 0
    /// Usage meter rows of periods that started over 62 days ago (two months: a monthly
    /// meter's current and previous periods stay).
    public var usageRows = 0
    /// Mailed links and codes expired before the windows' cut-off.
    public var emailTokens = 0
    /// Sign-up replay keys made before the windows' cut-off (each answers for a day).
    public var idempotencyKeys = 0
    /// Outbox rows sent, failed or dropped before the audit cut-off.
    public var mail = 0
    /// Jobs given up before the audit cut-off.
    public var failedJobs = 0
    /// Passkey ceremonies never finished, once expired (`purgePasskeyChallenges`).
    public var passkeyChallenges = 0
    public var mfaChallenges = 0
    /// Second factors enrolled and never confirmed within the preset's time.
    public var unconfirmedFactors = 0
    /// SQLite pages given back to the file system after the sweep (`reclaimSpace`).
    public var pagesReleased = 0
    public init() {}
}

/// Deleting what is kept only for a while (decision 11).
public protocol RetentionStore: Sendable {
    /// Audit rows and events older than `cutoff`; ended sessions (revoked, or idle since before
    /// `idleBefore`) last active before `cutoff`; the client address and user agent of live
    /// sessions created before `cutoff`; mail no longer pending and jobs given up before `cutoff`;
    /// rate-limit windows that started before `windowsBefore`, and single-use message ids, SMS,
    /// OpenID and mailed codes and links, and sign-up replay keys past it; App Store notification and Stripe event
    /// ids received before `notificationsBefore`; rotated refresh tokens that expired before
    /// `idleBefore`.
    func purge(cutoff: Date, idleBefore: Date, windowsBefore: Date, notificationsBefore: Date) async throws(StoreError) -> PurgeCounts
    /// SQLite: gives up to `pages` free pages back to the file system (a database made with
    /// incremental vacuum on, as every new one is), a step at a time, and answers how many.
    /// PostgreSQL: nothing (its autovacuum makes the space reusable), 0.
    func reclaimSpace(pages: Int) async throws(StoreError) -> Int
    /// The rests housekeeping took between its batches since the database was opened.
    var housekeepingRests: HousekeepingRests { get }
}
