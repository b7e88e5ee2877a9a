import Foundation
import GatehouseCore
import GatehouseWire

/// The state both phone models keep of a code on its way (issue 58: one part, not two): the
/// number it went to, the countdown before another may go to that number (the preset's pacing
/// after a send, the server's `retry_after` after a refusal: never a constant of the SDK's),
/// the tries left after a wrong code, the "sent" words and the last refusal's.
struct PhoneCodeFlow {
    /// The number the code went to, as sent: the code is checked with it.
    var sentTo: String?
    /// The number the countdown holds back (the server's limits are per number).
    var heldNumber: String?
    var resendAvailableAt: Date?
    var sentMessage = ""
    var attemptsLeft: Int?
    /// The last refusal's words (the server's, or the device's for an incomplete code).
    private var refusal: String?
    /// Whether the last refusal was a limit with a wait (issue 64): the models say the wait,
    /// counted down, instead of the server's "wait a moment".
    private var limited = false

    /// What the models' `errorMessage` reads: the last refusal's words, or the wait of a limit
    /// in seconds while it runs (nil once it is over).
    func errorMessage(_ copy: [String: String], now: Date) -> String? {
        guard limited else { return refusal }
        let seconds = PhoneField.seconds(until: resendAvailableAt, now: now)
        return seconds > 0 ? PhoneField.waitMessage(copy, seconds: seconds) : nil
    }

    /// A request was refused in `message`'s words, or worked (nil).
    mutating func say(_ message: String?) {
        refusal = message
        limited = false
    }

    /// Whether the code typed is whole: six digits, on the code step with nothing under way. A
    /// shorter one is refused on the device, in the preset's words, and sends nothing (issue 64).
    mutating func codeIsComplete(_ typed: String, onCodeStep: Bool, copy: [String: String]) -> Bool {
        guard onCodeStep else { return false }
        guard CodeField.digits(typed).count == 6 else {
            say(PhoneField.incompleteCodeMessage(copy))
            return false
        }
        return true
    }

    /// A code went to `number`: the countdown starts at the preset's pacing (none when the
    /// server did not say; its `retry_after` then sets it on the next send).
    mutating func sent(to number: String, copy: [String: String], pacing: PhoneCodeTiming?, now: Date) {
        sentTo = number
        sentMessage = PhoneField.sentMessage(copy, number: number)
        attemptsLeft = nil
        say(nil)
        if let seconds = pacing?.resendAfterSeconds { hold(number, seconds: seconds, now: now) }
    }

    /// A send was refused: a rate limit's `retry_after` holds the number back that long, and the
    /// wait is what the models say.
    mutating func refused(_ error: GatehouseClientError, number: String, now: Date) {
        say(error.message)
        if let wait = error.retryAfter, error.code == .rateLimited {
            hold(number, seconds: wait, now: now)
            limited = true
        }
    }

    /// A code was refused: the tries left, where the server says.
    mutating func wrongCode(_ error: GatehouseClientError) {
        attemptsLeft = PhoneField.attemptsLeft(after: error)
    }

    /// The countdown's seconds: for `typed` on the number step (0 unless the countdown holds
    /// that number back), else (nil) for the number the code went to.
    func secondsUntilResend(_ typed: String? = nil, now: Date) -> Int {
        if let typed, heldNumber != PhoneField.trimmed(typed) { return 0 }
        return PhoneField.seconds(until: resendAvailableAt, now: now)
    }

    /// Whether `typed` may get a code now: it may be a number, and no countdown holds it back.
    func maySend(_ typed: String, now: Date) -> Bool {
        PhoneField.mayBeANumber(typed) && secondsUntilResend(typed, now: now) == 0
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

    /// A send refused for a limit, with its wait: the preset's `phone.wait`.
    static func waitMessage(_ copy: [String: String], seconds: Int) -> String {
        (copy["phone.wait"] ?? "Too many codes were asked for. You can ask for a new one in {seconds} s.")
            .replacingOccurrences(of: "{seconds}", with: String(seconds))
    }

    /// A code with fewer than six digits: the preset's `phone.code_incomplete`.
    static func incompleteCodeMessage(_ copy: [String: String]) -> String {
        copy["phone.code_incomplete"] ?? "Enter the 6-digit code from the text message."
    }

    static func resendLabel(_ copy: [String: String], seconds: Int) -> String {
        guard seconds > 0 else { return copy["phone.resend"] ?? "Send a new code" }
        return (copy["phone.resend_in"] ?? "Send a new code in {seconds} s").replacingOccurrences(of: "{seconds}", with: String(seconds))
    }
}
