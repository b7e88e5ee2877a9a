import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The 6-digit codes sent by SMS (issue 43): made and queued with the write that asked for
/// them, checked with a reserved guess, used once. The code is made, hashed and checked by
/// `OneTimeCodes`, the part mailed codes share (this is its SMS channel): 10 minutes, single
/// use, 5 wrong guesses per code, each guess reserved by one conditional update before the
/// comparison, so no burst of guesses gets more than the limit evaluated. A code belongs to its number and purpose and to whoever asked (issue 58): a
/// code asked for by the number's holder is bound to no account, one a sign-up or a change
/// asked for names that account, and neither ends the other.
struct PhoneCodes: Sendable {
    let chainKey: RefreshChainKey
    let preset: Preset
    /// Where the one-time-code line binds the code (`@auth.example.com #123456`): the host of
    /// `GATEHOUSE_PUBLIC_URL`, so iOS offers the code above the keyboard only on that site's app.
    let domain: String
    /// Where a guess with no live code writes its decoy (see `check`).
    let decoys: any ThrottleStore

    /// The SMS channel of the one code part.
    private var codes: OneTimeCodes { OneTimeCodes(channel: .sms, chainKey: chainKey) }

    /// The outbox row's `kind` for an SMS: the mail worker hands it to the SMS sender.
    static let outboxKind = "sms"

    /// Makes a code for `phone`, ends the older live ones of the same request (the same purpose
    /// and binding: the number's holder asking, `userID` nil, or the account that asked), stores
    /// its keyed hash and queues its SMS, all in the caller's transaction: a crash between the
    /// commit and the send loses nothing. Another party's code to the same number stays live
    /// (issue 58): a request never kills a code someone else asked for.
    func send(_ work: Work<any PhoneStore>, to phone: PhoneNumber, purpose: SMSPurpose, userID: UserID?) async throws {
        let id = SecureRandom.timeOrderedUUID(at: work.now)
        let (code, codeHash) = try codes.issue(boundTo: Self.binding(id))
        // A number change is the account's one pending change, whatever number it was to.
        try await work.tx.retirePhoneCodes(phone: purpose == .signIn ? phone.e164 : nil, boundTo: userID, purpose: purpose, at: work.now)
        try await work.tx.insertPhoneCode(
            PhoneCode(
                id: id, phone: phone.e164, purpose: purpose, userID: userID, codeHash: codeHash, createdAt: work.now,
                expiresAt: work.now.addingTimeInterval(TimeInterval(preset.sms.codeTTLSeconds))))
        try await work.enqueueMail(
            OutboxMessage(
                createdAt: work.now, kind: Self.outboxKind, recipient: phone.e164, subject: purpose.rawValue, textBody: text(code, purpose: purpose),
                htmlBody: nil, payload: ["purpose": purpose.rawValue, "code": code]))
    }

    /// Every code of `purpose` sent to a number within a code's lifetime, newest first: the
    /// codes a code typed with that number may be for.
    func recent(to phone: String, purpose: SMSPurpose, now: Date, in store: any PhoneStore) async throws -> [PhoneCode] {
        try await store.phoneCodes(phone: phone, purpose: purpose, since: now.addingTimeInterval(-TimeInterval(preset.sms.codeTTLSeconds)))
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

    /// Who hears how a wrong guess went.
    enum Listener: Sendable {
        /// The signed-in account that asked for its own code: the tries left and a dead code are
        /// said (`attempts_left`, `code_exhausted`).
        case asker
        /// Anyone who names a number: every wrong guess answers `invalid_code` alone, whether or
        /// not a code is live, so the answers say nothing of whether someone asked (issue 58).
        case anyone
    }

    /// Checks `code` against `candidates` (the live ones among them) through `OneTimeCodes`: a
    /// guess is reserved on each before any comparison; the wrong guess that takes a code's
    /// last try kills it. Answers the code matched, still unused: the caller uses it up inside
    /// the write it guards.
    func check(
        _ candidates: [PhoneCode], to phone: String, code: String, now: Date, in store: any PhoneStore, listener: Listener
    ) async throws -> PhoneCode {
        let limit = preset.sms.codeMaxAttempts
        let live = candidates.filter { $0.isLive(at: now) }
        if live.isEmpty, listener == .anyone {
            // The work of a guess at a live code, so that by number alone the time says no more
            // than the answer whether someone asked for a code (issue 58, BENCHMARKS.md): one
            // committed write (a live code's reservation is one; a reservation that matches no
            // row writes nothing, and on a release build that alone told them apart) and a keyed hash.
            try await decoy(phone, now: now)
            try codes.hashDecoy(code)
        }
        let outcome = try await codes.guess(
            code, at: live, limit: limit, binding: { Self.binding($0.id) }, stored: \.codeHash,
            reserve: { try await store.reservePhoneCodeAttempt($0.id, limit: limit, now: now) },
            kill: { _ = try await store.usePhoneCode($0.id, at: now) })
        switch (outcome, listener) {
        case (.matched(let record), _): return record
        case (_, .anyone): throw refusal(.wrong(attemptsLeft: nil))
        case (.wrong(let attemptsLeft), .asker): throw refusal(.wrong(attemptsLeft: attemptsLeft))
        case (.killed, .asker), (.unreserved, .asker): throw refusal(.exhausted)
        case (.nothingLive, .asker):
            throw refusal(candidates.first.map { $0.attempts >= limit } == true ? .exhausted : .invalid)
        }
    }

    /// One committed write that changes nothing anyone reads: the work a request does in place
    /// of a code's write when it must not say by its time that there was none to do.
    private func decoy(_ phone: String, now: Date) async throws {
        let second = now.unixSeconds
        _ = try await decoys.hitRateLimit(key: "sms-decoy:\(phone)", windowStart: second - second % 60)
    }

    /// Uses up a checked code inside the write it guards; a concurrent use that won answers `invalid_code`.
    func use(_ record: PhoneCode, _ work: Work<any PhoneStore>) async throws {
        guard try await work.tx.usePhoneCode(record.id, at: work.now) else { throw refusal(.invalid) }
    }

    /// A refusal in the contract's words, from the code part's one table.
    func refusal(_ refusal: OneTimeCodes.Refusal) -> GatehouseError { codes.error(refusal, preset: preset) }

    /// What an SMS code's hash is bound to: its row's id.
    private static func binding(_ id: UUID) -> [UInt8] { Array(id.uuidString.lowercased().utf8) }
}
