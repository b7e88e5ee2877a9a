import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// What several use cases read of an account's entitlements (profile, export, purchases,
/// usage, the operator's pages): the engine's input from the stored account, its App Store
/// subscriptions and this period's credits, the snapshot, and the refusal of an action the app
/// does not know. A gate's own refusal is `GateDecision.refusal`. The use case that changes
/// entitlements is `EntitlementService`.
struct Entitlements: Sendable {
    let store: any EntitlementStore & PlanLedgerStore
    let engine: EntitlementEngine
    let clock: any WallClock

    /// The engine's input for `user` (a guest when nil), with this period's credits.
    func input(for user: User?, in tx: (any EntitlementStore & PlanLedgerStore)? = nil) async throws -> EntitlementInput {
        guard let user else { return .guest }
        let reader = tx ?? store
        var input = try await engine.storedInput(for: user, in: reader)
        let now = clock.now
        if !engine.settings.plan(engine.planState(input, at: now)).credits.isEmpty {
            input.creditsSpent = try await reader.creditsSpent(of: user.id, since: engine.creditPeriod(input, at: now).start)
        }
        return input
    }

    func snapshot(_ user: User?) async throws -> EntitlementsPayload {
        engine.snapshot(try await input(for: user), at: clock.now)
    }

    /// What a change to the plan ledger writes with: the account, its ledger and its credits.
    typealias Changing = any UserStore & EntitlementStore & PlanLedgerStore

    /// Records `plan.changed` (`from`, `to` and the `source` whose row changed) when the account's
    /// plan state differs from `before`; inside the transaction that changed the ledger.
    func recordPlanChange(_ work: Work<Changing>, user: UserID, before: EntitlementInput, source: PlanSource) async throws {
        guard let updated = try await work.tx.user(id: user) else { return }
        let after = try await input(for: updated, in: work.tx)
        let (from, to) = (engine.planState(before, at: work.now), engine.planState(after, at: work.now))
        if from != to { try await work.record(.planChanged, user: user, data: ["from": from, "to": to, "source": source.rawValue]) }
    }

    func unknownAction(_ action: String) -> GatehouseError {
        GatehouseError(status: 400, code: .unknownAction, message: "'\(action)' is not an action this app knows.")
    }
}
