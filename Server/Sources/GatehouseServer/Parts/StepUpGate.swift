import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// The preset's step-up gates on the server's own actions (`EntitlementSettings.serverActions`):
/// `account.delete`, `account.change_password`, `account.change_email` (linking an address) and
/// `account.export`. A preset that lists one of them under `entitlements.actions` (with `mfa` or
/// `recent_sign_in` rules only) has its decision enforced before the action; an action it does
/// not list is allowed.
struct StepUpGate: Sendable {
    let engine: EntitlementEngine
    let store: any PlanLedgerStore
    let clock: any WallClock

    /// 403 with the gate's reason (`mfa_required`, `reauthentication_required`, …) and its
    /// decision under `details` when the preset's rules for `action` refuse the caller's session.
    func require(_ step: StepUpAction, _ signedIn: SignedIn) async throws {
        let action = step.rawValue
        guard engine.settings.actions[action] != nil else { return }
        var input = try await engine.storedInput(for: signedIn.user, in: store)
        input.assurance = signedIn.session.assuranceState
        if let decision = engine.decide(action, context: [:], input: input, at: clock.now), !decision.allowed {
            throw decision.refusal
        }
    }
}
