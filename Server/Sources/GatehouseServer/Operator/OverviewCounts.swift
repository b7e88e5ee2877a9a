import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Logging
import ServiceLifecycle
import Synchronization

/// The console overview's counts over a month of rows (sign-ups, sign-ins, failures, lockouts,
/// active accounts per day; the plan mix and trial conversions of the newest accounts). They
/// read millions of rows on a large database (15 s at a million accounts, BENCHMARKS.md issue
/// 65 step 4), so they are counted here, in the background on this node, and the page shows the
/// last count with its time. A page that finds no count, or one older than `freshFor`, asks for
/// one; "Count again" asks at once. One count runs at a time, and nothing is counted while
/// nobody looks.
final class OverviewCounts: PeriodicSweep {
    struct Counted: Sendable {
        var days: [DailyActivity]
        /// Accounts by plan state among the newest `sampled`.
        var planMix: [(state: String, count: Int)]
        var sampled: Int
        /// Of the sampled accounts: those that started a server trial, and those of them now paying.
        var trialsStarted: Int
        var trialsConverted: Int
        /// When the count began: it counts what was there then.
        var countedAt: Date
    }

    /// What a page sees: the last count, and when the count under way (if any) was asked for.
    struct Seen: Sendable {
        var counted: Counted?
        var countingSince: Date?
    }

    /// A count this old is counted again when a page is opened.
    static let freshFor: TimeInterval = 600

    let store: ConsoleService.Stores
    let engine: EntitlementEngine
    let clock: any WallClock
    let logger: Logger
    // The loop's own poll finds nothing asked and does nothing; pages wake it.
    let loop = WakeLoop(pollInterval: .seconds(3_600))
    private let state = Mutex<(seen: Seen, asked: Bool)>((Seen(), false))

    init(store: ConsoleService.Stores, engine: EntitlementEngine, clock: any WallClock, logger: Logger) {
        self.store = store
        self.engine = engine
        self.clock = clock
        self.logger = logger
    }

    /// The counts to show now. Asks for a count when there is none or it is stale, or when
    /// `again`, unless one is already under way.
    func seen(again: Bool = false) -> Seen {
        let now = clock.now
        let (seen, ask) = state.withLock { current -> (Seen, Bool) in
            let stale = current.seen.counted.map { now.timeIntervalSince($0.countedAt) >= Self.freshFor } ?? true
            let ask = current.seen.countingSince == nil && (again || stale)
            if ask { current = (Seen(counted: current.seen.counted, countingSince: now), true) }
            return (current.seen, ask)
        }
        if ask { loop.wake() }
        return seen
    }

    func sweepOnce() async {
        guard state.withLock({ current in defer { current.asked = false }; return current.asked }) else { return }
        let started = ContinuousClock.now
        do {
            let counted = try await count()
            state.withLock { $0.seen = Seen(counted: counted, countingSince: nil) }
            logger.info("console overview counted", metadata: ["took": "\(ContinuousClock.now - started)"])
        } catch {
            // The last count stays; the next page asks again.
            state.withLock { $0.seen.countingSince = nil }
            logger.backgroundWork(.overviewCount, endedBy: error)
        }
    }

    /// The month's days, and the plan states of the newest `ConsoleService.planScanLimit`
    /// accounts, 200 at a time with their ledgers read together.
    func count() async throws -> Counted {
        let now = clock.now
        let today = now.unixSeconds / 86_400
        let days = try await store.dailyActivity(from: today - ConsoleService.overviewDays + 1, through: today)
        var mix: [String: Int] = [:]
        var sampled = 0, started = 0, converted = 0
        var cursor: RowCursor?
        while sampled < ConsoleService.planScanLimit {
            let page = try await store.users(matching: UserFilter(), before: cursor, limit: 200)
            let inputs = try await engine.storedInputs(for: page, in: store)
            for user in page {
                let state = engine.planState(inputs[user.id] ?? engine.input(for: user), at: now)
                mix[state, default: 0] += 1
                if user.trialStartedAt != nil {
                    started += 1
                    if state == PlanState.pro.rawValue || state == PlanState.proGrace.rawValue { converted += 1 }
                }
            }
            sampled += page.count
            guard page.count == 200, let last = page.last else { break }
            cursor = RowCursor(createdAt: last.createdAt.unixSeconds, id: last.id.description)
        }
        let order = PlanState.all.map(\.rawValue)
        let planMix = mix.sorted { (order.firstIndex(of: $0.key) ?? 99, $0.key) < (order.firstIndex(of: $1.key) ?? 99, $1.key) }
            .map { (state: $0.key, count: $0.value) }
        return Counted(days: days, planMix: planMix, sampled: sampled, trialsStarted: started, trialsConverted: converted, countedAt: now)
    }
}
