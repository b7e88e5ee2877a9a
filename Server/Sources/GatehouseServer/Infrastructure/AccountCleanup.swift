import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import Logging
import ServiceLifecycle

/// Removes, hourly, accounts nobody can come back to once they are stale, each by one of its
/// rules, with a `user.deleted` event each: anonymous accounts nobody has used for the preset's
/// `privacy.anonymous_cleanup_days` (when set), and accounts a phone sign-up made whose number
/// was not proved within a day, so that the number is free again (issue 58). Whatever the rule,
/// an account that holds a live paid right stays (issue 59).
final class AccountCleanup: PeriodicSweep {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & ProfileStore & SessionStore & PlanLedgerStore & IdentityStore

    /// A kind of stale account: how it is found, how it is checked again under the account's
    /// row lock before it goes, and the deletion's reason.
    enum Rule: Sendable, Equatable {
        /// Anonymous, and no session used for `days`.
        case inactiveAnonymous(days: Int)
        /// Made by a phone sign-up whose number was never proved, a day on.
        case unprovedPhoneSignUp

        static let unprovedSeconds: TimeInterval = 86_400

        var reason: String {
            switch self {
            case .inactiveAnonymous: "inactive_anonymous"
            case .unprovedPhoneSignUp: "unproved_phone_sign_up"
            }
        }

        func cutoff(_ now: Date) -> Date {
            switch self {
            case .inactiveAnonymous(let days): now.addingTimeInterval(-Double(days) * 86_400)
            case .unprovedPhoneSignUp: now.addingTimeInterval(-Self.unprovedSeconds)
            }
        }

        func candidates(before cutoff: Date, limit: Int, in store: Stores) async throws -> [UserID] {
            switch self {
            case .inactiveAnonymous: try await store.staleAnonymousUsers(before: cutoff, limit: limit)
            case .unprovedPhoneSignUp: try await store.unprovedPhoneSignUps(before: cutoff, limit: limit)
            }
        }

        /// Whether the account is still what the list said, read in the deleting transaction
        /// after its row was locked: an account upgraded, used or proved since stays.
        func stillHolds(_ user: User, cutoff: Date, in tx: Stores) async throws -> Bool {
            switch self {
            case .inactiveAnonymous:
                guard user.isAnonymous else { return false }
                return try await tx.sessions(of: user.id).allSatisfy { $0.lastActiveAt < cutoff }
            case .unprovedPhoneSignUp:
                guard user.phone != nil, user.phoneVerifiedAt == nil, user.email == nil, !user.isAnonymous, user.createdAt < cutoff else { return false }
                return try await tx.identities(of: user.id).isEmpty
            }
        }
    }

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let lifecycle: AccountLifecycle
    let rules: [Rule]
    /// The preset's grace windows: a subscription in its grace still gives a right.
    let grace: LedgerGrace
    let clock: any WallClock
    let logger: Logger
    let loop = WakeLoop(pollInterval: .seconds(3_600))

    init(
        store: Stores, unitOfWork: UnitOfWork<Stores>, lifecycle: AccountLifecycle, rules: [Rule], grace: LedgerGrace, clock: any WallClock,
        logger: Logger
    ) {
        self.grace = grace
        self.store = store
        self.unitOfWork = unitOfWork
        self.lifecycle = lifecycle
        self.rules = rules
        self.clock = clock
        self.logger = logger
    }

    /// The rules a preset asks for: the unproved sign-ups always, anonymous accounts when set.
    static func rules(anonymousCleanupDays: Int?) -> [Rule] {
        [.unprovedPhoneSignUp] + (anonymousCleanupDays.map { [.inactiveAnonymous(days: $0)] } ?? [])
    }

    func sweepOnce() async { await sweep() }

    /// Whether the account holds a live right in any source of the ledger, read in the deleting
    /// transaction (every row, whatever the preset sells today).
    private func holdsLiveRight(_ id: UserID, in tx: Stores) async throws -> Bool {
        let rows = try await tx.ledgerRows(of: id)
        return rows.holdLiveRight(at: clock.now, grace: grace)
    }

    /// Deletes one batch after another, rule by rule, until no stale account is left; returns how many.
    @discardableResult
    func sweep() async -> Int {
        var removed = 0
        for rule in rules { removed += await sweep(rule) }
        return removed
    }

    private func sweep(_ rule: Rule) async -> Int {
        var removed = 0
        while !Task.isCancelled {
            do {
                let cutoff = rule.cutoff(clock.now)
                let stale = try await rule.candidates(before: cutoff, limit: 200, in: store)
                if stale.isEmpty { break }
                var removedInBatch = 0
                for id in stale {
                    let deleted = try await unitOfWork.run { work -> Bool in
                        // The list was read before: checked again under the user's row lock, in the deleting transaction.
                        try await work.tx.lockUser(id)
                        guard let user = try await work.tx.user(id: id), try await rule.stillHolds(user, cutoff: cutoff, in: work.tx),
                            try await !self.holdsLiveRight(id, in: work.tx)
                        else { return false }
                        return try await self.lifecycle.delete(work.narrowed { $0 }, id, reason: rule.reason)
                    }
                    if deleted { (removed, removedInBatch) = (removed + 1, removedInBatch + 1) }
                }
                // A batch that removed nothing (each spared, or changed since it was listed)
                // would be listed again: the next sweep looks again.
                if stale.count < 200 || removedInBatch == 0 { break }
            } catch {
                logger.backgroundWork(.staleAccountRemoval, endedBy: error, metadata: ["rule": "\(rule.reason)"])
                break
            }
        }
        if removed > 0 {
            logger.notice("removed stale accounts", metadata: ["rule": "\(rule.reason)", "count": "\(removed)"])
        }
        return removed
    }
}
