import Foundation
import GatehouseWire

/// What to do with a presented refresh token.
public enum RefreshDecision: Sendable, Equatable {
    /// The newest token: issue its successor.
    case rotate
    /// Already rotated moments ago (a cold-start race): answer the same successor again.
    case repeatSuccessor
    /// Rotated long enough ago that only a copy can be presenting it: end the whole session.
    case reuseDetected
    /// Past its lifetime, or its session has ended.
    case expired
}

/// Refresh-token rotation with a reuse interval and family revocation.
public enum RefreshRotationPolicy {
    /// What to do with `token` of `session`, presented at `now`.
    public static func decide(token: RefreshTokenRecord, session: Session, now: Date, settings: TokenSettings) -> RefreshDecision {
        guard session.isLive(at: now, settings: settings) else { return .expired }
        if let rotatedAt = token.rotatedAt {
            let interval = TimeInterval(settings.refreshReuseIntervalSeconds)
            return now.timeIntervalSince(rotatedAt) <= interval ? .repeatSuccessor : .reuseDetected
        }
        return token.expiresAt > now ? .rotate : .expired
    }
}
