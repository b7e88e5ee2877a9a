import Foundation
import GatehouseCore
import GatehouseWire
import Observation

/// Handz's auth routes (CH07 §8), by their route ids, plus the app's main screen.
public enum AuthRoute: String, Sendable, Equatable, CaseIterable {
    case welcome = "auth/welcome"
    case emailChoice = "auth/email_choice"
    case emailSignup = "auth/email_signup"
    case emailLogin = "auth/email_login"
    case forgotPassword = "auth/forgot_password"
    case profileSetup = "onboarding/profile_setup"
    case goalsRouter = "onboarding/goals_router"
    case demoHome = "home/demo"
    /// The signed-in app (outside CH07's routes).
    case main = "home/main"
    /// After "Send reset link" succeeded: the confirmation with the way back to log-in (CH07 §8.5).
    case forgotPasswordSent = "auth/forgot_password_sent"
    /// Where the goals router's cards lead (CH07 §8.7), and the demo home's flows (§8.8).
    case flowCreate = "flow/create"
    case practiceSetup = "practice/setup"
    case libraryDemo = "library/demo"
    case flowDetailDemo = "flow/detail_demo"
}

/// The goals router's three cards (CH07 §8.7).
public enum Goal: String, Sendable, CaseIterable {
    case build, practice, browse
}

/// Which screen shows, for a `NavigationStack(path:)`: `root` and the pushed `path`. Signing in
/// or out replaces both, so back navigation never reaches the other side (AT-07-08).
@MainActor @Observable
public final class AuthCoordinator {
    public private(set) var root: AuthRoute = .welcome
    public var path: [AuthRoute] = []
    /// No network: the welcome banner shows and provider buttons are off (CH07 §8.1).
    public private(set) var isOffline = false
    /// After an expired session, the provider to highlight on the re-auth screen (CH07 §7.1).
    public private(set) var highlightedProvider: SignInProvider?
    /// The sign-in methods the preset enables (`/v1/config`), in its order.
    public private(set) var methods: [String] = []

    public let client: Gatehouse
    private var copy: [String: String] = [:]

    public init(client: Gatehouse) {
        self.client = client
    }

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
        }
        isOffline = await client.isOffline
    }

    /// Sets the offline state (from the app's reachability monitor).
    public func setOffline(_ offline: Bool) { isOffline = offline }

    private func show(_ route: AuthRoute) {
        root = route
        path = []
    }

    // Welcome gate and email paths.
    public func continueWithEmail() { path.append(.emailChoice) }
    public func chooseSignUp() { path.append(.emailSignup) }
    public func chooseLogIn() { path.append(.emailLogin) }
    public func forgotPassword() { path.append(.forgotPassword) }
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

/// Sign-up form state that mirrors the server's password policy (from `/v1/config`), so the
/// button is disabled with the preset's message before any request (AT-07-03).
@MainActor @Observable
public final class SignUpForm {
    public var email = ""
    public var password = ""
    public private(set) var isSubmitting = false
    /// The server's refusal, in the preset's words.
    public private(set) var errorMessage: String?

    private let client: Gatehouse
    private let policy: PasswordPolicy
    private let copy: [String: String]
    /// The app's Terms and Privacy pages, for the links under the form (CH07 §8.3, §10).
    public let termsURL: URL?
    public let privacyURL: URL?

    public init(client: Gatehouse, configuration: PublicConfiguration) {
        self.client = client
        copy = configuration.copy
        termsURL = configuration.app.termsURL.flatMap(URL.init(string:))
        privacyURL = configuration.app.privacyURL.flatMap(URL.init(string:))
        // The blocklist and the breached check stay on the server; length and classes are here.
        policy = PasswordPolicy(settings: configuration.passwordPolicy, blocklist: [], copy: configuration.copy)
    }

    /// What is wrong with the password now, one message per rule.
    public var passwordMessages: [String] {
        password.isEmpty ? [] : policy.problems(password, context: [email]).map(\.message)
    }

    public var isEmailValid: Bool { EmailAddress.isValid(email.trimmingCharacters(in: .whitespaces)) }

    /// The password typed a second time, for presets whose form has a confirmation field (their
    /// copy names its mismatch message, as SyncWell's does).
    public var confirmPassword = ""

    /// Whether the form shows a confirmation field.
    public var asksToConfirmPassword: Bool { copy["signup.confirm_password_mismatch"] != nil }

    /// The mismatch message once the confirmation has been typed and differs.
    public var confirmationMessage: String? {
        guard asksToConfirmPassword, !confirmPassword.isEmpty, confirmPassword != password else { return nil }
        return copy["signup.confirm_password_mismatch"]
    }

    public var canSubmit: Bool {
        isEmailValid && !password.isEmpty && passwordMessages.isEmpty && !isSubmitting
            && (!asksToConfirmPassword || confirmPassword == password)
    }

    public var buttonTitle: String { copy["signup.button"] ?? "Create account" }

    /// Creates the account; true when signed in.
    public func submit() async -> Bool {
        guard canSubmit else { return false }
        isSubmitting = true
        defer { isSubmitting = false }
        do {
            try await client.signUp(email: email.trimmingCharacters(in: .whitespaces), password: password)
            errorMessage = nil
            return true
        } catch {
            errorMessage = error.code == .emailInUse ? copy["error.email_in_use"] ?? error.message : error.message
            return false
        }
    }
}

/// Log-in form state; after too many failures the server's wait is shown and the button stays
/// off until it has passed (AT-07-06).
@MainActor @Observable
public final class LoginForm {
    public var email = ""
    public var password = ""
    public private(set) var isSubmitting = false
    public private(set) var errorMessage: String?
    /// While set and in the future, logging in is locked.
    public private(set) var lockedUntil: Date?

    private let client: Gatehouse
    private let now: @Sendable () -> Date

    public init(client: Gatehouse, now: @escaping @Sendable () -> Date = { Date() }) {
        self.client = client
        self.now = now
    }

    public var isLocked: Bool { lockedUntil.map { now() < $0 } ?? false }
    public var canSubmit: Bool { EmailAddress.isValid(email) && !password.isEmpty && !isSubmitting && !isLocked }

    public func submit() async -> Bool {
        guard canSubmit else { return false }
        isSubmitting = true
        defer { isSubmitting = false }
        do {
            try await client.signIn(email: email, password: password)
            errorMessage = nil
            lockedUntil = nil
            return true
        } catch {
            errorMessage = error.message
            if let wait = error.retryAfter, error.code == .tooManyAttempts || error.code == .rateLimited {
                lockedUntil = now().addingTimeInterval(TimeInterval(wait))
            }
            return false
        }
    }
}

/// CH07 §6.4's banner: "Please verify your email address." with Resend and I've
/// verified, shown while the signed-in person's address is unverified.
@MainActor @Observable
public final class VerificationBanner {
    public private(set) var user: UserPayload?
    public private(set) var notice: String?
    private let client: Gatehouse
    private var copy: [String: String] = [:]

    public init(client: Gatehouse) { self.client = client }

    public func update() async {
        user = await client.state.user
        copy = await client.copy
    }

    public var isVisible: Bool { user.map { $0.email != nil && !$0.emailVerified } ?? false }
    public var message: String { copy["verification.banner"] ?? "Please verify your email address." }
    public var resendLabel: String { copy["verification.resend"] ?? "Resend" }
    public var verifiedLabel: String { copy["verification.verified"] ?? "I've verified" }

    public func resend() async {
        do {
            try await client.resendVerification()
            notice = nil
        } catch {
            notice = error.message
        }
    }

    /// "I've verified": asks the server; the banner goes once it agrees.
    public func checkVerified() async {
        user = try? await client.refreshUser()
    }
}
