import Foundation
import GatehouseWire
import Observation

/// The sheet an app shows when a plan limit stops an action (CH08 §7: a cap or the paywall):
/// the gate's message and second line, the primary action (Upgrade) and the others (Manage
/// flows, Clear inbox), straight from the server's decision. Account gates use
/// `ConversionPrompt`, verification gates the verification banner.
public struct GateSheet: Sendable, Equatable {
    /// Why the gate stopped the action, in the server's terms (e.g. `flow_cap_reached`,
    /// `credits_exhausted`), for the app's own branching; nil when the decision named none.
    public var reasonCode: String?
    /// The sheet's main text: the gate's message in the preset's words, or a plain fallback when
    /// the decision carries none.
    public var title: String
    /// The second line under ``title``; nil when the gate has none.
    public var detail: String?
    /// The first action the decision offers (Upgrade), if any.
    public var primary: GateAction?
    /// The other actions, in the server's order (e.g. Manage flows).
    public var others: [GateAction]
    /// The label of the button that closes the sheet without acting ("Not now" by default).
    public var dismissLabel: String
    /// Where the sheet shows (CH08 §9's `surface`), for the analytics its buttons send.
    public var surface: GateSurface?

    /// A sheet for `decision`, or nil when nothing stops the action or another screen handles it.
    public init?(decision: GateDecision, dismissLabel: String = "Not now", surface: GateSurface? = nil) {
        guard !decision.allowed, let gate = decision.gate, ["cap", "paywall", "soft_cap"].contains(gate) else { return nil }
        reasonCode = decision.reasonCode
        title = decision.message ?? "This needs a different plan."
        detail = decision.secondaryMessage
        primary = decision.actions.first
        others = Array(decision.actions.dropFirst())
        self.dismissLabel = dismissLabel
        self.surface = surface
    }

    /// The person tapped one of the sheet's actions: Upgrade is reported as CH08 §9
    /// `upgrade_clicked` with the sheet's surface and the plan now (the app then opens its
    /// paywall; other actions are the app's own screens).
    public func choose(_ action: GateAction, client: Gatehouse) async {
        guard action.id == "upgrade", let surface else { return }
        await client.reportUpgradeClicked(surface: surface)
    }
}

extension Gatehouse {
    func reportUpgradeClicked(surface: GateSurface) {
        track("upgrade_clicked", ["surface": .string(surface.rawValue), "planState": .string(planStateNow.rawValue)])
    }
}

/// Sign in with Apple or Google found an account with the same address whose ownership is not
/// proven (decision 8): the server answers 409 `link_confirmation_required` instead of merging.
/// This model keeps the provider's token, asks for that account's password, signs in with it and
/// links the provider, so the person ends with one account holding both.
@MainActor @Observable
public final class LinkConfirmationPrompt {
    /// The provider whose sign-in met the existing account.
    public enum Provider: String, Sendable {
        /// Sign in with Apple.
        case apple
        /// Sign in with Google.
        case google
    }

    /// Whether the prompt shows; set when a provider sign-in answers `link_confirmation_required`,
    /// cleared by ``confirm()`` once it worked and by ``cancel()``.
    public private(set) var isPresented = false
    /// The server's words (the preset's `error.link_confirmation_required`).
    public private(set) var message: String?
    /// Why the last confirmation failed (a wrong password, a refused link), in the server's
    /// words; nil when the prompt opens and after ``cancel()``.
    public private(set) var errorMessage: String?
    /// True while logging in and linking are under way; the button stays off meanwhile.
    public private(set) var isSubmitting = false
    /// The existing account's address as typed.
    public var email = ""
    /// The existing account's password as typed; emptied when the prompt closes.
    public var password = ""

    private let client: Gatehouse
    private var pending: (provider: Provider, idToken: String, rawNonce: String?)?

    /// A prompt, not yet presented, for provider sign-ins through `client`.
    public init(client: Gatehouse) { self.client = client }

    /// Signs in with the provider; true when signed in. On `link_confirmation_required` the prompt
    /// is presented instead (false); other failures throw.
    public func signIn(with provider: Provider, idToken: String, rawNonce: String?) async throws(GatehouseClientError) -> Bool {
        do throws(GatehouseClientError) {
            switch provider {
            case .apple: try await client.signInWithApple(idToken: idToken, rawNonce: rawNonce)
            case .google: try await client.signInWithGoogle(idToken: idToken, rawNonce: rawNonce)
            }
            return true
        } catch let error where error.code == .linkConfirmationRequired {
            pending = (provider, idToken, rawNonce)
            message = error.message
            errorMessage = nil
            isPresented = true
            return false
        }
    }

    /// Whether the button is on: an address and a password typed, a provider sign-in waiting,
    /// and nothing under way.
    public var canSubmit: Bool { !email.isEmpty && !password.isEmpty && !isSubmitting && pending != nil }

    /// Logs in to the existing account and links the provider to it; true when both worked.
    public func confirm() async -> Bool {
        guard canSubmit, let pending else { return false }
        isSubmitting = true
        defer { isSubmitting = false }
        do throws(GatehouseClientError) {
            _ = try await client.signIn(email: email, password: password)
            switch pending.provider {
            case .apple: _ = try await client.linkApple(idToken: pending.idToken, rawNonce: pending.rawNonce)
            case .google: _ = try await client.linkGoogle(idToken: pending.idToken, rawNonce: pending.rawNonce)
            }
            self.pending = nil
            isPresented = false
            password = ""
            return true
        } catch {
            errorMessage = error.message
            return false
        }
    }

    /// Closes the prompt: the provider's token is dropped and nothing is linked.
    public func cancel() {
        pending = nil
        isPresented = false
        password = ""
        errorMessage = nil
    }
}
