import Foundation
import GatehouseCore
import GatehouseWire
import Observation

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
