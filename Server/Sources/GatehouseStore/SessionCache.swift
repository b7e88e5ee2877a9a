import Foundation
import GatehouseCore
import Synchronization

/// A node's short-lived copy of the sessions (and their accounts) that access tokens name, and
/// of what the entitlement snapshot reads of each account (``AccountFacts``: its identities,
/// plan ledger and this period's credits), so that a token-authenticated read (`GET /v1/me`,
/// `POST /v1/entitlements/check`) does not ask the database each time.
///
/// A copy is served only while two things hold, which together bound how stale it can be:
/// - **Changes are being heard.** PostgreSQL announces every change to a session or an account
///   when it commits (migration 16's triggers, channel ``channel``); the node's listener
///   (`PostgresDatabase.feedSessionChanges`) drops the copies it names. The listener also sends
///   itself a heartbeat every ``heartbeatInterval``; PostgreSQL delivers announcements in commit
///   order, so when a heartbeat comes back, every change committed before it was sent has been
///   applied. Copies are served only while the newest returned heartbeat was sent less than
///   ``stalenessBound`` ago: a change committed longer ago than that has been applied, whatever
///   happened to the connection. On SQLite the same role is played by a poll of the writer's
///   `PRAGMA data_version` (`SQLiteDatabase.feedChanges`), which moves when another process (the
///   CLI) has committed: every copy goes then. Without either, nothing is served.
/// - **The copy is young.** A copy older than ``timeToLive`` is read again (a safety net for
///   a change made where no trigger fires).
///
/// Changes this node makes itself are dropped when their transaction commits (`SQLStore`), so
/// a client sees its own sign-out at once on the node that took it. A read that began before a
/// drop is not kept (the epoch check), so a copy read just before a change cannot outlive it.
public final class SessionCache: Sendable {
    /// The channel the triggers announce on.
    public static let channel = "gatehouse_sessions"

    public struct Settings: Sendable {
        /// How long a copy is served at most.
        public var timeToLive: Duration
        /// How often the listener sends itself a heartbeat.
        public var heartbeatInterval: Duration
        /// Copies are served only while the newest returned heartbeat is younger than this.
        public var stalenessBound: Duration
        /// Copies held at most; past it, new reads are not kept until old ones expire.
        public var capacity: Int

        public init(
            timeToLive: Duration = .seconds(5), heartbeatInterval: Duration = .milliseconds(200),
            stalenessBound: Duration = .milliseconds(500), capacity: Int = 20_000
        ) {
            self.timeToLive = timeToLive
            self.heartbeatInterval = heartbeatInterval
            self.stalenessBound = stalenessBound
            self.capacity = capacity
        }
    }

    /// What a change announcement names.
    public enum Change: Sendable, Equatable {
        case session(SessionID)
        case user(UserID)
        /// A row an account's ``AccountFacts`` come from: those facts go, its sessions stay.
        case facts(UserID)
        /// Many rows at once (the retention sweep): every copy goes.
        case everything
    }

    /// Taken before a database read whose result may be kept; see ``keep(_:_:ticket:)``.
    public struct Ticket: Sendable {
        fileprivate let epoch: UInt64
    }

    // Classes, so that a look-up takes a reference, not a copy of every reference a session, an
    // account or its facts hold (each retained and released again: 45 a `/v1/me`, issue 61 step 19).
    // Only ever read or changed under `state`'s lock.
    fileprivate final class Entry {
        let session: Session
        let user: User
        let storedAt: ContinuousClock.Instant

        init(session: Session, user: User, storedAt: ContinuousClock.Instant) {
            self.session = session
            self.user = user
            self.storedAt = storedAt
        }
    }

    fileprivate final class FactsEntry {
        var facts: AccountFacts
        let storedAt: ContinuousClock.Instant

        init(facts: AccountFacts, storedAt: ContinuousClock.Instant) {
            self.facts = facts
            self.storedAt = storedAt
        }
    }

    fileprivate struct State {
        var entries: [SessionID: Entry] = [:]
        /// What the snapshot reads of each account; dropped with the account (`.user`).
        var facts: [UserID: FactsEntry] = [:]
        var byUser: [UserID: Set<SessionID>] = [:]
        /// Moves on every drop; a read that began under an older epoch is not kept.
        var epoch: UInt64 = 0
        /// When the newest heartbeat that came back was sent; nil while none has (not listening).
        var heardThrough: ContinuousClock.Instant?
        /// Heartbeats sent and not yet back, by number.
        var pending: [UInt64: ContinuousClock.Instant] = [:]
        var nextHeartbeat: UInt64 = 0
        var hits = 0
        var misses = 0
    }

    public let settings: Settings
    /// Tells this node's heartbeats from other nodes' on the shared channel.
    let node = UUIDText.lowercase(SecureRandom.uuid())
    private let state = Mutex(State())
    /// The monotonic clock the bounds are measured on (a test's own clock in tests).
    private let now: @Sendable () -> ContinuousClock.Instant

    public init(settings: Settings = Settings(), now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.settings = settings
        self.now = now
    }

    // MARK: Reading

    /// The kept copy of session `id` and its account, if one may be served now.
    public func lookup(_ id: SessionID) -> (session: Session, user: User)? {
        let now = self.now()
        return state.withLock { state in
            guard let heard = state.heardThrough, now - heard < settings.stalenessBound,
                let entry = state.entries[id], now - entry.storedAt < settings.timeToLive
            else {
                state.misses += 1
                return nil
            }
            state.hits += 1
            return (entry.session, entry.user)
        }
    }

    /// Take before reading a session from the database; pass to ``keep(_:_:ticket:)``.
    public func ticket() -> Ticket {
        state.withLock { Ticket(epoch: $0.epoch) }
    }

    /// Keeps a copy read from the database, unless something was dropped since `ticket` was
    /// taken (the copy may predate that change) or the cache is not listening.
    public func keep(_ session: Session, _ user: User, ticket: Ticket) {
        let now = self.now()
        state.withLock { state in
            guard state.heardThrough != nil, state.epoch == ticket.epoch else { return }
            if state.entries[session.id] == nil, state.entries.count >= settings.capacity {
                state.removeExpired(before: now - settings.timeToLive)
                guard state.entries.count < settings.capacity else { return }
            }
            state.entries[session.id] = Entry(session: session, user: user, storedAt: now)
            state.byUser[user.id, default: []].insert(session.id)
        }
    }

    /// What `read` takes from the kept facts of account `id`, if they may be served now (the same
    /// bounds as a session). Read under the lock, so that only the fact asked for is copied out,
    /// not every fact's array (a `/v1/me` asks for six: issue 61, step 23).
    public func fact<T>(of id: UserID, _ read: (AccountFacts) -> T?) -> T? {
        let now = self.now()
        return state.withLock { state in
            guard let heard = state.heardThrough, now - heard < settings.stalenessBound,
                let entry = state.facts[id], now - entry.storedAt < settings.timeToLive
            else { return nil }
            return read(entry.facts)
        }
    }

    /// The kept facts of account `id`, if they may be served now.
    public func facts(of id: UserID) -> AccountFacts? { fact(of: id) { $0 } }

    /// Keeps one fact of account `id` read from the database (``AccountFacts`` is filled fact by
    /// fact, each read keeping its own), unless something was dropped since `ticket` was taken.
    /// The entry's age is its oldest fact's: a new fact does not make the others younger.
    public func keepFact(of id: UserID, ticket: Ticket, _ fill: (inout AccountFacts) -> Void) {
        let now = self.now()
        state.withLock { state in
            guard state.heardThrough != nil, state.epoch == ticket.epoch else { return }
            if let entry = state.facts[id], now - entry.storedAt < settings.timeToLive {
                fill(&entry.facts)
                return
            }
            if state.facts[id] == nil, state.facts.count >= settings.capacity {
                state.removeExpired(before: now - settings.timeToLive)
                guard state.facts.count < settings.capacity else { return }
            }
            var facts = AccountFacts()
            fill(&facts)
            state.facts[id] = FactsEntry(facts: facts, storedAt: now)
        }
    }

    // MARK: Dropping

    /// Drops the copies `change` names.
    public func drop(_ change: Change) {
        state.withLock { state in
            state.epoch &+= 1
            switch change {
            case .session(let id):
                state.remove(id)
            case .user(let id):
                for session in state.byUser[id] ?? [] { state.remove(session) }
                state.facts[id] = nil
            case .facts(let id):
                state.facts[id] = nil
            case .everything:
                state.removeAll()
            }
        }
    }

    // MARK: The listener's side

    /// A heartbeat's payload, to send on ``channel``; its sending time is noted.
    func heartbeat() -> String {
        let now = self.now()
        let number = state.withLock { state in
            let number = state.nextHeartbeat
            state.nextHeartbeat += 1
            state.pending[number] = now
            // Heartbeats that never came back (a pooler that does not carry LISTEN) are forgotten.
            if state.pending.count > 64 { state.pending = state.pending.filter { $0.key + 64 > number } }
            return number
        }
        return "h:\(node):\(number)"
    }

    /// Applies one announcement from ``channel``: a change, or a heartbeat (this node's moves
    /// ``heardThrough``; other nodes' are ignored). True when it is the first of this node's
    /// heartbeats back since the listener (re)started: copies may be served from then on.
    @discardableResult
    func apply(_ payload: String) -> Bool {
        if payload.hasPrefix("s:"), let id = SessionID(String(payload.dropFirst(2))) {
            drop(.session(id))
        } else if payload.hasPrefix("u:"), let id = UserID(String(payload.dropFirst(2))) {
            drop(.user(id))
        } else if payload.hasPrefix("f:"), let id = UserID(String(payload.dropFirst(2))) {
            drop(.facts(id))
        } else if payload.hasPrefix("h:") {
            let parts = payload.split(separator: ":")
            guard parts.count == 3, parts[1] == node, let number = UInt64(parts[2]) else { return false }
            return state.withLock { state in
                guard let sent = state.pending[number] else { return false }
                state.pending = state.pending.filter { $0.key > number }
                let first = state.heardThrough == nil
                state.heardThrough = max(state.heardThrough ?? sent, sent)
                return first
            }
        } else {
            // Not a form this version knows: drop everything rather than miss a change.
            drop(.everything)
        }
        return false
    }

    /// SQLite's poll (`SQLiteDatabase.feedChanges`): every change committed before `sent` has been
    /// applied (dropped), so copies may be served for ``Settings/stalenessBound`` after it.
    func heard(through sent: ContinuousClock.Instant) {
        state.withLock { state in state.heardThrough = max(state.heardThrough ?? sent, sent) }
    }

    /// The instant on this cache's clock, for ``heard(through:)``.
    var instant: ContinuousClock.Instant { now() }

    /// The listener is (re)connected or lost: nothing is served until a heartbeat sent on the
    /// new connection comes back, and every copy goes (changes may have been missed).
    func restart() {
        state.withLock { state in
            state.epoch &+= 1
            state.removeAll()
            state.pending.removeAll()
            state.heardThrough = nil
        }
    }

    /// Copies served and reads that went to the database, since start.
    public var counts: (hits: Int, misses: Int, held: Int) {
        state.withLock { ($0.hits, $0.misses, $0.entries.count) }
    }
}

extension SessionCache.State {
    fileprivate mutating func remove(_ id: SessionID) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        byUser[entry.user.id]?.remove(id)
        if byUser[entry.user.id]?.isEmpty == true { byUser[entry.user.id] = nil }
    }

    fileprivate mutating func removeAll() {
        entries.removeAll()
        byUser.removeAll()
        facts.removeAll()
    }

    fileprivate mutating func removeExpired(before cutoff: ContinuousClock.Instant) {
        for (id, entry) in entries where entry.storedAt < cutoff { remove(id) }
        for (id, entry) in facts where entry.storedAt < cutoff { facts[id] = nil }
    }
}

/// What the entitlement snapshot and `GET /v1/me` read of one account beside its row, as a
/// node's ``SessionCache`` keeps it: each fact is nil until a read outside a transaction has kept
/// it. Every write to these tables drops the account's facts (`SQLStore.changed(.facts(_:))`, and
/// PostgreSQL's triggers for every node); a transaction never reads from here.
public struct AccountFacts: Sendable {
    public var identities: [Identity]?
    public var subscriptions: [SubscriptionRecord]?
    public var stripeSubscriptions: [StripeSubscriptionRecord]?
    public var googlePlayPurchases: [GooglePlaySubscriptionRecord]?
    public var grants: [PlanGrant]?
    /// `creditsSpent(of:since:)`, for the period that began at `since` only.
    public var credits: (since: Date, spent: [String: Int])?

    public init() {}
}
