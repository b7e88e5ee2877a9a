import Synchronization

/// At most one password hash in flight per account on this node (finding 5 of issue 40:
/// guesses at one account, each a costly imported hash, took every hashing thread and a normal
/// sign-in got no answer). Guesses at one account take turns, first come first served; other
/// accounts' sign-ins go on beside them. How many may queue is bounded by the account's lockout,
/// reserved before the turn is asked for (`Credentials.checkAttempt`).
final class HashLanes: Sendable {
    private let waiting = Mutex<[String: [CheckedContinuation<Void, Never>]]>([:])

    /// Runs `work` once no other hash of `account` is in flight here.
    func one<T: Sendable>(_ account: String, _ work: () async throws -> T) async throws -> T {
        await enter(account)
        defer { leave(account) }
        return try await work()
    }

    private func enter(_ account: String) async {
        let free = waiting.withLock { lanes in
            guard lanes[account] == nil else { return false }
            lanes[account] = []
            return true
        }
        guard !free else { return }
        await withCheckedContinuation { (turn: CheckedContinuation<Void, Never>) in
            // The lane may have emptied between the two looks: then this turn is now.
            let now = waiting.withLock { lanes in
                guard lanes[account] != nil else {
                    lanes[account] = []
                    return true
                }
                lanes[account]?.append(turn)
                return false
            }
            if now { turn.resume() }
        }
    }

    private func leave(_ account: String) {
        let next = waiting.withLock { lanes -> CheckedContinuation<Void, Never>? in
            guard var queue = lanes[account], !queue.isEmpty else {
                lanes[account] = nil
                return nil
            }
            let first = queue.removeFirst()
            lanes[account] = queue
            return first
        }
        next?.resume()
    }
}
