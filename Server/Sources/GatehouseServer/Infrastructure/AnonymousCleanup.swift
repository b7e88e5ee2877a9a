import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import Logging
import ServiceLifecycle

/// Removes anonymous accounts nobody has used for the preset's
/// `privacy.anonymous_cleanup_days` (default: never), hourly, with a `user.deleted` event each.
final class AnonymousCleanup: PeriodicSweep {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & ProfileStore & SessionStore & StripeStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let lifecycle: AccountLifecycle
    let days: Int
    let clock: any WallClock
    let logger: Logger
    let loop = WakeLoop(pollInterval: .seconds(3_600))

    init(store: Stores, unitOfWork: UnitOfWork<Stores>, lifecycle: AccountLifecycle, days: Int, clock: any WallClock, logger: Logger) {
        self.store = store
        self.unitOfWork = unitOfWork
        self.lifecycle = lifecycle
        self.days = days
        self.clock = clock
        self.logger = logger
    }

    func sweepOnce() async { await sweep() }

    /// Deletes one batch after another until no stale account is left; returns how many.
    @discardableResult
    func sweep() async -> Int {
        var removed = 0
        while !Task.isCancelled {
            let now = clock.now
            do {
                let cutoff = now.addingTimeInterval(-Double(days) * 86_400)
                let stale = try await store.staleAnonymousUsers(before: cutoff, limit: 200)
                if stale.isEmpty { break }
                for id in stale {
                    let deleted = try await unitOfWork.run { work -> Bool in
                        let tx = work.tx
                        // The list was read before: an account upgraded or used since then stays.
                        // Checked again under the user's row lock, in the deleting transaction.
                        try await tx.lockUser(id)
                        guard let user = try await tx.user(id: id), user.isAnonymous,
                            try await tx.sessions(of: id).allSatisfy({ $0.lastActiveAt < cutoff })
                        else { return false }
                        return try await self.lifecycle.delete(work.narrowed { $0 }, id, reason: "inactive_anonymous")
                    }
                    if deleted { removed += 1 }
                }
                if stale.count < 200 { break }
            } catch {
                logger.warning("could not remove stale anonymous accounts", metadata: ["cause": "\(error)"])
                break
            }
        }
        if removed > 0 {
            logger.notice("removed stale anonymous accounts", metadata: ["count": "\(removed)"])
        }
        return removed
    }
}
