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

/// Sign-up form state that mirrors the server's password policy (from `/v1/config`), so the
/// button is disabled with the preset's message before any request (AT-07-03).
@MainActor @Observable
public final class SignUpForm {
    /// The address as typed; surrounding spaces are ignored when it is checked and sent.
    public var email = ""
    /// The password as typed, checked against the policy on every change (``passwordMessages``).
    public var password = ""
    /// True while the account is being created; the button stays off meanwhile.
    public private(set) var isSubmitting = false
    /// The server's refusal, in the preset's words.
    public private(set) var errorMessage: String?

    private let client: Gatehouse
    private let policy: PasswordPolicy
    private let copy: [String: String]
    /// The app's Terms and Privacy pages, for the links under the form (CH07 §8.3, §10).
    public let termsURL: URL?
    /// The Privacy page for the link under the form; nil when the preset names none.
    public let privacyURL: URL?

    /// A sign-up form for the preset in `configuration`.
    ///
    /// - Parameters:
    ///   - client: The client the account is created through.
    ///   - configuration: The loaded `/v1/config` (from ``Gatehouse/loadConfiguration()``): the
    ///     password rules checked on the device, the copy, and the Terms and Privacy links.
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

    /// Whether ``email`` looks like an address; the button stays off until it does.
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

    /// Whether the button is on: a valid address, a password the policy accepts, a matching
    /// confirmation where asked for, and nothing under way.
    public var canSubmit: Bool {
        isEmailValid && !password.isEmpty && passwordMessages.isEmpty && !isSubmitting
            && (!asksToConfirmPassword || confirmPassword == password)
    }

    /// The button's label in the preset's words ("Create account").
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
/// off until it has passed (AT-07-06). When the password was right and the account has a
/// second factor, the form continues into ``secondFactor``: show its code screen while it is set.
@MainActor @Observable
public final class LoginForm {
    /// The address as typed.
    public var email = ""
    /// The password as typed.
    public var password = ""
    /// True while the sign-in is under way.
    public private(set) var isSubmitting = false
    /// The last refusal in the preset's words (also the reason a second-factor step ended).
    public private(set) var errorMessage: String?
    /// While set and in the future, logging in is locked.
    public private(set) var lockedUntil: Date?
    /// The code step, set when the password was right and the account asks for a second
    /// factor; cleared when it ends (signed in, or back to this form with ``errorMessage``).
    public private(set) var secondFactor: SecondFactorModel?

    private let client: Gatehouse
    private let now: @Sendable () -> Date

    /// A form that signs in through `client`; `now` is the clock ``isLocked`` reads.
    public init(client: Gatehouse, now: @escaping @Sendable () -> Date = { Date() }) {
        self.client = client
        self.now = now
    }

    /// Whether a lockout is running now (see ``lockedUntil``).
    public var isLocked: Bool { lockedUntil.map { now() < $0 } ?? false }
    /// Whether the button is on: a valid address, a password, nothing under way, no lockout.
    public var canSubmit: Bool { EmailAddress.isValid(email) && !password.isEmpty && !isSubmitting && !isLocked }

    /// Signs in; true when signed in. False with ``secondFactor`` set when the account asks for
    /// a code, and false with ``errorMessage`` (and ``lockedUntil`` after too many failures)
    /// when refused.
    public func submit() async -> Bool {
        guard canSubmit else { return false }
        isSubmitting = true
        defer { isSubmitting = false }
        do {
            try await client.signIn(email: email, password: password)
            errorMessage = nil
            lockedUntil = nil
            return true
        } catch where error.code == .secondFactorRequired {
            errorMessage = nil
            lockedUntil = nil
            guard let step = await SecondFactorModel.pending(client: client, now: now, onFinish: { [weak self] in self?.ended($0) })
            else { return false }
            secondFactor = step
            return false
        } catch {
            errorMessage = error.message
            if let wait = error.retryAfter, error.code == .tooManyAttempts || error.code == .rateLimited {
                lockedUntil = now().addingTimeInterval(TimeInterval(wait))
            }
            return false
        }
    }

    private func ended(_ outcome: SecondFactorModel.Outcome) {
        secondFactor = nil
        switch outcome {
        case .signedIn:
            errorMessage = nil
            password = ""
        case .ended(let message):
            errorMessage = message.isEmpty ? nil : message
            password = ""
        }
    }
}

/// CH07 §6.4's banner: "Please verify your email address." with Resend and I've
/// verified, shown while the signed-in person's address is unverified.
@MainActor @Observable
public final class VerificationBanner {
    /// The signed-in person as last read by ``update()`` or ``checkVerified()``; nil before the
    /// first read, when nobody is signed in, or when the last check failed.
    public private(set) var user: UserPayload?
    /// Why the last Resend failed, in the server's words; nil after one that went through.
    public private(set) var notice: String?
    private let client: Gatehouse
    private var copy: [String: String] = [:]

    /// A banner that reads the person and copy from `client`; hidden until ``update()`` runs.
    public init(client: Gatehouse) { self.client = client }

    /// Reads the signed-in person and the preset's copy; call it when the screen appears and
    /// after a sign-in.
    public func update() async {
        user = await client.state.user
        copy = await client.copy
    }

    /// Whether to show the banner: the person has an address that is not verified yet.
    public var isVisible: Bool { user.map { $0.email != nil && !$0.emailVerified } ?? false }
    /// The banner's text in the preset's words.
    public var message: String { copy["verification.banner"] ?? "Please verify your email address." }
    /// The label of the button that sends the verification mail again.
    public var resendLabel: String { copy["verification.resend"] ?? "Resend" }
    /// The label of the button that runs ``checkVerified()``.
    public var verifiedLabel: String { copy["verification.verified"] ?? "I've verified" }

    /// Resend: sends the verification mail again; a failure sets ``notice``.
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
