import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The 6-digit codes sent by SMS (issue 43): made and queued with the write that asked for
/// them, checked with a reserved guess, used once. The magic code's rules are the model: 10
/// minutes, single use, 5 wrong guesses per code, each guess reserved by one conditional
/// update before the comparison, so no burst of guesses gets more than the limit evaluated.
struct PhoneCodes: Sendable {
    let chainKey: RefreshChainKey
    let preset: Preset
    /// Where the one-time-code line binds the code (`@auth.example.com #123456`): the host of
    /// `GATEHOUSE_PUBLIC_URL`, so iOS offers the code above the keyboard only on that site's app.
    let domain: String

    /// The outbox row's `kind` for an SMS: the mail worker hands it to the SMS sender.
    static let outboxKind = "sms"

    /// Makes a code for `phone`, ends the older live ones of the same purpose (and account),
    /// stores its keyed hash and queues its SMS, all in the caller's transaction: a crash
    /// between the commit and the send loses nothing.
    func send(_ work: Work<any PhoneStore>, to phone: PhoneNumber, purpose: SMSPurpose, userID: UserID?) async throws {
        let id = UUID()
        let code = Self.newCode()
        try await work.tx.retirePhoneCodes(
            phone: purpose == .signIn ? phone.e164 : nil, userID: purpose == .verifyPhone ? userID : nil, purpose: purpose, at: work.now)
        try await work.tx.insertPhoneCode(
            PhoneCode(
                id: id, phone: phone.e164, purpose: purpose, userID: userID, codeHash: try hash(code, id: id), createdAt: work.now,
                expiresAt: work.now.addingTimeInterval(TimeInterval(preset.sms.codeTTLSeconds))))
        try await work.enqueueMail(
            OutboxMessage(
                createdAt: work.now, kind: Self.outboxKind, recipient: phone.e164, subject: purpose.rawValue, textBody: text(code, purpose: purpose),
                htmlBody: nil, payload: ["purpose": purpose.rawValue, "code": code]))
    }

    /// The SMS's words from the preset's copy (`sms.sign_in`, `sms.verify_phone`; `{app}`,
    /// `{code}` and `{minutes}` filled in), ending with the domain-bound one-time-code line.
    func text(_ code: String, purpose: SMSPurpose) -> String {
        let minutes = String(preset.sms.codeTTLSeconds / 60)
        let template: String
        switch purpose {
        case .signIn: template = preset.text("sms.sign_in", "Your {app} sign-in code is {code}. It expires in {minutes} minutes. Don't share it.")
        case .verifyPhone: template = preset.text("sms.verify_phone", "Your {app} code to add this number is {code}. It expires in {minutes} minutes.")
        }
        var text = template
        for (name, value) in ["app": preset.app.name, "code": code, "minutes": minutes] {
            text = text.replacingOccurrences(of: "{\(name)}", with: value)
        }
        return text + "\n\n@\(domain) #\(code)"
    }

    /// Checks `code` against the newest code of `purpose` for the number (or the account's
    /// newest `verify_phone` code): one guess is reserved before the comparison; the wrong guess
    /// that takes the last one kills the code. Answers the code, still unused: the caller uses
    /// it up inside the write it guards.
    func check(phone: String?, userID: UserID?, purpose: SMSPurpose, code: String, now: Date, in store: any PhoneStore) async throws -> PhoneCode {
        guard let record = try await store.newestPhoneCode(phone: phone, purpose: purpose, userID: userID) else { throw invalidCode(nil) }
        let limit = preset.sms.codeMaxAttempts
        guard record.isLive(at: now) else {
            throw record.attempts >= limit ? codeExhausted() : invalidCode(nil)
        }
        guard let attempt = try await store.reservePhoneCodeAttempt(record.id, limit: limit, now: now) else {
            // Out of guesses, or used or expired meanwhile.
            throw record.usedAt == nil && now < record.expiresAt ? codeExhausted() : invalidCode(nil)
        }
        let trimmed = code.filter { !$0.isWhitespace }
        guard trimmed.utf8.count == 6, trimmed.utf8.allSatisfy({ (48...57).contains($0) }),
            constantTimeEquals(try hash(trimmed, id: record.id), record.codeHash)
        else {
            switch MagicCodePolicy.wrongCode(attempt: attempt, maxAttempts: limit) {
            case .exhausted:
                _ = try await store.usePhoneCode(record.id, at: now)
                throw codeExhausted()
            case .retry(let attemptsLeft):
                throw invalidCode(attemptsLeft)
            }
        }
        return record
    }

    /// Uses up a checked code inside the write it guards; a concurrent use that won answers `invalid_code`.
    func use(_ record: PhoneCode, _ work: Work<any PhoneStore>) async throws {
        guard try await work.tx.usePhoneCode(record.id, at: work.now) else { throw invalidCode(nil) }
    }

    func invalidCode(_ attemptsLeft: Int?) -> GatehouseError {
        GatehouseError(
            status: 400, code: .invalidCode,
            message: preset.text("error.sms_code_invalid", "That code is not right or has expired. Check the text message, or ask for a new code."),
            details: attemptsLeft.map { ["attempts_left": .number(Double($0))] })
    }

    func codeExhausted() -> GatehouseError {
        GatehouseError(
            status: 400, code: .codeExhausted,
            message: preset.text("error.sms_code_exhausted", "Too many wrong codes. Ask for a new code."))
    }

    /// The keyed hash of a code, bound to its row so that one code's hash says nothing of another's.
    private func hash(_ code: String, id: UUID) throws -> [UInt8] {
        var message = Data(id.uuidString.lowercased().utf8)
        message.append(contentsOf: Array(code.utf8))
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: try chainKey.derived("gatehouse sms code")))
    }

    static func newCode() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(format: "%06d", Int(UInt32.random(in: 0..<1_000_000, using: &generator)))
    }
}
