import GatehouseCore
import ServiceLifecycle
import Synchronization

/// Lends `count` slots (the indices of connections, say), each to one holder at a time: a taker
/// gets a free slot at once (the one given back last, whose connection's pages are warmest), or
/// waits for the first given back, in arrival order, suspended and not on a thread. With one slot
/// it is a fair, non-reentrant lock.
final class Lender: Sendable {
    private struct State {
        var free: [Int]
        var waiting: [CheckedContinuation<Int, Never>] = []
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(free: Array((0..<max(1, count)).reversed())))
    }

    func take() async -> Int {
        // A free slot is taken without a continuation.
        if let slot = state.withLock({ $0.free.popLast() }) { return slot }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            let slot = state.withLock { state -> Int? in
                if let slot = state.free.popLast() { return slot }
                state.waiting.append(continuation)
                return nil
            }
            if let slot { continuation.resume(returning: slot) }
        }
    }

    /// Gives `slot` back: straight to the taker that has waited longest, if any.
    func giveBack(_ slot: Int) {
        let next = state.withLock { state -> CheckedContinuation<Int, Never>? in
            if state.waiting.isEmpty {
                state.free.append(slot)
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume(returning: slot)
    }
}

/// Every time-out of work in flight, the one mechanism for them: a PostgreSQL lease's, a request
/// body's, a hook call's, an SMTP conversation's, a database probe's. Adding and removing one
/// is a dictionary write under a lock; one task (``tick()``, run as a service beside what uses
/// it, or with the PostgreSQL pool; ``shared`` runs its own while it holds any) looks for those
/// past their moment four times a second and runs them, so a time-out fires up to a quarter of a
/// second late. ``within(_:orThrow:_:)`` cancels the work and waits for it;
/// ``abandoning(_:orThrow:_:)`` answers at once and leaves work that ignores cancellation behind.
///
/// Not a sleeping task per time-out: a cancelled `Task.sleep` keeps its wake-up task and timer
/// until its deadline, so a node answering 9,000 queries a second with a ten-second time-out each
/// held about 40 MiB of them (heaptrack, issue 61).
public final class Deadlines: Service, Sendable {
    private struct Entry {
        let moment: ContinuousClock.Instant
        let expire: @Sendable () -> Void
    }
    private struct State {
        var next: UInt64 = 0
        var entries: [UInt64: Entry] = [:]
        /// ``shared`` only: a task is ticking.
        var ticking = false
    }
    private let state = Mutex(State())
    private let ticksItself: Bool

    /// Time-outs fired by whoever runs ``tick()`` (or ``run()``, as a service).
    public init() { ticksItself = false }

    init(ticksItself: Bool) { self.ticksItself = ticksItself }

    /// For work outside a server's or a pool's run (an SMTP conversation, a SQLite probe, a CLI
    /// command's): it starts a ticking task when it is given a time-out and none runs, and that
    /// task ends once no time-out is left.
    public static let shared = Deadlines(ticksItself: true)

    /// How often ``tick()`` looks.
    static let interval: Duration = .milliseconds(250)

    /// The time-outs not yet fired or removed (none once the work they guard is over).
    public var count: Int { state.withLock { $0.entries.count } }

    public func add(at moment: ContinuousClock.Instant, _ expire: @escaping @Sendable () -> Void) -> UInt64 {
        let (id, startTicking) = state.withLock { state -> (UInt64, Bool) in
            state.next += 1
            state.entries[state.next] = Entry(moment: moment, expire: expire)
            let start = ticksItself && !state.ticking
            if start { state.ticking = true }
            return (state.next, start)
        }
        if startTicking { Task.detached { await self.tickWhileHeld() } }
        return id
    }

    /// ``shared``'s ticking task: fires what is due until no time-out is left.
    private func tickWhileHeld() async {
        while true {
            try? await Task.sleep(for: Self.interval)
            fire()
            let idle = state.withLock { state -> Bool in
                if state.entries.isEmpty { state.ticking = false }
                return !state.ticking
            }
            if idle { return }
        }
    }

    /// Whether ``shared`` has a ticking task now (tests).
    var isTicking: Bool { state.withLock { $0.ticking } }

    public func remove(_ id: UInt64) {
        _ = state.withLock { $0.entries.removeValue(forKey: id) }
    }

    /// Runs the time-outs whose moment has passed, each once, outside the lock.
    public func fire(now: ContinuousClock.Instant = .now) {
        let due = state.withLock { state -> [Entry] in
            let ids = state.entries.compactMap { $0.value.moment <= now ? $0.key : nil }
            return ids.compactMap { state.entries.removeValue(forKey: $0) }
        }
        for entry in due { entry.expire() }
    }

    /// Runs `body` in a task of its own and cancels it once `duration` has passed; a body ended
    /// that way throws `late()`, whatever it threw itself. A body must stop at cancellation: the
    /// call waits for it.
    public func within<T: Sendable>(
        _ duration: Duration, orThrow late: @escaping @Sendable () -> any Error, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let work = Task { try await body() }
        let expired = Atomic<Bool>(false)
        let id = add(at: .now + duration) {
            expired.store(true, ordering: .relaxed)
            work.cancel()
        }
        defer { remove(id) }
        do {
            return try await withTaskCancellationHandler { try await work.value } onCancel: { work.cancel() }
        } catch where expired.load(ordering: .relaxed) {
            throw late()
        }
    }

    /// Runs `body` in a task of its own and answers with its result, or with `late()` once
    /// `duration` has passed, at once: `body` is then cancelled and left to finish on its own.
    /// For work that may ignore cancellation (a pool waiting for a database that refuses
    /// connections, a lock held by a stuck writer) and leaves nothing half-done behind (a probe).
    public func abandoning<T: Sendable>(
        _ duration: Duration, orThrow late: @escaping @Sendable () -> any Error, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let answer = OneShotAnswer<T>()
        let work = Task {
            do {
                answer.answer(.success(try await body()))
            } catch {
                answer.answer(.failure(error))
            }
        }
        let id = add(at: .now + duration) {
            if answer.answer(.failure(late())) { work.cancel() }
        }
        defer { remove(id) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { answer.install($0) }
        } onCancel: {
            if answer.answer(.failure(CancellationError())) { work.cancel() }
        }
    }

    /// Fires the due time-outs every ``interval`` until cancelled.
    public func tick() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.interval)
            fire()
        }
    }

    /// As a service: ticks until the graceful shutdown. The service group stops the HTTP server
    /// (listed after this) first, so requests still reading a body keep their time-out.
    public func run() async {
        await cancelWhenGracefulShutdown { await self.tick() }
    }
}
