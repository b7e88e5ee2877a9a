import Foundation
import GatehouseCore
import GatehouseWire
import Observation

/// The signed-in account's phone number (profile settings): add one or change it (the number,
/// then the code texted to it, then the account has it, verified), or remove it.
///
/// Adding or changing a number needs a sign-in in the last five minutes, and a second factor
/// where the account has one. When the server asks for either, the model says so with its own
/// step: ``Step/stepUp`` (the account's authenticator app answers, with ``stepUp``) or
/// ``Step/signInAgain`` (the person signs in again); then ``retry()`` repeats what was refused.
/// Removing the account's last way in is refused in the server's words (``errorMessage``).
///
/// ```swift
/// let settings = PhoneVerificationModel(client: gatehouse)
/// await settings.load()
/// settings.phone = "+1 415 555 0143"
/// if await settings.send() {
///     settings.code = "123456"  // from the text message
///     if await settings.submitCode() { print(settings.user?.phone ?? "") }
/// }
/// ```
@MainActor @Observable
public final class PhoneVerificationModel {
    /// What the screen shows.
    public enum Step: Sendable, Equatable {
        /// The account's number (``PhoneVerificationModel/currentNumber``), the field for a new
        /// one and the button that texts it a code (``PhoneVerificationModel/send()``).
        case number
        /// ``PhoneVerificationModel/sentMessage``, the code field, and the button that sends a
        /// new code once ``PhoneVerificationModel/secondsUntilResend`` reaches zero.
        case code
        /// The server wants the account's second factor first (`mfa_required`, or
        /// `reauthentication_required` on an account with an authenticator app): show
        /// ``PhoneVerificationModel/stepUp``; once it is complete,
        /// ``PhoneVerificationModel/retry()``.
        case stepUp
        /// The last sign-in is too old (`reauthentication_required`) and only a new one answers:
        /// show ``PhoneVerificationModel/errorMessage`` and ``PhoneVerificationModel/guidance``,
        /// sign the person in again, then ``PhoneVerificationModel/retry()``.
        case signInAgain
        /// The number is the account's, verified (``PhoneVerificationModel/user``).
        case verified
    }

    /// The new number as typed; the server reads a number without `+` in the preset's default
    /// region.
    public var phone = ""
    /// The 6-digit code from the text message as typed (spaces allowed).
    public var code = ""
    /// What the screen shows now.
    public private(set) var step: Step = .number
    /// The signed-in account as last known: ``load()`` reads it, a verified or removed number
    /// updates it.
    public private(set) var user: UserPayload?
    /// True while a request is under way.
    public private(set) var isWorking = false
    /// Why the last request failed, in the server's words (the preset's); nil after one that
    /// worked. After a send refused for a limit with a wait, the wait counted down in the
    /// preset's `phone.wait` (read it again each second), nil once it is over; after
    /// ``submitCode()`` with fewer than six digits, the preset's `phone.code_incomplete`.
    public var errorMessage: String? { flow.errorMessage(copy, now: now()) }
    /// The guesses the code has left after a wrong one; 0 once it is dead (send a new one); nil
    /// before a wrong code.
    public var attemptsLeft: Int? { flow.attemptsLeft }
    /// When a new code may be sent to the number: after a send, the preset's pacing
    /// (`/v1/config`'s `phone_codes.resend_after_seconds`); after a refused send, the server's
    /// `retry_after`. Nil before any send.
    public var resendAvailableAt: Date? { flow.resendAvailableAt }
    /// "We texted a 6-digit code to …" in the preset's words, set when the code is sent.
    public var sentMessage: String { flow.sentMessage }
    /// "Your phone number is verified." or "Your phone number was removed.", after either.
    public private(set) var notice: String?
    /// The second-factor prompt, on ``Step/stepUp``.
    public private(set) var stepUp: StepUpPrompt?

    private enum Action {
        case send(String)
        case verify
        case remove
    }

    private let client: Gatehouse
    private let now: @Sendable () -> Date
    private var copy: [String: String] = [:]
    /// The number, the countdown and the tries: the part both phone models share.
    private var flow = PhoneCodeFlow()
    /// What the server refused for want of a recent sign-in or a second factor, and the step it
    /// was refused on: ``retry()`` goes back there and repeats it.
    private var refused: (action: Action, step: Step)?

    /// The number settings of the account signed in to `client`; call ``load()`` when the screen
    /// appears.
    ///
    /// - Parameters:
    ///   - client: The signed-in client.
    ///   - now: The clock the resend countdown reads; the system's by default.
    public init(client: Gatehouse, now: @escaping @Sendable () -> Date = { Date() }) {
        self.client = client
        self.now = now
    }

    /// Reads the preset's copy and the signed-in account.
    public func load() async {
        copy = await client.copy
        user = await client.state.user
    }

    // MARK: Words

    /// The account's number now (E.164), nil when it has none.
    public var currentNumber: String? { user?.phone }
    /// The screen's heading: adding a number, or changing the account's.
    public var title: String {
        currentNumber == nil ? copy["phone.add_title"] ?? "Add a phone number" : copy["phone.change_title"] ?? "Change your phone number"
    }
    /// The number field's label.
    public var numberLabel: String { PhoneField.numberLabel(copy) }
    /// The button that texts a code.
    public var sendLabel: String { PhoneField.sendLabel(copy) }
    /// The code field's label.
    public var codeLabel: String { PhoneField.codeLabel(copy) }
    /// The button that sends the code (``submitCode()``).
    public var verifyLabel: String { copy["phone.verify"] ?? "Verify" }
    /// The way back to the number field (``changeNumber()``).
    public var changeNumberLabel: String { PhoneField.changeNumberLabel(copy) }
    /// The button that removes the account's number (``remove()``).
    public var removeLabel: String { copy["phone.remove"] ?? "Remove this number" }
    /// The resend button, with its countdown while it runs (read it again each second).
    public var resendLabel: String { PhoneField.resendLabel(copy, seconds: secondsUntilResend) }
    /// The preset's `error.invalid_phone` while ``phone`` cannot be a phone number; nil while it
    /// is empty or may be one.
    public var numberMessage: String? { PhoneField.numberMessage(phone, copy) }
    /// "4 tries left." after a wrong code, in the preset's words.
    public var attemptsLeftMessage: String? { PhoneField.attemptsLeftMessage(attemptsLeft, copy) }
    /// What ``Step/signInAgain`` says under ``errorMessage``; empty on the other steps.
    public var guidance: String {
        step == .signInAgain ? copy["phone.sign_in_again"] ?? "Sign out, then sign in again to change your phone number." : ""
    }

    // MARK: State

    /// Whole seconds until a new code may be sent: on the code step to the number the code went
    /// to, on the number step to the number typed (0 for a number no countdown holds back); 0
    /// when it may now.
    public var secondsUntilResend: Int { flow.secondsUntilResend(step == .number ? phone : nil, now: now()) }
    /// Whether the send button (``sendLabel``, ``send()``) is on: on the number step, a number
    /// that may be one, nothing under way, and no countdown running for this number.
    public var canSend: Bool { step == .number && !isWorking && flow.maySend(phone, now: now()) }
    /// Whether the resend button (``resendLabel``, ``resend()``) is on: once the countdown is
    /// over and nothing is under way; on the number step it is ``canSend``, so the button turns
    /// on when its label stops counting.
    public var canResend: Bool {
        switch step {
        case .code: !isWorking && secondsUntilResend == 0
        case .number: canSend
        case .stepUp, .signInAgain, .verified: false
        }
    }
    /// Whether the code is complete: on the code step, six digits typed (spaces allowed),
    /// nothing under way. ``submitCode()`` with fewer says so in ``errorMessage`` and sends
    /// nothing.
    public var canSubmitCode: Bool { step == .code && !isWorking && CodeField.digits(code).count == 6 }
    /// Whether the remove button is on: the account has a number and nothing is under way.
    public var canRemove: Bool { currentNumber != nil && !isWorking && (step == .number || step == .verified) }

    // MARK: Actions

    /// Texts a code to ``phone``; true when the server took it (the step is then `.code`).
    @discardableResult
    public func send() async -> Bool {
        guard canSend else { return false }
        return await requestCode(to: PhoneField.trimmed(phone))
    }

    /// Texts a new code to the same number, once the countdown is over; true when sent. On the
    /// number step it is ``send()``.
    @discardableResult
    public func resend() async -> Bool {
        guard canResend else { return false }
        guard step == .code, let sentTo = flow.sentTo else { return await send() }
        return await requestCode(to: sentTo)
    }

    /// The code typed from the text message; true when the number is the account's (the step
    /// is then `.verified` and ``user`` has it). A wrong code empties the field and says why.
    @discardableResult
    public func submitCode() async -> Bool {
        guard flow.codeIsComplete(code, onCodeStep: step == .code && !isWorking, copy: copy) else { return false }
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            user = try await client.verifyPhone(code: CodeField.digits(code))
            code = ""
            phone = ""
            flow.say(nil)
            flow.attemptsLeft = nil
            notice = copy["phone.verified"] ?? "Your phone number is verified."
            step = .verified
            return true
        } catch {
            // Refused for want of a fresh proof, the code is kept for `retry()`.
            if await askedForProof(error, refusing: .verify) { return false }
            code = ""
            flow.say(error.message)
            flow.wrongCode(error)
            return false
        }
    }

    /// Removes the account's number; true when it is gone. The server refuses the account's last
    /// way in (`last_identity`) and ``errorMessage`` says so in its words.
    @discardableResult
    public func remove() async -> Bool {
        guard canRemove else { return false }
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            try await client.removePhone()
            // `removePhone` read the user again; without network the number is known gone anyway.
            var updated = await client.state.user ?? user
            updated?.phone = nil
            updated?.phoneVerified = false
            user = updated
            flow.say(nil)
            notice = copy["phone.removed"] ?? "Your phone number was removed."
            step = .number
            return true
        } catch {
            if await askedForProof(error, refusing: .remove) { return false }
            flow.say(error.message)
            return false
        }
    }

    /// After ``Step/stepUp`` completed (``stepUp`` `isComplete`) or the person signed in again
    /// (``Step/signInAgain``): repeats what was refused, from the step it was refused on; true
    /// when it went through this time.
    @discardableResult
    public func retry() async -> Bool {
        guard !isWorking, let refused, step == .signInAgain || (step == .stepUp && stepUp?.isComplete == true) else { return false }
        self.refused = nil
        stepUp = nil
        flow.say(nil)
        step = refused.step
        switch refused.action {
        case .send(let number):
            return await requestCode(to: number)
        case .verify:
            return await submitCode()
        case .remove:
            return await remove()
        }
    }

    /// Back to the number field (a typo in it, or another number after one was verified).
    public func changeNumber() {
        step = .number
        code = ""
        flow.say(nil)
        flow.attemptsLeft = nil
        stepUp = nil
        refused = nil
    }

    // MARK: Internals

    private func requestCode(to number: String) async -> Bool {
        isWorking = true
        defer { isWorking = false }
        copy = await client.copy
        do throws(GatehouseClientError) {
            try await client.addPhone(number)
            flow.sent(to: number, copy: copy, pacing: await PhoneField.pacing(client), now: now())
            code = ""
            notice = nil
            step = .code
            return true
        } catch {
            if await askedForProof(error, refusing: .send(number)) { return false }
            flow.refused(error, number: number, now: now())
            return false
        }
    }

    /// A refusal for want of a recent sign-in or a second factor: its own step, with the
    /// server's words; true when `error` was one.
    private func askedForProof(_ error: GatehouseClientError, refusing action: Action) async -> Bool {
        guard error.code == .reauthenticationRequired || error.code == .mfaRequired, let prompt = StepUpPrompt(client: client, error: error)
        else { return false }
        refused = (action, step)
        flow.say(error.message)
        await prompt.load()
        // An authenticator app answers either refusal (or, for `mfa_required`, turning one on);
        // without one, or when the factors could not be read, only a new sign-in does.
        if prompt.route == .code || prompt.route == .enrollFactor {
            stepUp = prompt
            step = .stepUp
        } else {
            stepUp = nil
            step = .signInAgain
        }
        return true
    }
}
