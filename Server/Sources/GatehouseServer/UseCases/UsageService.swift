import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// `POST /v1/usage/{meter}`: usage meters the app's own backends count in Gatehouse, so a limit
/// holds across all their instances and no client can claim a smaller count. The count of the
/// period fills the cap rule the meter names, so the plan's limit and the refusal (a gate
/// decision) come from the same rules as every other gate.
struct UsageService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & EntitlementStore & PlanLedgerStore & UsageStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let entitlements: Entitlements
    let engine: EntitlementEngine
    let clock: any WallClock


    /// Records one use of `name` by `request.userID`, reserved before the answer: the count and
    /// the limit are compared in the same statement that adds to the count.
    func use(_ name: String, request: UsageRequest) async throws -> UsageResponse {
        guard let meter = engine.settings.meters[name] else { throw GatehouseError.notFound("This app has no usage meter named '\(name)'.") }
        let amount = request.amount ?? 1
        guard (1...1_000).contains(amount) else { throw GatehouseError.invalidRequest("The amount must be 1 to 1000.") }
        let key = request.idempotencyKey
        guard (1...255).contains(key.utf8.count) else { throw GatehouseError.invalidRequest("The idempotency_key must be 1 to 255 characters.") }
        guard let id = UserID(request.userID), let user = try await store.user(id: id) else {
            throw GatehouseError.notFound("No account has this user_id.")
        }
        guard !user.isDisabled else {
            throw GatehouseError(status: 403, code: .accountDisabled, message: "This account is disabled.")
        }
        let now = clock.now
        do {
            return try await unitOfWork.run { work -> UsageResponse in
                let tx = work.tx
                let input = try await entitlements.input(for: user, in: tx)
                let window = meter.window(at: now)
                if let earlier = try await tx.usageRecord(of: user.id, meter: name, periodStart: window.start, idempotencyKey: key) {
                    // A retry of a use already counted: the same answer, nothing added.
                    guard earlier.amount == amount else {
                        throw GatehouseError(
                            status: 409, code: .idempotencyKeyReused,
                            message: "This idempotency_key was used for another amount. Send a new key for a new use.")
                    }
                    return UsageResponse(
                        used: try await tx.usage(of: user.id, meter: name, periodStart: window.start),
                        limit: engine.limit(of: meter, input: input, at: now), resetsAt: window.end.rfc3339)
                }
                // Every rule of the action but the count: account, plan, trial, capability.
                guard let decision = engine.decide(meter.action, context: [:], input: input, at: now) else {
                    throw entitlements.unknownAction(meter.action)
                }
                guard decision.allowed else { throw decision.refusal }
                let limit = engine.limit(of: meter, input: input, at: now)
                let record = UsageRecord(userID: user.id, meter: name, amount: amount, idempotencyKey: key, periodStart: window.start, createdAt: now)
                guard let used = try await tx.addUsage(record, limit: limit) else {
                    // Refused by the limit: the cap rule's own decision for the count this use
                    // would have reached.
                    let current = try await tx.usage(of: user.id, meter: name, periodStart: window.start)
                    let capped = engine.decide(meter.action, context: [meter.context: current + amount - 1], input: input, at: now)
                    throw (capped.flatMap { $0.allowed ? nil : $0 }
                        ?? GateDecision(
                            allowed: false, gate: "cap", reasonCode: "usage_limit_reached", message: "You've reached your plan's limit.",
                            secondaryMessage: nil, actions: [])).refusal
                }
                return UsageResponse(used: used, limit: limit, resetsAt: window.end.rfc3339)
            }
        } catch StoreError.uniqueViolation {
            // The same key raced itself: the other use was counted; answer it.
            return try await use(name, request: request)
        }
    }
}
