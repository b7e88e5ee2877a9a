import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The entitlement snapshot, gate decisions, credits and trials, from the preset's rules
/// (`EntitlementEngine`) and the account's stored facts.
struct EntitlementService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & EntitlementStore & PlanLedgerStore

    let unitOfWork: UnitOfWork<Stores>
    let entitlements: Entitlements
    let clock: any WallClock

    var engine: EntitlementEngine { entitlements.engine }

    func snapshot(_ user: User?) async throws -> EntitlementsPayload { try await entitlements.snapshot(user) }

    /// `POST /v1/entitlements/check`: the caller's session tells `mfa` and `recent_sign_in`
    /// rules how it was signed in.
    func check(_ signedIn: SignedIn?, action: String, context: [String: Int]) async throws -> GateDecision {
        var input = try await entitlements.input(for: signedIn?.user)
        input.assurance = signedIn?.session.assuranceState
        guard let decision = engine.decide(action, context: context, input: input, at: clock.now) else {
            throw entitlements.unknownAction(action)
        }
        return decision
    }

    /// `POST /v1/credits/{name}/spend`: atomic and idempotent. One user's spends take turns (a
    /// row lock on PostgreSQL, the single writer on SQLite), so concurrent spends can never take
    /// the balance below zero; the same `idempotency_key` answers the same result.
    func spend(_ user: User, credit name: String, request: CreditSpendRequest) async throws -> CreditSpendResponse {
        guard engine.settings.actions[request.action] != nil else { throw entitlements.unknownAction(request.action) }
        let key = request.idempotencyKey
        guard (1...255).contains(key.utf8.count) else {
            throw GatehouseError.invalidRequest("The idempotency_key must be 1 to 255 characters.")
        }
        let now = clock.now
        do {
            return try await unitOfWork.run { work -> CreditSpendResponse in
                let tx = work.tx
                try await tx.lockUser(user.id)
                var input = try await entitlements.input(for: user, in: tx)
                if let earlier = try await tx.creditSpend(of: user.id, idempotencyKey: key) {
                    // The key is bound to what it spent for (finding 9): another credit, action
                    // or subject under the same key is a client bug or a probe, never a replay.
                    guard earlier.credit == name, earlier.action == request.action, earlier.subject == request.subject else {
                        throw GatehouseError(
                            status: 409, code: .idempotencyKeyReused,
                            message: "This idempotency_key was used for another spend. Send a new key for a new spend.")
                    }
                    return CreditSpendResponse(remaining: remaining(name, input: input, now: now), spent: earlier.amount)
                }
                guard let decision = engine.decide(request.action, context: [:], input: input, at: now) else {
                    throw entitlements.unknownAction(request.action)
                }
                guard decision.allowed else { throw decision.refusal }
                guard let credit = engine.creditSpent(by: request.action, input: input, at: now) else {
                    // The plan does not count this action (Pro practice): nothing to spend.
                    return CreditSpendResponse(remaining: nil, spent: 0)
                }
                guard credit == name else {
                    throw GatehouseError.invalidRequest("The action '\(request.action)' spends '\(credit)' credits, not '\(name)'.")
                }
                try await tx.insertCreditSpend(
                    CreditSpend(
                        userID: user.id, credit: name, action: request.action, subject: request.subject, idempotencyKey: key,
                        periodStart: engine.creditPeriod(input, at: now).start, createdAt: now))
                input.creditsSpent[name, default: 0] += 1
                var data = ["credit": name, "action": request.action]
                data["subject"] = request.subject
                try await work.record(.creditSpent, user: user.id, data: data)
                return CreditSpendResponse(remaining: remaining(name, input: input, now: now), spent: 1)
            }
        } catch StoreError.uniqueViolation {
            // The same key raced itself: the other spend won; answer its result.
            return try await spend(user, credit: name, request: request)
        }
    }

    private func remaining(_ name: String, input: EntitlementInput, now: Date) -> Int? {
        guard let granted = engine.settings.plan(engine.planState(input, at: now)).credits[name] else { return nil }
        return max(0, granted - (input.creditsSpent[name] ?? 0))
    }

    /// `POST /v1/trial/start`: once per account.
    func startTrial(_ user: User) async throws -> EntitlementsPayload {
        guard engine.settings.trial.startable else {
            throw GatehouseError(status: 403, code: .forbidden, message: "Trials start on their own for this app.")
        }
        let now = clock.now
        let input = try await entitlements.input(for: user)
        guard input.trialStartedAt == nil else { throw trialUsed }
        try await unitOfWork.run { work in
            guard try await work.tx.startTrial(user.id, at: now) else { throw trialUsed }
            try await work.record(.trialStarted, user: user.id, data: ["days": String(engine.settings.trial.days)])
            try await work.record(.planChanged, user: user.id, data: ["from": engine.planState(input, at: now), "to": "trial"])
        }
        var updated = user
        updated.trialStartedAt = now
        return try await snapshot(updated)
    }

    private var trialUsed: GatehouseError {
        GatehouseError(
            status: 409, code: .trialAlreadyUsed, message: engine.copy["error.trial_already_used"] ?? "You've already used your free trial.")
    }
}

extension GateDecision {
    /// A refused decision as the 403 that carries it under `details`: `mfa_required` or
    /// `reauthentication_required` for a step-up gate (so a client can tell it from a paywall),
    /// `plan_required` otherwise.
    var refusal: GatehouseError {
        let details = JSONValue(encoding: self)?.objectValue ?? [:]
        return GatehouseError(status: 403, code: refusalCode, message: message ?? "This is not part of your plan.", details: details)
    }
}

extension EntitlementEngine {
    /// The sources of the plan ledger read for an account: each where the preset sells through
    /// it, grants always (the trial is the account's own fields).
    var readSources: Set<PlanSource> {
        Set(
            PlanSource.allCases.filter { source in
                switch source {
                case .appStore: !settings.products.isEmpty
                case .stripe: !stripePrices.isEmpty
                case .googlePlay: !googlePlayProducts.isEmpty
                case .grant: true
                case .trial: false
                }
            })
    }

    /// The input for `user` from the stored account and every source of its plan ledger,
    /// without credits.
    func storedInput(for user: User, in reader: any PlanLedgerStore) async throws -> EntitlementInput {
        input(for: user, ledger: try await reader.ledgerRows(of: user.id, sources: readSources))
    }

    /// ``storedInput(for:in:)`` of every account of `users`, read together (the console's lists).
    func storedInputs(for users: [User], in reader: any PlanLedgerStore) async throws -> [UserID: EntitlementInput] {
        let ledgers = try await reader.ledgerRows(ofAccounts: users.map(\.id), sources: readSources)
        return Dictionary(users.map { ($0.id, input(for: $0, ledger: ledgers[$0.id] ?? LedgerRows())) }, uniquingKeysWith: { first, _ in first })
    }
}
