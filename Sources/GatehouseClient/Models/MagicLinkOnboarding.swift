import Foundation
import GatehouseCore
import GatehouseWire
import Observation

/// Hannah Health's way in: the address, then "check your email", then the link opened in the
/// app or the 6-digit code typed (for a link opened in another browser), then signed in; a new
/// account's 7-day trial starts with it, and the model says so.
///
/// Where the preset turns phone sign-in on (Hannah's phase 3), the address step also offers a
/// phone number (``phoneLabel``): ``usePhone()`` makes the ``PhoneSignInModel`` whose screens
/// show while ``phoneSignIn`` is set, and its sign-in ends this way in as a magic link does.
@MainActor @Observable
public final class MagicLinkOnboarding {
    /// Which screen of the way in shows.
    public enum Step: Sendable, Equatable {
        /// The address field and the button that sends the link (``MagicLinkOnboarding/send()``).
        case email
        /// "Check your email" (``MagicLinkOnboarding/sentMessage``) and the 6-digit code field.
        case sent
        /// Signed in; `newAccount` is true when this sign-in created the account (show
        /// ``MagicLinkOnboarding/trialStartedMessage`` then).
        case signedIn(newAccount: Bool)
    }

    /// The address as typed; surrounding spaces are ignored when it is checked and sent.
    public var email = ""
    /// The 6-digit code from the mail as typed, for a link opened in another browser.
    public var code = ""
    /// The screen to show; moves forward as the link is sent and the person signs in, and back
    /// with ``changeAddress()``.
    public private(set) var step: Step = .email
    /// True while a request is under way (sending, opening the link, checking the code, a passkey).
    public private(set) var isWorking = false
    /// Why the last request failed, in the server's words; nil after one that worked and after a
    /// cancelled passkey sheet.
    public private(set) var errorMessage: String?
    /// The trial's days left once signed in on a trial (`trialStarted` is shown for a new one).
    public private(set) var trialDaysLeft: Int?

    private let client: Gatehouse
    private let now: @Sendable () -> Date

    /// A way in on the address step; call ``start()`` to read the preset.
    ///
    /// - Parameters:
    ///   - client: The client the person signs in through.
    ///   - now: The clock the phone way in's resend countdown reads; the system's by default.
    public init(client: Gatehouse, now: @escaping @Sendable () -> Date = { Date() }) {
        self.client = client
        self.now = now
    }

    /// "Sign in with a passkey" on the address step, when the preset enables passkeys (`start()`
    /// reads it): a returning person signs in without waiting for a mail.
    public private(set) var passkeyLabel: String?

    /// "Sign in with a phone number" on the address step, when the preset enables phone
    /// sign-in (`start()` reads it); nil otherwise.
    public private(set) var phoneLabel: String?
    /// Whether the address step offers a phone number instead (``phoneLabel``).
    public var offersPhone: Bool { phoneLabel != nil }
    /// The phone way in, while the person uses it (``usePhone()``): show its screens instead of
    /// the address step's. Cleared when it signs in (the step is then `.signedIn`) and by
    /// ``useEmail()``.
    public private(set) var phoneSignIn: PhoneSignInModel?

    /// Reads the preset: whether passkeys and phone numbers are offered, and in which words.
    public func start() async {
        let methods = await client.enabledMethods()
        passkeyLabel = methods.contains("passkey") ? await client.text("welcome.passkey", "Sign in with a passkey") : nil
        phoneLabel = methods.contains("phone") ? await client.text("welcome.phone", "Sign in with a phone number") : nil
    }

    /// The phone button on the address step: the phone way in, with the preset's words loaded;
    /// nil when the preset does not offer it. Its sign-in moves this model to `.signedIn`, with
    /// the trial announced as after a magic link.
    @discardableResult
    public func usePhone() async -> PhoneSignInModel? {
        guard offersPhone, step == .email else { return nil }
        if let phoneSignIn { return phoneSignIn }
        let model = PhoneSignInModel(client: client, now: now) { [weak self] result in self?.phoneSignedIn(result) }
        phoneSignIn = model
        errorMessage = nil
        await model.load()
        return model
    }

    /// Back from the phone way in to the address.
    public func useEmail() {
        phoneSignIn = nil
    }

    private func phoneSignedIn(_ result: SignInResult) {
        guard let phone = phoneSignIn else { return }
        errorMessage = nil
        trialDaysLeft = phone.trialDaysLeft
        trialStartedMessage = phone.trialStartedMessage
        phoneSignIn = nil
        step = .signedIn(newAccount: result.created)
    }

    /// The passkey button; true when signed in (then the step is `.signedIn`).
    public func signInWithPasskey(using device: some PasskeyAuthenticator) async -> Bool {
        guard passkeyLabel != nil, !isWorking else { return false }
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            await finish(try await client.signInWithPasskey(using: device))
            return true
        } catch {
            errorMessage = error.code == .passkeyCancelled ? nil : error.message
            return false
        }
    }

    /// Whether the button that sends the link is on: the address looks valid and nothing is
    /// under way.
    public var canSend: Bool { EmailAddress.isValid(email.trimmingCharacters(in: .whitespaces)) && !isWorking }
    /// Whether the code can be sent: on the "check your email" step, six digits typed (spaces
    /// allowed), nothing under way. ``submitCode()`` with fewer says so in ``errorMessage`` (the
    /// preset's `magic.code_incomplete`) and sends nothing.
    public var canSubmitCode: Bool { step == .sent && CodeField.digits(code).count == 6 && !isWorking }

    /// "Check your email" with the address the link went to, in the preset's words; set when
    /// the link is sent.
    public private(set) var sentMessage = ""

    /// "Your 7-day free trial has started…" once a new account signed in on a trial; nil otherwise.
    public private(set) var trialStartedMessage: String?

    /// Sends (or sends again) the link; true when the server took it.
    public func send() async -> Bool {
        guard canSend else { return false }
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            let address = email.trimmingCharacters(in: .whitespaces)
            try await client.sendMagicLink(email: address)
            sentMessage = await client.text("magic.sent", "We sent a sign-in link to {email}. Open it on this phone, or type the 6-digit code.")
                .replacingOccurrences(of: "{email}", with: address)
            errorMessage = nil
            step = .sent
            return true
        } catch {
            errorMessage = error.message
            return false
        }
    }

    /// The app was opened with `url` (the link from the mail); true when it signed in. Any other
    /// URL answers false and sends nothing.
    public func open(_ url: URL) async -> Bool {
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            guard case .signedIn(let result) = try await client.handle(url: url) else { return false }
            await finish(result)
            return true
        } catch {
            errorMessage = error.message
            return false
        }
    }

    /// The code typed from the mail; true when it signed in. An account with a second factor
    /// answers false with the client's state `.secondFactorRequired`: continue with
    /// `SecondFactorModel.pending(client:)`.
    public func submitCode() async -> Bool {
        guard canSubmitCode else {
            if step == .sent, !isWorking {
                errorMessage = await client.text("magic.code_incomplete", "Enter the 6-digit code from the email.")
            }
            return false
        }
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            let typed = CodeField.digits(code)
            await finish(try await client.verifyMagicLink(email: email.trimmingCharacters(in: .whitespaces), code: typed))
            return true
        } catch {
            errorMessage = error.message
            return false
        }
    }

    /// Back to the address (a typo in it).
    public func changeAddress() {
        step = .email
        code = ""
        errorMessage = nil
    }

    private func finish(_ result: SignInResult) async {
        errorMessage = nil
        let trial = await TrialWelcome.after(result, client: client)
        trialDaysLeft = trial.daysLeft
        trialStartedMessage = trial.startedMessage
        step = .signedIn(newAccount: result.created)
    }
}

/// What a sign-in says of the trial, whichever way in it took (a magic link, a phone number):
/// the days left on a trial, and the preset's "trial started" words for a new account on one.
struct TrialWelcome: Sendable, Equatable {
    var daysLeft: Int?
    var startedMessage: String?

    /// Reads the snapshot after `result`; a new account on a trial is reported as CH08 §9's
    /// `trial_started` (the server started the trial with the account, as Hannah's preset does).
    static func after(_ result: SignInResult, client: Gatehouse) async -> TrialWelcome {
        let snapshot = try? await client.entitlements()
        let daysLeft = snapshot?.plan == .trial ? snapshot?.trial?.daysLeft : nil
        let started = result.created && daysLeft != nil ? await client.text("trial.started", "Your free trial has started.") : nil
        if started != nil { await client.track("trial_started") }
        return TrialWelcome(daysLeft: daysLeft, startedMessage: started)
    }
}
