import Foundation
import GatehouseCore
import GatehouseWire
import Observation

/// The code step of a sign-in: the screen between a first factor that was right (a password, a
/// magic link, Apple or Google, a passkey on a preset that asks for more) and the session.
///
/// Make one from the waiting sign-in (``init(client:challenge:now:onFinish:)`` with
/// `Gatehouse.pendingSecondFactor`, or ``pending(client:now:onFinish:)``), or let ``LoginForm``
/// make it: its ``LoginForm/secondFactor`` is set when the password was right and a code is
/// needed.
///
/// The model offers the challenge's factors, takes a 6-digit code or a recovery code, says how
/// many tries the sign-in has left, and shows a lockout with its end. When the sign-in cannot go
/// on (the tries are used up, the challenge expired, or the person cancels) it ends:
/// ``outcome`` is ``Outcome/ended(_:)`` with the words to show on the sign-in screen, and the
/// client is signed out again.
///
/// ```swift
/// let step = SecondFactorModel(client: gatehouse, challenge: challenge)
/// step.code = "123 456"
/// if await step.verify() { /* signed in */ }
/// ```
@MainActor @Observable
public final class SecondFactorModel {
    /// How the step ended.
    public enum Outcome: Sendable, Equatable {
        /// The code was right: the client is signed in with this user.
        case signedIn(UserPayload)
        /// The sign-in is over without a session (no tries left, expired, cancelled): go back to
        /// the sign-in screen and show the message (empty when the person cancelled).
        case ended(String)
    }

    /// The authenticator apps the code may come from (the challenge's factors).
    public let factors: [MFAFactorSummary]
    /// The factor the code is from; the first of ``factors`` to begin with.
    public var factorID: String?
    /// What the person typed: six digits (spaces allowed), or a recovery code when
    /// ``usesRecoveryCode``.
    public var code = ""
    /// Whether ``code`` is one of the account's recovery codes instead of an app's code.
    public var usesRecoveryCode = false {
        didSet { if oldValue != usesRecoveryCode { code = "" } }
    }
    /// True while a code is being checked.
    public private(set) var isWorking = false
    /// The server's refusal of the last code, in the preset's words; after ``verify()`` with a
    /// code that is not whole (fewer than six digits, or not a recovery code's form), the
    /// preset's `mfa.code_incomplete` or `mfa.recovery_code_incomplete`, and nothing is sent.
    public private(set) var errorMessage: String?
    /// The tries this sign-in has left after a wrong code; nil before the first.
    public private(set) var attemptsLeft: Int?
    /// While set and in the future, the account's second-factor codes are locked: ``verify()``
    /// waits until then.
    public private(set) var lockedUntil: Date?
    /// Set once the step is over; nil while it waits for a code.
    public private(set) var outcome: Outcome?

    private let client: Gatehouse
    private let challengeID: String
    private let now: @Sendable () -> Date
    private let onFinish: @MainActor (Outcome) -> Void
    private var copy: [String: String] = [:]

    /// The code step of the sign-in waiting on `challenge`.
    ///
    /// - Parameters:
    ///   - client: The client whose sign-in waits (its state is `.secondFactorRequired`).
    ///   - challenge: The waiting sign-in's challenge: `Gatehouse.pendingSecondFactor`, or the
    ///     payload of `AuthState.secondFactorRequired`.
    ///   - now: The clock ``isLocked`` reads; the system's by default.
    ///   - onFinish: Called once, when ``outcome`` is set.
    public init(
        client: Gatehouse, challenge: MFAChallengePayload, now: @escaping @Sendable () -> Date = { Date() },
        onFinish: @escaping @MainActor (Outcome) -> Void = { _ in }
    ) {
        self.client = client
        self.challengeID = challenge.challengeID
        self.factors = challenge.factors
        self.factorID = challenge.factors.first?.id
        self.now = now
        self.onFinish = onFinish
    }

    /// The code step of the client's waiting sign-in, with the preset's copy loaded; nil when no
    /// sign-in waits for a second factor.
    public static func pending(
        client: Gatehouse, now: @escaping @Sendable () -> Date = { Date() }, onFinish: @escaping @MainActor (Outcome) -> Void = { _ in }
    ) async -> SecondFactorModel? {
        guard let challenge = await client.pendingSecondFactor else { return nil }
        let model = SecondFactorModel(client: client, challenge: challenge, now: now, onFinish: onFinish)
        await model.load()
        return model
    }

    /// Loads the preset's copy for the labels (``pending(client:now:onFinish:)`` does it).
    public func load() async {
        copy = await client.copy
    }

    /// The step's heading.
    public var title: String { copy["mfa.sign_in_title"] ?? "Two-step sign-in" }
    /// What to do, under the heading.
    public var prompt: String {
        usesRecoveryCode
            ? copy["mfa.recovery_code_prompt"] ?? "Enter one of the recovery codes you saved."
            : copy["mfa.challenge_prompt"] ?? "Enter the code from your authenticator app."
    }
    /// The field's label.
    public var codeLabel: String { CodeField.label(copy, recovery: usesRecoveryCode) }
    /// The switch between the app's code and a recovery code.
    public var switchLabel: String { CodeField.switchLabel(copy, recovery: usesRecoveryCode) }
    /// The button that sends the code.
    public var verifyLabel: String { CodeField.verifyLabel(copy) }
    /// The button that gives the sign-in up.
    public var cancelLabel: String { CodeField.cancelLabel(copy) }
    /// "2 tries left." after a wrong code, in the preset's words; nil before one.
    public var attemptsLeftMessage: String? {
        guard let attemptsLeft, attemptsLeft > 0 else { return nil }
        let template =
            attemptsLeft == 1
            ? copy["mfa.attempts_left.one"] ?? "1 try left." : copy["mfa.attempts_left.other"] ?? "{count} tries left."
        return template.replacingOccurrences(of: "{count}", with: String(attemptsLeft))
    }

    /// Whether the account's codes are locked now (see ``lockedUntil``).
    public var isLocked: Bool { lockedUntil.map { now() < $0 } ?? false }

    /// Verify is on once the field holds six digits (spaces allowed) or a whole recovery code (16
    /// letters and digits, hyphens and spaces ignored), nothing is under way, the step has not
    /// ended and no lockout runs.
    public var isVerifyEnabled: Bool {
        guard outcome == nil, !isWorking, !isLocked else { return false }
        return (usesRecoveryCode || factorID != nil) && CodeField.isComplete(code, recovery: usesRecoveryCode)
    }

    /// Sends the code; true when signed in. A wrong code empties the field and says why
    /// (``errorMessage``, ``attemptsLeft``); a lockout sets ``lockedUntil``; a sign-in that can
    /// no longer be completed ends the step (``outcome``).
    @discardableResult
    public func verify() async -> Bool {
        guard isVerifyEnabled else {
            if outcome == nil, !isWorking, !isLocked, !CodeField.isComplete(code, recovery: usesRecoveryCode) {
                errorMessage = CodeField.incompleteMessage(copy, recovery: usesRecoveryCode)
            }
            return false
        }
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            guard await client.pendingSecondFactor?.challengeID == challengeID else {
                throw GatehouseClientError(
                    code: .challengeInvalid, message: copy["mfa.challenge_ended"] ?? "This sign-in has ended. Please sign in again.")
            }
            let result =
                usesRecoveryCode
                ? try await client.completeSignIn(recoveryCode: code)
                : try await client.completeSignIn(factorID: factorID, code: CodeField.digits(code))
            code = ""
            errorMessage = nil
            finish(.signedIn(result.user))
            return true
        } catch {
            code = ""
            errorMessage = error.message
            if case .number(let left)? = error.details?["attempts_left"] { attemptsLeft = Int(left) }
            if let wait = error.retryAfter, error.code == .tooManyAttempts {
                lockedUntil = now().addingTimeInterval(TimeInterval(wait))
            }
            // The client drops a challenge that can no longer be completed; so does the step.
            if await client.pendingSecondFactor?.challengeID != challengeID { finish(.ended(error.message)) }
            return false
        }
    }

    /// Gives the sign-in up: the client is signed out, and the step ends with no message.
    public func cancel() async {
        guard outcome == nil else { return }
        await client.cancelSecondFactor()
        finish(.ended(""))
    }

    private func finish(_ outcome: Outcome) {
        guard self.outcome == nil else { return }
        self.outcome = outcome
        onFinish(outcome)
    }
}
