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

/// The first result of a deadline race; later ones are dropped.
private final class DeadlineOutcome<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var pending: Result<T, any Error>?
        var done = false
        var cleanup: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        let early = state.withLock { state -> Result<T, any Error>? in
            if let pending = state.pending { return pending }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.done { return true }
            state.cleanup = cleanup
            return false
        }
        if runNow { cleanup() }
    }

    /// True when this result was the first.
    @discardableResult
    func finish(_ result: Result<T, any Error>) -> Bool {
        let (continuation, cleanup, first) = state.withLock { state -> (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?, Bool) in
            guard !state.done else { return (nil, nil, false) }
            state.done = true
            let continuation = state.continuation
            state.continuation = nil
            if continuation == nil { state.pending = result }
            let cleanup = state.cleanup
            state.cleanup = nil
            return (continuation, cleanup, true)
        }
        continuation?.resume(with: result)
        cleanup?()
        return first
    }
}
