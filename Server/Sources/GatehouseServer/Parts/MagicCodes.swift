import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// The 6-digit code a magic-link mail carries: checked against the newest live link of an
/// address with a reserved attempt, and used up as proof that the person holds the inbox.
struct MagicCodes: Sendable {
    let store: any EmailTokenStore
    let links: EmailLinks
    let preset: Preset
    let clock: any WallClock

    /// The mail channel of the one code part.
    private var codes: OneTimeCodes { links.codes }

    /// Finds the live code for an address and checks it through `OneTimeCodes`, the part SMS
    /// codes share: the attempt is reserved before the comparison by one conditional update
    /// (`code_attempts < limit`, unused, unexpired), so the limit holds for any number of
    /// parallel guesses (finding 1); the guess that uses the last attempt and is wrong kills it.
    func check(email: String, code: String) async throws -> EmailToken {
        let normalized = EmailAddress.normalize(email)
        guard EmailAddress.isValid(email), let record = try await store.newestEmailToken(normalizedEmail: normalized, purpose: .magicLink)
        else {
            throw codes.error(.invalid, preset: preset)
        }
        let limit = preset.email.magicCodeMaxAttempts
        let now = clock.now
        guard record.state(at: now) == .valid else { return record }
        let outcome = try await codes.guess(
            code, at: [record], limit: limit, binding: \.hash, stored: \.codeHash,
            reserve: { try await store.reserveCodeAttempt(hash: $0.hash, limit: limit, now: now) },
            kill: { _ = try await store.useEmailToken(hash: $0.hash, at: now) })
        switch outcome {
        case .matched(let matched): return matched
        case .wrong(let attemptsLeft): throw codes.error(.wrong(attemptsLeft: attemptsLeft), preset: preset)
        case .killed: throw codes.error(.exhausted, preset: preset)
        case .unreserved, .nothingLive:
            // No attempt left, or used or expired meanwhile: say which.
            let current = try await store.emailToken(hash: record.hash) ?? record
            if MagicCodePolicy.isExhausted(unreserved: current, at: now, maxAttempts: limit) { throw codes.error(.exhausted, preset: preset) }
            return current
        }
    }

    /// Refuses a link or code that is no longer valid: expired, used, or out of attempts.
    func requireValid(_ record: EmailToken, at now: Date) throws {
        switch MagicCodePolicy.refusal(record, at: now, maxAttempts: preset.email.magicCodeMaxAttempts) {
        case .expired: throw codes.error(.expired, preset: preset)
        case .invalid: throw codes.error(.invalid, preset: preset)
        case .exhausted: throw codes.error(.exhausted, preset: preset)
        case nil: break
        }
    }

    /// Uses up the live magic-link code of an address as proof that the person holds the inbox
    /// (e.g. before deleting the account); throws like `magic-link/verify`.
    func consume(email: String, code: String) async throws {
        let record = try await check(email: email, code: code)
        try requireValid(record, at: clock.now)
        guard try await store.useEmailToken(hash: record.hash, at: clock.now) else { throw codes.error(.invalid, preset: preset) }
    }
}
