import Foundation
import GatehouseCore

/// Which accounts an operator is looking for (the admin console's users page).
public struct UserFilter: Sendable, Equatable {
    /// The start of the normalised email or handle, the exact id, or a provider's exact subject.
    public var search: String?
    /// Only anonymous accounts (`true`) or only named ones (`false`).
    public var anonymous: Bool?
    public var disabledOnly: Bool
    /// Only accounts with an address that was never verified.
    public var unverifiedOnly: Bool
    /// From how many accounts sharing the search's prefix (by address or by handle) the search
    /// first walks the newest accounts, at most ``walkAtMost`` of them, testing each, instead of
    /// ordering every match (the store's search says why).
    public var denseFrom: Int
    /// How many accounts that walk tests at most before it orders the matches instead.
    public var walkAtMost: Int

    /// The default of ``denseFrom``: below it the matches are ordered, reading fewer than 10,000
    /// index entries.
    public static let denseFrom = 5_000
    /// The default of ``walkAtMost``: a page of 50 fills within 5,000 accounts when 1 % of them
    /// match.
    public static let walkAtMost = 5_000

    public init(search: String? = nil, anonymous: Bool? = nil, disabledOnly: Bool = false, unverifiedOnly: Bool = false) {
        self.search = search
        self.anonymous = anonymous
        self.disabledOnly = disabledOnly
        self.unverifiedOnly = unverifiedOnly
        self.denseFrom = Self.denseFrom
        self.walkAtMost = Self.walkAtMost
    }
}

/// One UTC day of activity: what the overview charts draw.
public struct DailyActivity: Sendable, Equatable {
    /// Days since 1970-01-01 (UTC).
    public var day: Int64
    /// Accounts created.
    public var signUps = 0
    /// Sessions opened, every way in (a sign-up's first session included).
    public var signIns = 0
    /// Refused sign-ins: password, passkey and second-factor attempts that failed or met a lock.
    public var failures = 0
    public var lockouts = 0
    /// Distinct accounts whose sessions were opened or refreshed that day.
    public var activeUsers = 0

    public init(day: Int64) { self.day = day }
}

/// The outbox by state.
public struct MailCounts: Sendable, Equatable {
    public var pending = 0
    public var sent = 0
    public var failed = 0
    public var dropped = 0
    /// Mail that needed more than one attempt (sent, failed or still pending).
    public var retried = 0
    public init() {}
}

/// Background jobs that ran out of attempts (kept, payload emptied, for the operator to see).
public struct FailedJobs: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var id: UUID
        public var kind: String
        public var attempts: Int
        public var lastError: String
        public var createdAt: Date
    }
    public var total = 0
    /// The newest first.
    public var latest: [Entry] = []
    public init() {}
}

/// What the admin console reads beyond the other stores: filtered user pages, per-day
/// activity, the outbox by state, filtered audit and event pages.
public protocol ConsoleStore: Sendable {
    /// Newest first, as `users(search:before:limit:)`, narrowed by `filter`.
    func users(matching filter: UserFilter, before: RowCursor?, limit: Int) async throws(StoreError) -> [User]
    /// One entry per day from `firstDay` through `lastDay` (days since 1970-01-01, UTC), zeros included.
    func dailyActivity(from firstDay: Int64, through lastDay: Int64) async throws(StoreError) -> [DailyActivity]
    func mailCounts() async throws(StoreError) -> MailCounts
    /// How many jobs were given up, and the newest `limit` of them.
    func failedJobs(limit: Int) async throws(StoreError) -> FailedJobs
    /// Newest first, narrowed to one event name when `event` is set.
    func auditEvents(userID: UserID?, event: String?, before: Int64?, limit: Int) async throws(StoreError) -> [AuditEvent]
    /// Oldest first after `after`, narrowed to one type when `type` is set.
    func events(after: Int64?, type: String?, userID: UserID?, limit: Int) async throws(StoreError) -> [DomainEvent]
    /// A console session begins (`hash`: SHA-256 of its nonce); ended ones are dropped.
    func insertConsoleSession(hash: [UInt8], expiresAt: Date, now: Date) async throws(StoreError)
    /// Whether the console session is still on (signed in, not signed out, not expired).
    func consoleSessionIsLive(hash: [UInt8], now: Date) async throws(StoreError) -> Bool
    /// Signs the console session out.
    func deleteConsoleSession(hash: [UInt8]) async throws(StoreError)
}
