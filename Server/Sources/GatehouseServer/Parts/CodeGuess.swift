import GatehouseCore

/// The one guess step every one-time code goes through, whatever carried it (a mail's magic
/// code, an SMS code; issue 58): one try is reserved on each live code the guess may be for, by
/// one conditional update each, before anything is compared; the typed code is then compared
/// with each code reserved; a wrong guess that took a code's last try kills that code. A
/// channel brings only how its codes are stored (`reserve`, `kill`) and hashed (`matches`).
enum CodeGuess {
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

    static func run<Code: Sendable>(
        _ live: [Code], limit: Int, reserve: (Code) async throws -> Int?, matches: (Code) throws -> Bool, kill: (Code) async throws -> Void
    ) async throws -> Outcome<Code> {
        guard !live.isEmpty else { return .nothingLive }
        var reserved: [(code: Code, attempt: Int)] = []
        for code in live {
            if let attempt = try await reserve(code) { reserved.append((code, attempt)) }
        }
        guard !reserved.isEmpty else { return .unreserved }
        for candidate in reserved where try matches(candidate.code) { return .matched(candidate.code) }
        var mostLeft: Int?
        for candidate in reserved {
            switch MagicCodePolicy.wrongCode(attempt: candidate.attempt, maxAttempts: limit) {
            case .exhausted: try await kill(candidate.code)
            case .retry(let left): mostLeft = max(mostLeft ?? 0, left)
            }
        }
        return mostLeft.map { .wrong(attemptsLeft: $0) } ?? .killed
    }
}
