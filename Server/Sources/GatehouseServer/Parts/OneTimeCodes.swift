import Crypto
import Foundation
import GatehouseCore
import GatehouseWire

/// The one part every six-digit one-time code goes through, whatever carries it (issue 58): a
/// mail's magic-link code (also `/auth/v1`'s email OTP) and every SMS code (sign-in, a phone
/// sign-up's confirmation, a number's verification and change). It makes the code, hashes it
/// under a server key bound to its row, checks a typed code (one try reserved on each live code
/// before anything is compared; the wrong guess that takes a code's last try kills it), and
/// says a refusal in the contract's words from one table. A channel brings only how its rows are
/// stored (`reserve`, `kill`), its delivery and its copy.
struct OneTimeCodes: Sendable {
    /// What carries a code. A new channel is a new case: the compiler then asks for its key
    /// label and its row of the error table.
    enum Channel: String, Sendable, CaseIterable {
        case mail
        case sms
    }

    /// Why a typed code is refused; `error(_:preset:)` says it on the wire.
    enum Refusal: Sendable, Equatable {
        /// Wrong, with this many tries left (said only to whoever asked for the code; `nil` otherwise).
        case wrong(attemptsLeft: Int?)
        /// Its tries ran out: the code is dead.
        case exhausted
        /// Past its lifetime.
        case expired
        /// Used, superseded, or never sent.
        case invalid
    }

    /// How a guess went.
    enum Outcome<Code: Sendable>: Sendable {
        /// The code it matched, still unused: the caller uses it up inside the write it guards.
        case matched(Code)
        /// Wrong, with this many tries left on the code that has the most.
        case wrong(attemptsLeft: Int)
        /// Wrong, and it took the last try of every code it was for: they are dead.
        case killed
        /// No try could be reserved: each code was out of tries, or used or expired meanwhile.
        case unreserved
        /// There was no live code to guess at.
        case nothingLive
    }

    let channel: Channel
    let chainKey: RefreshChainKey

    /// A new code and its keyed hash, bound to the row that will store it (`binding`).
    func issue(boundTo binding: [UInt8]) throws -> (code: String, hash: [UInt8]) {
        var generator = SystemRandomNumberGenerator()
        let code = String(format: "%06d", Int(UInt32.random(in: 0..<1_000_000, using: &generator)))
        return (code, try hash(code, boundTo: binding))
    }

    /// Whether `typed` (spaces dropped) is the code whose hash is `stored`, compared in constant time.
    func matches(_ typed: String, stored: [UInt8]?, boundTo binding: [UInt8]) throws -> Bool {
        let trimmed = typed.filter { !$0.isWhitespace }
        guard let stored, trimmed.utf8.count == 6, trimmed.utf8.allSatisfy({ (48...57).contains($0) }) else { return false }
        return constantTimeEquals(try hash(trimmed, boundTo: binding), stored)
    }

    /// The work of one comparison, for a path that has no code to compare with but must cost
    /// the same as one that has (timing parity).
    func hashDecoy(_ typed: String) throws {
        _ = try hash(typed, boundTo: Array(SecureRandom.uuid().uuidString.utf8))
    }

    /// Checks `typed` against the live codes it may be for: one try is reserved on each, by one
    /// conditional update each (`reserve` answers the try's number, or `nil` when none is left
    /// or the code died meanwhile), before anything is compared; the wrong guess that takes a
    /// code's last try kills it (`kill`).
    func guess<Code: Sendable>(
        _ typed: String, at live: [Code], limit: Int, binding: (Code) -> [UInt8], stored: (Code) -> [UInt8]?,
        reserve: (Code) async throws -> Int?, kill: (Code) async throws -> Void
    ) async throws -> Outcome<Code> {
        guard !live.isEmpty else { return .nothingLive }
        var reserved: [(code: Code, attempt: Int)] = []
        for code in live {
            if let attempt = try await reserve(code) { reserved.append((code, attempt)) }
        }
        guard !reserved.isEmpty else { return .unreserved }
        for candidate in reserved where try matches(typed, stored: stored(candidate.code), boundTo: binding(candidate.code)) {
            return .matched(candidate.code)
        }
        var mostLeft: Int?
        for candidate in reserved {
            switch MagicCodePolicy.wrongCode(attempt: candidate.attempt, maxAttempts: limit) {
            case .exhausted: try await kill(candidate.code)
            case .retry(let left): mostLeft = max(mostLeft ?? 0, left)
            }
        }
        return mostLeft.map { .wrong(attemptsLeft: $0) } ?? .killed
    }

    /// The one table from a refusal to the contract's error code and the preset's words, per channel.
    func error(_ refusal: Refusal, preset: Preset) -> GatehouseError {
        switch (channel, refusal) {
        case (.mail, .wrong(let attemptsLeft)):
            GatehouseError(
                status: 400, code: .tokenInvalid, message: preset.text("error.code_invalid", "That code is not right. Check the email and try again."),
                details: attemptsLeft.map { ["attempts_left": .number(Double($0))] })
        case (.mail, .exhausted): .codeExhausted(preset)
        case (.mail, .expired): .tokenExpired(preset)
        case (.mail, .invalid): .tokenInvalid(preset)
        case (.sms, .wrong(let attemptsLeft)):
            GatehouseError(
                status: 400, code: .invalidCode,
                message: preset.text("error.sms_code_invalid", "That code is not right or has expired. Check the text message, or ask for a new code."),
                details: attemptsLeft.map { ["attempts_left": .number(Double($0))] })
        // A text's code that expired or was used is "not right or has expired" alone.
        case (.sms, .expired), (.sms, .invalid): error(.wrong(attemptsLeft: nil), preset: preset)
        case (.sms, .exhausted):
            GatehouseError(status: 400, code: .codeExhausted, message: preset.text("error.sms_code_exhausted", "Too many wrong codes. Ask for a new code."))
        }
    }

    /// The keyed hash of a code, bound to its row so one code's hash says nothing of another's;
    /// each channel has its own key (the labels are stored codes' keys: never change them).
    private func hash(_ code: String, boundTo binding: [UInt8]) throws -> [UInt8] {
        let label =
            switch channel {
            case .mail: "gatehouse magic-link code"
            case .sms: "gatehouse sms code"
            }
        var message = Data(binding)
        message.append(contentsOf: Array(code.utf8))
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: try chainKey.derived(label)))
    }
}
