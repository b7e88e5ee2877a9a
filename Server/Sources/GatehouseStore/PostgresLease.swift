import GatehouseCore
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// One lease request's progress: waiting for a connection, running, or over. Exactly one of
/// "the lease timed out" and "the work finished" answers the caller.
final class PendingLease<T: Sendable>: Sendable {
    private enum Phase { case waiting, running, done }
    private struct State {
        var phase = Phase.waiting
        /// The entry of the running time-out in `deadlines`.
        var timer: UInt64?
    }
    private let state = Mutex(State())
    private let answer = OneShotAnswer<T>()
    private let deadlines: Deadlines

    init(deadlines: Deadlines) {
        self.deadlines = deadlines
    }

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        answer.install(continuation)
    }

    /// Runs `expire` once `delay` has passed, unless the lease is over first. Replaces the
    /// time-out set before (which has fired: a lease sets its second one from its first).
    func setTimer(after delay: Duration, _ expire: @escaping @Sendable () -> Void) {
        state.withLock { state in
            guard state.phase != .done else { return }
            state.timer = deadlines.add(at: ContinuousClock.now + delay, expire)
        }
    }

    /// The connection is here: true if the work may run (the caller still waits).
    func begin() -> Bool {
        state.withLock { state in
            guard state.phase == .waiting else { return false }
            state.phase = .running
            return true
        }
    }

    /// Gives up waiting for a connection; false if the work has already started or finished.
    @discardableResult
    func abandon(_ error: any Error) -> Bool {
        guard close(onlyWhileWaiting: true) else { return false }
        answer.answer(.failure(error))
        return true
    }

    /// Answers the caller unless it has been answered already; false if it had.
    @discardableResult
    func finish(_ result: Result<T, any Error>) -> Bool {
        guard close(onlyWhileWaiting: false) else { return false }
        answer.answer(result)
        return true
    }

    /// Marks the lease over and stops its timer; false if it already was over (or is running
    /// and `onlyWhileWaiting`).
    private func close(onlyWhileWaiting: Bool) -> Bool {
        let (closed, timer) = state.withLock { state -> (Bool, UInt64?) in
            guard state.phase == .waiting || (state.phase == .running && !onlyWhileWaiting) else { return (false, nil) }
            state.phase = .done
            defer { state.timer = nil }
            return (true, state.timer)
        }
        if let timer { deadlines.remove(timer) }
        return closed
    }
}

/// The pool and its leases' time-outs, run together.
struct PoolService: Service {
    let client: PostgresClient
    let deadlines: Deadlines
    let started: PoolStart

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await started.running(client) }
            group.addTask { await deadlines.tick() }
            // The pool ends with the service group (cancellation or graceful shutdown); the
            // time-outs end with it.
            await group.next()
            group.cancelAll()
        }
    }
}

/// Holds the leases asked for before the pool runs until it does. The pool is a service that
/// the service group starts beside the server, whose start-up work (the migrations) and the
/// session cache's feed lease at once; postgres-nio serves such a lease once the pool runs, but
/// warns first that `PostgresClient.run()` "hasn't been called yet", which reads to an operator
/// as a fault. A lease asks ``wait()`` first (an atomic load once the pool runs), and the pool's task
/// opens the gate just before it calls `run()`, whose first line marks the pool running. That
/// narrows the race to those few instructions, against a waiter that must first be scheduled
/// again; it does not close it (postgres-nio offers no signal that the pool runs).
final class PoolStart: Sendable {
    /// Set before the waiters are taken under the lock, and read under it by a waiter that
    /// registers: a waiter either sees it set or is registered before the pool takes them.
    private let opened = Atomic<Bool>(false)
    private let waiters = Mutex<(next: Int, waiting: [Int: CheckedContinuation<Void, Never>])>((0, [:]))

    /// Opens the gate and runs the pool until it ends.
    func running(_ client: PostgresClient) async {
        open()
        await client.run()
    }

    func open() {
        opened.store(true, ordering: .releasing)
        let waiting = waiters.withLock { state in
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Returns once the pool runs, or at once when the task is cancelled (the lease's own
    /// time-out, or a shutdown, then takes its course).
    func wait() async {
        if opened.load(ordering: .acquiring) { return }
        let id = waiters.withLock { state in
            defer { state.next += 1 }
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = waiters.withLock { state in
                    guard !opened.load(ordering: .acquiring), !Task.isCancelled else { return true }
                    state.waiting[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            waiters.withLock { $0.waiting.removeValue(forKey: id) }?.resume()
        }
    }
}
