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
    /// worked.
    public private(set) var errorMessage: String?
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

    /// Whole seconds until a new code may be sent to the number; 0 when it may now.
    public var secondsUntilResend: Int { flow.secondsUntilResend(now: now()) }
    /// Whether the send button is on: on the number step, a number that may be one, nothing
    /// under way, and no countdown running for this number.
    public var canSend: Bool { step == .number && !isWorking && flow.maySend(phone, now: now()) }
    /// Whether the resend button is on: on the code step, once the countdown is over.
    public var canResend: Bool { step == .code && !isWorking && secondsUntilResend == 0 }
    /// Whether the code can be sent: on the code step, six digits typed, nothing under way.
    public var canSubmitCode: Bool { step == .code && !isWorking && CodeField.digits(code).count == 6 }

    // MARK: Actions

    /// Texts a code to ``phone``; true when the server took it (the step is then `.code`).
    @discardableResult
    public func send() async -> Bool {
        guard canSend else { return false }
        return await requestCode(to: PhoneField.trimmed(phone))
    }

    /// Texts a new code to the same number, once the countdown is over; true when sent. The
    /// code sent before stops working.
    @discardableResult
    public func resend() async -> Bool {
        guard canResend, let sentTo = flow.sentTo else { return false }
        return await requestCode(to: sentTo)
    }

    /// Back to the number (a typo in it). A countdown keeps holding back the number it was for.
    public func changeNumber() {
        step = .number
        code = ""
        errorMessage = nil
        flow.attemptsLeft = nil
        needsCaptcha = false
    }

    /// The code typed from the text message; true when signed in. A wrong code empties the field
    /// and says why (``errorMessage``, ``attemptsLeft``); an account with a second factor moves
    /// to ``Step/secondFactor`` (false until that step signs in).
    @discardableResult
    public func submitCode() async -> Bool {
        guard canSubmitCode, let sentTo = flow.sentTo else { return false }
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
                errorMessage = error.message
                flow.wrongCode(error)
                return false
            }
            guard
                let codeStep = await SecondFactorModel.pending(
                    client: client, now: now, onFinish: { [weak self] outcome in self?.secondFactorEnded(outcome) })
            else {
                errorMessage = error.message
                return false
            }
            errorMessage = nil
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
            errorMessage = nil
            step = .code
            return true
        } catch {
            errorMessage = error.message
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
            errorMessage = message.isEmpty ? nil : message
            step = .number
        }
    }

    private func finish(_ result: SignInResult, trial: TrialWelcome) {
        errorMessage = nil
        flow.attemptsLeft = nil
        trialDaysLeft = trial.daysLeft
        trialStartedMessage = trial.startedMessage
        step = .signedIn(newAccount: result.created)
        onFinish(result)
    }
}

/// The state both phone models keep of a code on its way (issue 58: one part, not two): the
/// number it went to, the countdown before another may go to that number (the preset's pacing
/// after a send, the server's `retry_after` after a refusal: never a constant of the SDK's),
/// the tries left after a wrong code, and the "sent" words.
struct PhoneCodeFlow {
    /// The number the code went to, as sent: the code is checked with it.
    var sentTo: String?
    /// The number the countdown holds back (the server's limits are per number).
    var heldNumber: String?
    var resendAvailableAt: Date?
    var sentMessage = ""
    var attemptsLeft: Int?

    /// A code went to `number`: the countdown starts at the preset's pacing (none when the
    /// server did not say; its `retry_after` then sets it on the next send).
    mutating func sent(to number: String, copy: [String: String], pacing: PhoneCodeTiming?, now: Date) {
        sentTo = number
        sentMessage = PhoneField.sentMessage(copy, number: number)
        attemptsLeft = nil
        if let seconds = pacing?.resendAfterSeconds { hold(number, seconds: seconds, now: now) }
    }

    /// A send was refused: a rate limit's `retry_after` holds the number back that long.
    mutating func refused(_ error: GatehouseClientError, number: String, now: Date) {
        if let wait = error.retryAfter, error.code == .rateLimited { hold(number, seconds: wait, now: now) }
    }

    /// A code was refused: the tries left, where the server says.
    mutating func wrongCode(_ error: GatehouseClientError) {
        attemptsLeft = PhoneField.attemptsLeft(after: error)
    }

    func secondsUntilResend(now: Date) -> Int { PhoneField.seconds(until: resendAvailableAt, now: now) }

    /// Whether `typed` may get a code now: it may be a number, and no countdown holds it back.
    func maySend(_ typed: String, now: Date) -> Bool {
        PhoneField.mayBeANumber(typed) && (heldNumber != PhoneField.trimmed(typed) || secondsUntilResend(now: now) == 0)
    }

    private mutating func hold(_ number: String, seconds: Int, now: Date) {
        heldNumber = number
        resendAvailableAt = now.addingTimeInterval(TimeInterval(seconds))
    }
}

/// The parts both phone models share: the number field's check, the countdown's arithmetic,
/// and their words in the preset's copy (with neutral English where it has none).
enum PhoneField {

    /// The preset's pacing of codes, from the configuration the client holds, fetched when it
    /// holds none yet; nil when the server does not say.
    static func pacing(_ client: Gatehouse) async -> PhoneCodeTiming? {
        if let known = await client.configurationSnapshot { return known.phoneCodes }
        return try? await client.loadConfiguration().phoneCodes
    }

    static func trimmed(_ typed: String) -> String { typed.trimmingCharacters(in: .whitespacesAndNewlines) }

    /// Whether `typed` may be a phone number. A number with `+` is checked whole with the rules
    /// the server uses (`PhoneNumber`); one without is read by the server in the preset's
    /// default region, which the device does not know, so only its characters are checked here.
    static func mayBeANumber(_ typed: String) -> Bool {
        do {
            // No region: an international number never reads it, a national one stops at it.
            _ = try PhoneNumber.parse(trimmed(typed), defaultRegion: "")
            return true
        } catch {
            return error == .unknownRegion
        }
    }

    static func numberMessage(_ typed: String, _ copy: [String: String]) -> String? {
        guard !trimmed(typed).isEmpty, !mayBeANumber(typed) else { return nil }
        return copy["error.invalid_phone"] ?? "Enter a phone number with its area code, or with + and the country code."
    }

    static func seconds(until date: Date?, now: Date) -> Int {
        guard let date else { return 0 }
        return max(0, Int(date.timeIntervalSince(now).rounded(.up)))
    }

    /// The guesses a refused code has left: `details.attempts_left`, 0 for a dead code.
    static func attemptsLeft(after error: GatehouseClientError) -> Int? {
        if error.code == .codeExhausted { return 0 }
        if case .number(let left)? = error.details?["attempts_left"] { return Int(left) }
        return nil
    }

    static func attemptsLeftMessage(_ attemptsLeft: Int?, _ copy: [String: String]) -> String? {
        guard let attemptsLeft, attemptsLeft > 0 else { return nil }
        return PluralCopy.text(
            copy, "phone.attempts_left", count: attemptsLeft, placeholder: "count",
            fallback: PluralCopy.Forms(one: "1 try left.", other: "{count} tries left."))
    }

    static func numberLabel(_ copy: [String: String]) -> String { copy["phone.number_label"] ?? "Phone number" }
    static func sendLabel(_ copy: [String: String]) -> String { copy["phone.send"] ?? "Text me a code" }
    static func codeLabel(_ copy: [String: String]) -> String { copy["phone.code_label"] ?? "6-digit code" }
    static func changeNumberLabel(_ copy: [String: String]) -> String { copy["phone.change_number"] ?? "Use another number" }

    static func sentMessage(_ copy: [String: String], number: String) -> String {
        (copy["phone.sent"] ?? "We texted a 6-digit code to {phone}.").replacingOccurrences(of: "{phone}", with: number)
    }

    static func resendLabel(_ copy: [String: String], seconds: Int) -> String {
        guard seconds > 0 else { return copy["phone.resend"] ?? "Send a new code" }
        return (copy["phone.resend_in"] ?? "Send a new code in {seconds} s").replacingOccurrences(of: "{seconds}", with: String(seconds))
    }
}
