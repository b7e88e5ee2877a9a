import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Promotional grants (issue 44): an operator gives an account the paid plan, at a tier, until a
/// time. A grant is its own row of the plan ledger, so it never changes what a store sold, and
/// revoking it never ends a subscription. The admin API and the console both come here.
extension OperatorService {
    /// `POST /admin/v1/users/{id}/grants`.
    func createGrant(_ reference: String, _ request: GrantRequest, by actor: String = operatorActor, client: ClientInfo? = nil) async throws
        -> GrantPayload
    {
        let user = try await find(reference)
        if let plan = request.plan, PlanState(known: plan) != .pro {
            throw GatehouseError.invalidRequest("A grant gives the paid plan: 'plan' must be pro.")
        }
        if let tier = request.tier, !knownTiers.contains(tier) {
            throw GatehouseError.invalidRequest("'\(tier)' is not a tier of this app (\(knownTiers.sorted().joined(separator: ", "))).")
        }
        guard let until = Date(rfc3339: request.until) else {
            throw GatehouseError.invalidRequest("'until' must be an RFC 3339 time, e.g. 2027-01-01T00:00:00Z.")
        }
        guard let reason = try OperatorReason.read(request.reason, required: true) else { throw GatehouseError.invalidRequest("Give a reason.") }
        let grant = try await unitOfWork.run(client: client) { work -> PlanGrant in
            guard until > work.now else { throw GatehouseError.invalidRequest("'until' must be in the future.") }
            let grant = PlanGrant(userID: user.id, tier: request.tier, startsAt: work.now, until: until, reason: reason, createdBy: actor)
            let before = try await ledger.input(for: user, in: work.tx)
            try await work.tx.insertGrant(grant)
            try await work.audit(
                .grantCreated, user: user.id,
                details: ["by": actor, "grant_id": grant.id.uuidString.lowercased(), "tier": grant.tier ?? "", "until": until.rfc3339, "reason": reason])
            try await ledger.recordPlanChange(work.narrowed { $0 }, user: user.id, before: before, source: .grant)
            return grant
        }
        return Self.payload(grant)
    }

    /// `GET /admin/v1/users/{id}/grants`: every grant, revoked and ended ones included.
    func grants(_ reference: String) async throws -> GrantList {
        let user = try await find(reference)
        return GrantList(grants: try await store.grants(of: user.id).map(Self.payload))
    }

    /// `DELETE /admin/v1/users/{id}/grants/{grant}`: 404 for a grant that is not the account's or
    /// was revoked already.
    func revokeGrant(_ reference: String, grant text: String, by actor: String = operatorActor, client: ClientInfo? = nil) async throws {
        let user = try await find(reference)
        guard let id = UUID(uuidString: text) else { throw GatehouseError.notFound("No such grant.") }
        try await unitOfWork.run(client: client) { work in
            let before = try await ledger.input(for: user, in: work.tx)
            guard try await work.tx.revokeGrant(id, of: user.id, at: work.now) else { throw GatehouseError.notFound("No such grant.") }
            try await work.audit(.grantRevoked, user: user.id, details: ["by": actor, "grant_id": id.uuidString.lowercased()])
            try await ledger.recordPlanChange(work.narrowed { $0 }, user: user.id, before: before, source: .grant)
        }
    }

    /// Every tier the app sells: its plans', its App Store products' and its Stripe prices'.
    var knownTiers: Set<String> {
        Set(engine.settings.tiers + engine.settings.plans.values.compactMap(\.tier) + engine.settings.products.values.compactMap(\.tier)
            + engine.stripePrices.values.compactMap(\.tier))
    }

    static func payload(_ grant: PlanGrant) -> GrantPayload {
        GrantPayload(
            id: grant.id.uuidString.lowercased(), plan: grant.plan.rawValue, tier: grant.tier, startsAt: grant.startsAt.rfc3339,
            until: grant.until.rfc3339, reason: grant.reason, createdBy: grant.createdBy, revokedAt: grant.revokedAt?.rfc3339)
    }

    /// The ledger's reads and its `plan.changed`, for the operator's changes to it.
    private var ledger: Entitlements { Entitlements(store: store, engine: engine, clock: clock) }
}
