import Foundation
import GatehouseCore
import GatehouseWire
import Observation

/// The prompt that answers a refusal for want of a stronger sign-in: a gate's decision (from
/// `decide` or `check`) or a call's error with `mfa_required` or `reauthentication_required`.
///
/// With an authenticator app on the account it asks for a code (or a recovery code) and steps
/// the session up in place: the same session, new tokens at `aal2` with a fresh sign-in time,
/// which answers both reasons. Without one, `mfa_required` leads to turning one on
/// (`route == .enrollFactor`) and `reauthentication_required` to signing in again
/// (`.signInAgain`), which the app's own screens do.
@MainActor @Observable
public final class StepUpPrompt {
    /// Why the action was refused.
    public enum Reason: String, Sendable {
        /// `mfa_required`: the session has not proved a second factor.
        case secondFactor = "mfa_required"
        /// `reauthentication_required`: the last sign-in is too old for the action.
        case recentSignIn = "reauthentication_required"
    }

    /// What the prompt shows.
    public enum Route: Sendable, Equatable {
        /// Until `load()` has found the account's factors.
        case loading
        /// The code field (`code`, `factorID`, `usesRecoveryCode`) and Verify.
        case code
        /// The account has no authenticator app: set one up (`Gatehouse.enrollTOTP`), which
        /// raises the session once confirmed.
        case enrollFactor
        /// The account has no authenticator app: only signing in again answers.
        case signInAgain
    }

    /// Why the action was refused; with the account's factors it decides ``route``.
    public let reason: Reason
    /// The refusal's words: the gate's message from the preset, or the server's error message.
    public let message: String
    /// What the prompt shows; ``StepUpPrompt/Route/loading`` until ``load()`` has found the
    /// account's factors.
    public private(set) var route: Route = .loading
    /// The authenticator apps a code may come from.
    public private(set) var factors: [MFAFactorSummary] = []
    /// The factor the code is from; the first after `load()`.
    public var factorID: String?
    /// What the person typed: six digits, or a recovery code when `usesRecoveryCode`.
    public var code = ""
    /// Whether ``code`` is one of the account's recovery codes instead of an app's code;
    /// switching empties ``code``.
    public var usesRecoveryCode = false {
        didSet { if oldValue != usesRecoveryCode { code = "" } }
    }
    /// True while a code is being checked.
    public private(set) var isWorking = false
    /// The server's refusal of the last code, in the preset's words; after ``verify()`` with a
    /// code that is not whole, the preset's `mfa.code_incomplete` or
    /// `mfa.recovery_code_incomplete`, and nothing is sent.
    public private(set) var errorMessage: String?
    /// Seconds to wait after too many wrong codes.
    public private(set) var retryAfter: Int?
    /// Set once the session was stepped up: retry the refused action.
    public private(set) var isComplete = false

    private let client: Gatehouse
    private var copy: [String: String] = [:]

    /// A prompt for a refused gate decision; nil when the decision is not a step-up refusal.
    public init?(client: Gatehouse, decision: GateDecision) {
        guard !decision.allowed, let reason = decision.reasonCode.flatMap(Reason.init(rawValue:)) else { return nil }
        self.client = client
        self.reason = reason
        self.message = decision.message ?? ""
    }

    /// A prompt for a refused call; nil when the error is not `mfa_required` or
    /// `reauthentication_required`.
    public init?(client: Gatehouse, error: GatehouseClientError) {
        guard let reason = Reason(rawValue: error.code.rawValue) else { return nil }
        self.client = client
        self.reason = reason
        self.message = error.message
    }

    /// Finds the account's authenticator apps and picks the route.
    public func load() async {
        copy = await client.copy
        do throws(GatehouseClientError) {
            factors = try await client.stepUpFactors()
            if factorID == nil || !factors.contains(where: { $0.id == factorID }) { factorID = factors.first?.id }
            route = !factors.isEmpty ? .code : reason == .secondFactor ? .enrollFactor : .signInAgain
        } catch {
            errorMessage = error.message
        }
    }

    /// The prompt's heading in the preset's words.
    public var title: String { copy["mfa.step_up_title"] ?? "Confirm it's you" }
    /// The code field's label: the app's 6-digit code, or a recovery code when
    /// ``usesRecoveryCode``.
    public var codeLabel: String { CodeField.label(copy, recovery: usesRecoveryCode) }
    /// The switch between the app's code and a recovery code.
    public var switchLabel: String { CodeField.switchLabel(copy, recovery: usesRecoveryCode) }
    /// The label of the button that runs ``verify()``.
    public var verifyLabel: String { CodeField.verifyLabel(copy) }
    /// The label of the button that closes the prompt; the refused action stays undone.
    public var cancelLabel: String { CodeField.cancelLabel(copy) }
    /// What `.enrollFactor` and `.signInAgain` say under the message.
    public var guidance: String {
        switch route {
        case .enrollFactor: copy["mfa.enroll_required"] ?? "Set up an authenticator app to continue."
        case .signInAgain: copy["mfa.sign_in_again"] ?? "Sign out, then sign in again to continue."
        case .loading, .code: ""
        }
    }

    /// Verify is on once the field holds six digits (spaces allowed) or a whole recovery code (16
    /// letters and digits, hyphens and spaces ignored) and nothing is under way.
    public var isVerifyEnabled: Bool {
        guard route == .code, !isWorking, !isComplete else { return false }
        return (usesRecoveryCode || factorID != nil) && CodeField.isComplete(code, recovery: usesRecoveryCode)
    }

    /// Sends the code; true when the session was stepped up. A refused code empties the field
    /// and says why (`errorMessage`, and `retryAfter` when locked out).
    @discardableResult
    public func verify() async -> Bool {
        guard isVerifyEnabled else {
            if route == .code, !isWorking, !isComplete, !CodeField.isComplete(code, recovery: usesRecoveryCode) {
                errorMessage = CodeField.incompleteMessage(copy, recovery: usesRecoveryCode)
            }
            return false
        }
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            if usesRecoveryCode {
                try await client.stepUp(recoveryCode: code)
            } else if let factorID {
                try await client.stepUp(factorID: factorID, code: CodeField.digits(code))
            }
            isComplete = true
            errorMessage = nil
            retryAfter = nil
        } catch {
            errorMessage = error.message
            retryAfter = error.retryAfter
        }
        code = ""
        return isComplete
    }
}
