import Foundation
import GatehouseCore

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
        id: UUID? = nil, userID: UserID, credit: String, amount: Int = 1, action: String, subject: String?, idempotencyKey: String,
        periodStart: Date, createdAt: Date
    ) {
        self.id = id ?? SecureRandom.timeOrderedUUID(at: createdAt)
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
    /// `.uniqueViolation` (`.creditSpend`) when the idempotency key was used meanwhile.
    func insertCreditSpend(_ spend: CreditSpend) async throws(StoreError)
    /// Every row of a user's ledger, oldest first (the account's export).
    func creditLedger(of userID: UserID) async throws(StoreError) -> [CreditSpend]
    /// One page of it, newest first: at most `limit` (1 to 1,000) rows created before `before`.
    func creditLedger(of userID: UserID, before: RowCursor?, limit: Int) async throws(StoreError) -> [CreditSpend]
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
    /// The use recorded under an idempotency key in the period starting at `periodStart`, if any
    /// (a key is a use's within its period only).
    func usageRecord(of userID: UserID, meter: String, periodStart: Date, idempotencyKey: String) async throws(StoreError) -> UsageRecord?
    /// The count of `meter` in the period starting at `periodStart` (0 when nothing was used).
    func usage(of userID: UserID, meter: String, periodStart: Date) async throws(StoreError) -> Int
    /// Inside a transaction: records the use and adds its amount to the period's count in one
    /// conditional statement, unless that would take the count past `limit` (`nil`: no limit).
    /// Answers the new count, or `nil` when the limit refused it (the caller rolls back).
    /// `.uniqueViolation` (`.usageRecord`) when the idempotency key was used meanwhile.
    func addUsage(_ record: UsageRecord, limit: Int?) async throws(StoreError) -> Int?
    /// Every use recorded for the user, oldest first (the export).
    func usageRecords(of userID: UserID) async throws(StoreError) -> [UsageRecord]
    /// Every meter's count per period for the user: (meter, period start, used), oldest first.
    func usageCounts(of userID: UserID) async throws(StoreError) -> [(meter: String, periodStart: Date, used: Int)]
    /// Deletes uses and counts of periods that started before `before`.
    func purgeUsage(before: Date) async throws(StoreError) -> Int
}

/// App Store subscriptions and the notifications already applied.
public protocol AppStoreSubscriptionStore: Sendable {
    /// With `forUpdate`, inside a transaction: holds the row until it ends (PostgreSQL).
    func subscription(originalTransactionID: String, forUpdate: Bool) async throws(StoreError) -> SubscriptionRecord?
    func subscriptions(of userID: UserID) async throws(StoreError) -> [SubscriptionRecord]
    /// Inserts the record or replaces the stored one, unless the stored one was signed later,
    /// in one statement. The original transaction id is the key: a stored owner is never
    /// replaced (an unowned row is adopted). Answers the owner as stored afterwards.
    @discardableResult
    func saveSubscription(_ record: SubscriptionRecord) async throws(StoreError) -> UserID?
    /// Gives `from`'s subscriptions to `to` (an anonymous account merged into another).
    func moveSubscriptions(from: UserID, to: UserID) async throws(StoreError)
}

/// Ids of signed messages from outside that may be used once (Apple's server-to-server
/// events by `jti`), kept until they could no longer be accepted anyway.
public protocol ReplayStore: Sendable {
    /// Records `id` from `issuer` by a unique key; false when it was recorded before.
    func recordMessageID(issuer: String, id: String, keepUntil: Date) async throws(StoreError) -> Bool
}
