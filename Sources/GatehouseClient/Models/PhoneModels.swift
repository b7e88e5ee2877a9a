import Foundation
import GatehouseCore
import GatehouseWire
import Observation

/// Signing in (or up) with a phone number: the number, then the 6-digit code texted to it (with
/// a countdown before a new code may be sent), then signed in. A new account's trial, where the
/// preset starts one, is announced as after a magic link; an account with a second factor
/// continues into ``secondFactor``.
///
/// Every refusal is shown in the server's words, which are the preset's (``errorMessage``); a
/// number that cannot be one is caught on the device with the preset's `error.invalid_phone`
/// (``numberMessage``).
///
/// ```swift
/// let signIn = PhoneSignInModel(client: gatehouse)
/// await signIn.load()
/// signIn.phone = "(415) 555-0142"
/// if await signIn.send() {
///     signIn.code = "123456"  // from the text message
///     if await signIn.submitCode() { /* signed in */ }
/// }
/// ```
@MainActor @Observable
public final class PhoneSignInModel {
    /// Which screen of the way in shows.
    public enum Step: Sendable, Equatable {
        /// The number field and the button that texts a code (``PhoneSignInModel/send()``).
        case number
        /// ``PhoneSignInModel/sentMessage``, the code field, and the button that sends a new code
        /// once ``PhoneSignInModel/secondsUntilResend`` reaches zero.
        case code
        /// The account asks for its second factor: show the code screen of
        /// ``PhoneSignInModel/secondFactor``.
        case secondFactor
        /// Signed in; `newAccount` is true when this sign-in created the account (show
        /// ``PhoneSignInModel/trialStartedMessage`` then).
        case signedIn(newAccount: Bool)
    }

    /// The number as typed (`(415) 555-0142`, or `+1 415 555 0142`); the server reads a number
    /// without `+` in the preset's default region.
    public var phone = ""
    /// The 6-digit code from the text message as typed (spaces allowed).
    public var code = ""
    /// The CAPTCHA's token, sent with the next code request; set it once ``needsCaptcha`` is.
    public var captchaToken: String?
    /// The screen to show; moves forward as the code is sent and checked, and back with
    /// ``changeNumber()``.
    public private(set) var step: Step = .number
    /// True while a request is under way.
    public private(set) var isWorking = false
    /// Why the last request failed, in the server's words (the preset's); nil after one that
    /// worked. After a send refused for a limit with a wait (`rate_limited`), the wait counted
    /// down in the preset's `phone.wait` ("You can ask for a new code in 42 s."; read it again
    /// each second, as ``resendLabel``), nil once it is over; after ``submitCode()`` with fewer
    /// than six digits, the preset's `phone.code_incomplete`.
    public var errorMessage: String? { flow.errorMessage(copy, now: now()) }
    /// The guesses the code has left after a wrong one, where the server says (by number alone
    /// it does not, so that a wrong guess tells a stranger nothing); nil otherwise.
    public var attemptsLeft: Int? { flow.attemptsLeft }
    /// When a new code may be sent to the number: after a send, the preset's pacing
    /// (`/v1/config`'s `phone_codes.resend_after_seconds`); after a refused send, the server's
    /// `retry_after`. Nil before any send.
    public var resendAvailableAt: Date? { flow.resendAvailableAt }
    /// "We texted a 6-digit code to …" in the preset's words, set when the code is sent.
    public var sentMessage: String { flow.sentMessage }
    /// Set when the server asks for a CAPTCHA before it texts another code (`captcha_required`):
    /// show it, put its token in ``captchaToken``, and send again.
    public private(set) var needsCaptcha = false
    /// The code step of an account with a second factor, on ``Step/secondFactor``; cleared when
    /// it ends (signed in, or back to the number with ``errorMessage``).
    public private(set) var secondFactor: SecondFactorModel?
    /// The trial's days left once signed in on a trial by code (nil after a second factor, and
    /// without a trial).
    public private(set) var trialDaysLeft: Int?
    /// "Your free trial has started…" once a new account signed in on a trial; nil otherwise.
    public private(set) var trialStartedMessage: String?

    private let client: Gatehouse
    private let now: @Sendable () -> Date
    private let onFinish: @MainActor (SignInResult) -> Void
    private var copy: [String: String] = [:]
    /// The number, the countdown and the tries: the part both phone models share.
    private var flow = PhoneCodeFlow()

    /// A way in on the number step; call ``load()`` for the preset's words.
    ///
    /// - Parameters:
    ///   - client: The client the person signs in through.
    ///   - now: The clock the resend countdown reads; the system's by default.
    ///   - onFinish: Called once, when the person is signed in (after the code, or after the
    ///     second factor).
    public init(
        client: Gatehouse, now: @escaping @Sendable () -> Date = { Date() }, onFinish: @escaping @MainActor (SignInResult) -> Void = { _ in }
    ) {
        self.client = client
        self.now = now
        self.onFinish = onFinish
    }

    /// Loads the preset's copy for the labels (``send()`` does it too).
    public func load() async {
        copy = await client.copy
    }

    // MARK: Words

    /// The number field's label.
    public var numberLabel: String { PhoneField.numberLabel(copy) }
    /// The button that texts a code.
    public var sendLabel: String { PhoneField.sendLabel(copy) }
    /// The code field's label.
    public var codeLabel: String { PhoneField.codeLabel(copy) }
    /// The button that sends the code (``submitCode()``).
    public var submitLabel: String { copy["phone.submit"] ?? "Continue" }
    /// The way back to the number (``changeNumber()``).
    public var changeNumberLabel: String { PhoneField.changeNumberLabel(copy) }
    /// The resend button: "Send a new code", or "Send a new code in 42 s" while the countdown
    /// runs (read it again each second, e.g. in a `TimelineView`).
    public var resendLabel: String { PhoneField.resendLabel(copy, seconds: secondsUntilResend) }
    /// The preset's `error.invalid_phone` while ``phone`` holds what cannot be a phone number
    /// (letters, or an impossible length after `+` and a calling code); nil while it is empty or
    /// may be one.
    public var numberMessage: String? { PhoneField.numberMessage(phone, copy) }
    /// "4 tries left." after a wrong code, in the preset's words; nil before one and once none are
    /// left.
    public var attemptsLeftMessage: String? { PhoneField.attemptsLeftMessage(attemptsLeft, copy) }

    // MARK: State

    /// Whole seconds until a new code may be sent: on the code step to the number the code went
    /// to, on the number step to the number typed (0 for a number no countdown holds back); 0
    /// when it may now.
    public var secondsUntilResend: Int { flow.secondsUntilResend(step == .number ? phone : nil, now: now()) }
    /// Whether the send button (``sendLabel``, ``send()``) is on: on the number step, a number
    /// that may be one, nothing under way, and no countdown running for this number.
    public var canSend: Bool { step == .number && !isWorking && flow.maySend(phone, now: now()) }
    /// Whether the resend button (``resendLabel``, ``resend()``) is on: once the countdown is
    /// over and nothing is under way. On the code step it texts the number the code went to; on
    /// the number step (after a send refused for a limit, whose wait ``resendLabel`` counts
    /// down) it is ``canSend``, so one button reading ``resendLabel`` and ``canResend`` turns on
    /// when its label stops counting.
    public var canResend: Bool {
        switch step {
        case .code: !isWorking && secondsUntilResend == 0
        case .number: canSend
        case .secondFactor, .signedIn: false
        }
    }
    /// Whether the code is complete: on the code step, six digits typed (spaces allowed),
    /// nothing under way. ``submitCode()`` with fewer says so in ``errorMessage`` and sends
    /// nothing.
    public var canSubmitCode: Bool { step == .code && !isWorking && CodeField.digits(code).count == 6 }

    // MARK: Actions

    /// Texts a code to ``phone``; true when the server took it (the step is then `.code`).
    @discardableResult
    public func send() async -> Bool {
        guard canSend else { return false }
        return await requestCode(to: PhoneField.trimmed(phone))
    }

    /// Texts a new code to the same number, once the countdown is over; true when sent. The
    /// code sent before stops working. On the number step it is ``send()``.
    @discardableResult
    public func resend() async -> Bool {
        guard canResend else { return false }
        guard step == .code, let sentTo = flow.sentTo else { return await send() }
        return await requestCode(to: sentTo)
    }

    /// Back to the number (a typo in it). A countdown keeps holding back the number it was for.
    public func changeNumber() {
        step = .number
        code = ""
        flow.say(nil)
        flow.attemptsLeft = nil
        needsCaptcha = false
    }

    /// The code typed from the text message; true when signed in. A wrong code empties the field
    /// and says why (``errorMessage``, ``attemptsLeft``); an account with a second factor moves
    /// to ``Step/secondFactor`` (false until that step signs in).
    @discardableResult
    public func submitCode() async -> Bool {
        guard flow.codeIsComplete(code, onCodeStep: step == .code && !isWorking, copy: copy), let sentTo = flow.sentTo else { return false }
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            let result = try await client.verifyPhoneCode(phone: sentTo, code: CodeField.digits(code))
            code = ""
            let trial = await TrialWelcome.after(result, client: client)
            finish(result, trial: trial)
            return true
        } catch {
            code = ""
            guard error.code == .secondFactorRequired else {
                flow.say(error.message)
                flow.wrongCode(error)
                return false
            }
            guard
                let codeStep = await SecondFactorModel.pending(
                    client: client, now: now, onFinish: { [weak self] outcome in self?.secondFactorEnded(outcome) })
            else {
                flow.say(error.message)
                return false
            }
            flow.say(nil)
            secondFactor = codeStep
            step = .secondFactor
            return false
        }
    }

    // MARK: Internals

    private func requestCode(to number: String) async -> Bool {
        isWorking = true
        defer { isWorking = false }
        copy = await client.copy
        do throws(GatehouseClientError) {
            try await client.sendPhoneCode(phone: number, captchaToken: captchaToken)
            flow.sent(to: number, copy: copy, pacing: await PhoneField.pacing(client), now: now())
            code = ""
            captchaToken = nil
            needsCaptcha = false
            step = .code
            return true
        } catch {
            needsCaptcha = error.code == .captchaRequired
            flow.refused(error, number: number, now: now())
            return false
        }
    }

    private func secondFactorEnded(_ outcome: SecondFactorModel.Outcome) {
        secondFactor = nil
        switch outcome {
        case .signedIn(let user):
            // An account with a second factor was there before this sign-in: never a new one.
            finish(SignInResult(user: user, created: false), trial: TrialWelcome())
        case .ended(let message):
            flow.say(message.isEmpty ? nil : message)
            step = .number
        }
    }

    private func finish(_ result: SignInResult, trial: TrialWelcome) {
        flow.say(nil)
        flow.attemptsLeft = nil
        trialDaysLeft = trial.daysLeft
        trialStartedMessage = trial.startedMessage
        step = .signedIn(newAccount: result.created)
        onFinish(result)
    }
}
