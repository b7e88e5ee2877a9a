import Foundation
import GatehouseWire

/// The magic link's 6-digit code (finding 1, issue 19): each guess reserves one of the preset's
/// `magic_code_max_attempts` before it is compared, and the wrong guess that uses the last one
/// kills the link, so the answers are `token_invalid` while attempts are left and
/// `code_exhausted` once none are.
public enum MagicCodePolicy {
    /// Why a presented link or code is refused.
    public enum Refusal: Sendable, Equatable {
        /// Past its lifetime: `token_expired`.
        case expired
        /// Used or superseded: `token_invalid`.
        case invalid
        /// Killed by wrong codes: `code_exhausted`.
        case exhausted
    }

    /// What a link (or the link of a code) is worth at `now`: `nil` while it may be used. A used
    /// link whose wrong codes reached the limit was killed by them.
    public static func refusal(_ token: EmailToken, at now: Date, maxAttempts: Int) -> Refusal? {
        switch token.state(at: now) {
        case .valid: nil
        case .expired: .expired
        case .used: token.codeAttempts >= maxAttempts ? .exhausted : .invalid
        }
    }

    /// Whether a code for which no attempt could be reserved is `code_exhausted`: it is still
    /// live (so only its count stopped the guess) or out of attempts. Otherwise it was used or
    /// expired meanwhile, and `refusal` says which.
    public static func isExhausted(unreserved token: EmailToken, at now: Date, maxAttempts: Int) -> Bool {
        token.state(at: now) == .valid || token.codeAttempts >= maxAttempts
    }

    /// The answer to a wrong code.
    public enum WrongCode: Sendable, Equatable {
        /// That was the last attempt: the link dies, `code_exhausted`.
        case exhausted
        /// `token_invalid` with `details.attempts_left`.
        case retry(attemptsLeft: Int)
    }

    /// The answer to a wrong code that took attempt number `attempt` (counted from 1).
    public static func wrongCode(attempt: Int, maxAttempts: Int) -> WrongCode {
        attempt >= maxAttempts ? .exhausted : .retry(attemptsLeft: maxAttempts - attempt)
    }
}
