import GatehouseWire
import Synchronization

/// Runs `body`, throwing `error` (and cancelling `body`) if it has not finished within `duration`.
/// Waits for `body` to wind down after cancelling it, so nothing it does outlives the call.
public func withDeadline<T: Sendable>(
    _ duration: Duration, orThrow error: @escaping @autoclosure @Sendable () -> any Error,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: duration)
            throw error()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw error() }
        return first
    }
}

/// Like `withDeadline`, but the deadline holds even when `body` ignores cancellation (a
/// connection pool waiting for a database that refuses connections can): on time-out `body` is
/// cancelled and left to finish on its own, and the caller gets the error at once. Only for
/// work that leaves nothing half-done behind (a read-only probe).
public func withAbandoningDeadline<T: Sendable>(
    _ duration: Duration, orThrow error: @escaping @autoclosure @Sendable () -> any Error,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = DeadlineOutcome<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            outcome.install(continuation)
            let work = Task {
                do {
                    outcome.finish(.success(try await body()))
                } catch {
                    outcome.finish(.failure(error))
                }
            }
            let timer = Task {
                try? await Task.sleep(for: duration)
                if outcome.finish(.failure(error())) { work.cancel() }
            }
            outcome.onFinish { work.cancel(); timer.cancel() }
        }
    } onCancel: {
        outcome.finish(.failure(CancellationError()))
    }
}

/// The first result of a deadline race; later ones are dropped. The clean-up (cancelling the
/// loser) runs once the race is decided, or at once when it is registered after.
private final class DeadlineOutcome<T: Sendable>: Sendable {
    private struct Cleanup {
        var done = false
        var run: (@Sendable () -> Void)?
    }
    private let answer = OneShotAnswer<T>()
    private let cleanup = Mutex(Cleanup())

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        answer.install(continuation)
    }

    func onFinish(_ run: @escaping @Sendable () -> Void) {
        let runNow = cleanup.withLock { cleanup -> Bool in
            if cleanup.done { return true }
            cleanup.run = run
            return false
        }
        if runNow { run() }
    }

    /// True when this result was the first.
    @discardableResult
    func finish(_ result: Result<T, any Error>) -> Bool {
        guard answer.answer(result) else { return false }
        let run = cleanup.withLock { cleanup -> (@Sendable () -> Void)? in
            cleanup.done = true
            defer { cleanup.run = nil }
            return cleanup.run
        }
        run?()
        return true
    }
}
