import Foundation
import GatehouseCore
import GatehouseWire
import Observation

/// Handz's auth routes (CH07 §8), by their route ids, plus the app's main screen.
public enum AuthRoute: String, Sendable, Equatable, CaseIterable {
    /// The welcome gate, the first screen when nobody is signed in: the provider buttons, "Log in"
    /// and "Try without account" (CH07 §8.1).
    case welcome = "auth/welcome"
    /// After "Continue with Email": "Create account with email" or "Log in with email"
    /// (CH07 §8.2).
    case emailChoice = "auth/email_choice"
    /// The email sign-up form that ``SignUpForm`` drives (CH07 §8.3).
    case emailSignup = "auth/email_signup"
    /// The email log-in form that ``LoginForm`` drives, with "Forgot password?" (CH07 §8.4).
    case emailLogin = "auth/email_login"
    /// The address to send a password-reset link to (CH07 §8.5).
    case forgotPassword = "auth/forgot_password"
    /// Display name, handle and avatar after a sign-up, driven by ``ProfileSetupModel``
    /// (CH07 §8.6).
    case profileSetup = "onboarding/profile_setup"
    /// The three ``Goal`` cards shown after profile set-up (CH07 §8.7).
    case goalsRouter = "onboarding/goals_router"
    /// The guest's home after "Try without account": demo flows and "Create an account to build
    /// yours" (CH07 §8.8).
    case demoHome = "home/demo"
    /// The signed-in app (outside CH07's routes).
    case main = "home/main"
    /// After "Send reset link" succeeded: the confirmation with the way back to log-in (CH07 §8.5).
    case forgotPasswordSent = "auth/forgot_password_sent"
    /// Where the goals router's cards lead (CH07 §8.7), and the demo home's flows (§8.8).
    /// This one is the new flow that "Build a gameplan" opens.
    case flowCreate = "flow/create"
    /// The practice set-up that "Practice a gameplan" opens when the plan allows it.
    case practiceSetup = "practice/setup"
    /// The example flows that "Browse examples" opens.
    case libraryDemo = "library/demo"
    /// A demo flow opened from the demo home, view-only.
    case flowDetailDemo = "flow/detail_demo"
}

/// The goals router's three cards (CH07 §8.7).
public enum Goal: String, Sendable, CaseIterable {
    /// "Build a gameplan": the app opens on a new flow (``AuthRoute/flowCreate``).
    case build
    /// "Practice a gameplan": the practice set-up, or the paywall when the plan does not allow it.
    case practice
    /// "Browse examples": the app opens on the example flows (``AuthRoute/libraryDemo``).
    case browse
}

/// Which screen shows, for a `NavigationStack(path:)`: `root` and the pushed `path`. Signing in
/// or out replaces both, so back navigation never reaches the other side (AT-07-08).
@MainActor @Observable
public final class AuthCoordinator {
    /// The stack's bottom screen: the welcome gate until ``start()`` picks the first one; replaced
    /// (and ``path`` emptied) on sign-up, sign-in, sign-out and "Try without account".
    public private(set) var root: AuthRoute = .welcome
    /// True until ``start()`` (or a sign-in) has picked the first screen: show the launch screen meanwhile, not
    /// ``root``, so a person with a saved session never sees the welcome gate flash by.
    public private(set) var isStarting = true
    /// The screens pushed on ``root``, for the `NavigationStack`'s path binding (Back pops it).
    public var path: [AuthRoute] = []
    /// No network: the welcome banner shows and provider buttons are off (CH07 §8.1).
    public private(set) var isOffline = false
    /// After an expired session, the provider to highlight on the re-auth screen (CH07 §7.1).
    public private(set) var highlightedProvider: SignInProvider?
    /// The sign-in methods the preset enables (`/v1/config`), in its order.
    public private(set) var methods: [String] = []

    /// The client the coordinator signs in and out through; the screens' own models take the
    /// same one.
    public let client: Gatehouse
    private var copy: [String: String] = [:]

    /// A coordinator on the welcome gate; call ``start()`` at launch to pick the first screen.
    public init(client: Gatehouse) {
        self.client = client
    }

    /// The welcome gate's offline banner in the preset's words; nil while online.
    public var offlineBanner: String? {
        isOffline ? copy["welcome.offline_banner"] ?? "You're offline. Connect to the internet to sign in." : nil
    }
    /// Provider buttons work only online; "Try without account" always does.
    public var providerButtonsEnabled: Bool { !isOffline }

    /// The welcome gate's buttons (CH07 §8.1) for the methods the preset enables, labelled with
    /// its copy; before any configuration was ever loaded (a first launch offline, decision 25),
    /// Apple, Google and Email with CH07's words.
    public var welcomeButtons: [GateAction] {
        var buttons = providerButtons(enabled: methods.isEmpty ? ["apple", "google", "email_password"] : methods, copy: copy)
        buttons.append(GateAction(id: "log_in", label: copy["welcome.log_in"] ?? "Log in"))
        buttons.append(GateAction(id: "try_without_account", label: copy["welcome.try_without_account"] ?? "Try without account"))
        return buttons
    }

    /// "Sign in with a passkey", when the preset enables passkeys: shown beside the welcome
    /// gate's buttons (which stay CH07 §8.1's set) and on the log-in screen.
    public var passkeyButton: GateAction? {
        methods.contains("passkey") ? GateAction(id: "passkey", label: copy["welcome.passkey"] ?? "Sign in with a passkey") : nil
    }
    /// Why the last passkey sign-in failed, in the preset's words; nil after a cancelled sheet.
    public private(set) var passkeyError: String?

    /// The passkey button: the device signs the server's challenge with a passkey the person
    /// picks (no address needed), and a signed-in person goes to the app. True when signed in.
    public func signInWithPasskey(using device: some PasskeyAuthenticator) async -> Bool {
        guard passkeyButton != nil, !isOffline else { return false }
        do throws(GatehouseClientError) {
            try await client.signInWithPasskey(using: device)
            passkeyError = nil
            didSignIn()
            return true
        } catch {
            passkeyError = error.code == .passkeyCancelled ? nil : error.message
            if error.isNetworkFailure { isOffline = true }
            return false
        }
    }

    /// At launch: a session goes to the app, none to the welcome gate, an expired one to the
    /// welcome gate with the last provider highlighted.
    public func start() async {
        if let configuration = try? await client.loadConfiguration() {
            methods = configuration.signInMethods
        }
        copy = await client.copy
        let hadSession = await client.hasSavedSession
        let lastProvider = await client.lastProvider
        switch await client.restore() {
        case .restored, .offline:
            show(.main)
        case .signedOut(let reason):
            highlightedProvider = hadSession && reason != .reinstalled ? lastProvider : nil
            show(.welcome)
        case .storageLocked:
            // Cancelled while the Keychain was locked: the splash stays until the next start().
            break
        }
        isOffline = await client.isOffline
    }

    /// Sets the offline state (from the app's reachability monitor).
    public func setOffline(_ offline: Bool) { isOffline = offline }

    private func show(_ route: AuthRoute) {
        isStarting = false
        root = route
        path = []
    }

    // Welcome gate and email paths.
    /// "Continue with Email": pushes the choice between signing up and logging in.
    public func continueWithEmail() { path.append(.emailChoice) }
    /// "Create account with email": pushes the sign-up form.
    public func chooseSignUp() { path.append(.emailSignup) }
    /// "Log in with email": pushes the log-in form.
    public func chooseLogIn() { path.append(.emailLogin) }
    /// The log-in form's "Forgot password?": pushes the reset-link screen.
    public func forgotPassword() { path.append(.forgotPassword) }
    /// "Try without account": the demo home becomes the root, so Back does not return to the
    /// welcome gate.
    public func tryWithoutAccount() { show(.demoHome) }
    /// From the demo home's "Create an account to build yours".
    public func createAccount() { show(.welcome) }

    /// After a sign-up: profile setup, with the verification banner active (CH07 §8.3).
    public func didSignUp() { show(.profileSetup) }
    /// After a log-in or a provider sign-in: the app.
    public func didSignIn() {
        highlightedProvider = nil
        show(.main)
    }
    /// Profile setup's Continue or Skip.
    public func finishProfileSetup() { path.append(.goalsRouter) }
    /// The goals router's choice leaves onboarding.
    public func finishOnboarding() { show(.main) }

    /// "Send reset link" succeeded: the confirmation screen.
    public func resetLinkSent() { path.append(.forgotPasswordSent) }
    /// The confirmation's "Back to log in": the stack returns to the log-in screen.
    public func backToLogIn() {
        if let index = path.firstIndex(of: .emailLogin) {
            path = Array(path[...index])
        } else {
            path = [.emailChoice, .emailLogin]
        }
    }

    /// A card of the goals router (CH07 §8.7): the app opens on home with the chosen screen on
    /// top. Practice may be paywalled (CH25): the gate decision decides whether the practice
    /// set-up or the paywall shows; the returned decision is the one to show (nil: allowed).
    @discardableResult
    public func choose(_ goal: Goal) async -> GateDecision? {
        switch goal {
        case .build:
            show(.main)
            path = [.flowCreate]
            return nil
        case .browse:
            show(.main)
            path = [.libraryDemo]
            return nil
        case .practice:
            let decision = try? await client.decide("practice_saved_flow")
            show(.main)
            if let decision, !decision.allowed { return decision }
            path = [.practiceSetup]
            return nil
        }
    }

    /// The demo home's "Open demo flow": the flow, view-only (CH07 §8.8).
    public func openDemoFlow() { path.append(.flowDetailDemo) }

    /// Logout: the session ends and the stack resets to the welcome gate.
    public func signOut() async {
        try? await client.signOut()
        highlightedProvider = nil
        show(.welcome)
    }
}
