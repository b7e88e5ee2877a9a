import GatehouseWire
import Synchronization

/// A caller's continuation that is answered once. An answer that comes before the continuation
/// is installed is kept until it is; only the first answer counts. What a race between some
/// work and its time-out needs on either side (`Deadlines.abandoning`, the PostgreSQL lease),
/// written once.
public final class OneShotAnswer<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var pending: Result<T, any Error>?
        var answered = false
    }
    private let state = Mutex(State())

    /// An answer slot with no continuation and no answer yet.
    public init() {}

    /// Installs the caller's continuation; resumes it at once when the answer came first.
    public func install(_ continuation: CheckedContinuation<T, any Error>) {
        let early = state.withLock { state -> Result<T, any Error>? in
            if let pending = state.pending { return pending }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// Answers the caller with `result` unless it was answered already; true when this was the
    /// first answer.
    @discardableResult
    public func answer(_ result: Result<T, any Error>) -> Bool {
        let (first, continuation) = state.withLock { state -> (Bool, CheckedContinuation<T, any Error>?) in
            guard !state.answered else { return (false, nil) }
            state.answered = true
            let continuation = state.continuation
            state.continuation = nil
            if continuation == nil { state.pending = result }
            return (true, continuation)
        }
        continuation?.resume(with: result)
        return first
    }
}
