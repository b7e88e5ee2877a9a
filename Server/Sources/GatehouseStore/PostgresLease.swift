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

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            group.addTask { await deadlines.tick() }
            // The pool ends with the service group (cancellation or graceful shutdown); the
            // time-outs end with it.
            await group.next()
            group.cancelAll()
        }
    }
}
