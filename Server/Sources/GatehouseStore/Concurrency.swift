import GatehouseCore
import ServiceLifecycle
import Synchronization

/// A fair, non-reentrant lock for async code: waiters are served in arrival order and
/// suspend instead of blocking a thread.
final class AsyncLock: Sendable {
    private struct State {
        var locked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    func lock() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let acquired = state.withLock { state -> Bool in
                if !state.locked {
                    state.locked = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if acquired { continuation.resume() }
        }
    }

    func unlock() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.locked = false
                return nil
            }
            // Ownership passes straight to the next waiter; `locked` stays true.
            return state.waiters.removeFirst()
        }
        next?.resume()
    }

    func withLock<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await lock()
        defer { unlock() }
        return try await body()
    }
}

/// Runs `body`, throwing `StoreError.unavailable` if it has not finished within `duration`.
func withTimeout<T: Sendable>(_ duration: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withDeadline(duration, orThrow: StoreError.unavailable("no answer within \(duration)"), body)
}

/// Time-outs of work in flight: a PostgreSQL lease's, a request body's. Adding and removing one
/// is a dictionary write under a lock; one task (``tick()``, run as a service beside what uses
/// it, or with the PostgreSQL pool) looks for those past their moment four times a second and runs
/// them, so a time-out fires up to a quarter of a second late.
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
    }
    private let state = Mutex(State())

    public init() {}

    /// How often ``tick()`` looks.
    static let interval: Duration = .milliseconds(250)

    /// The time-outs not yet fired or removed (none once the work they guard is over).
    public var count: Int { state.withLock { $0.entries.count } }

    public func add(at moment: ContinuousClock.Instant, _ expire: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.entries[state.next] = Entry(moment: moment, expire: expire)
            return state.next
        }
    }

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
