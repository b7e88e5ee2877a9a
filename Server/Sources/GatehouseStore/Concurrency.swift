import GatehouseCore
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
