import Foundation

/// One sign-in on one device. Its refresh tokens form a chain (the family); revoking the
/// session ends them all.
public struct Session: Sendable, Equatable {
    public var id: SessionID
    public var userID: UserID
    /// How the person signed in: `email`, `apple`, `google`, `anonymous`, `magic_link`.
    public var provider: String
    public var createdAt: Date
    public var lastActiveAt: Date
    /// The end of the absolute lifetime, when the preset sets one.
    public var expiresAt: Date?
    public var revokedAt: Date?
    public var revokedReason: String?
    /// As the preset's privacy setting keeps them.
    public var userAgent: String?
    public var ipAddress: String?

    public init(
        id: SessionID = .random(), userID: UserID, provider: String, createdAt: Date, lastActiveAt: Date? = nil,
        expiresAt: Date? = nil, revokedAt: Date? = nil, revokedReason: String? = nil, userAgent: String? = nil,
        ipAddress: String? = nil
    ) {
        self.id = id
        self.userID = userID
        self.provider = provider
        self.createdAt = createdAt
        self.lastActiveAt = lastActiveAt ?? createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.revokedReason = revokedReason
        self.userAgent = userAgent
        self.ipAddress = ipAddress
    }

    public var isRevoked: Bool { revokedAt != nil }

    /// Whether the session may still be used at `now` under `settings`.
    public func isLive(at now: Date, settings: TokenSettings) -> Bool {
        if revokedAt != nil { return false }
        if let expiresAt, expiresAt <= now { return false }
        if let inactivity = settings.refreshInactivityTTLSeconds,
            lastActiveAt.addingTimeInterval(TimeInterval(inactivity)) <= now
        {
            return false
        }
        return true
    }
}

/// A refresh token as stored: only its SHA-256 hash.
public struct RefreshTokenRecord: Sendable, Equatable {
    public var hash: [UInt8]
    public var sessionID: SessionID
    public var issuedAt: Date
    /// Sliding: each rotation issues a token valid for the preset's refresh lifetime from then.
    public var expiresAt: Date
    /// When it was exchanged for its successor; `nil` while it is the session's newest.
    public var rotatedAt: Date?

    public init(hash: [UInt8], sessionID: SessionID, issuedAt: Date, expiresAt: Date, rotatedAt: Date? = nil) {
        self.hash = hash
        self.sessionID = sessionID
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.rotatedAt = rotatedAt
    }
}

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
    public static func decide(token: RefreshTokenRecord, session: Session, now: Date, settings: TokenSettings) -> RefreshDecision {
        guard session.isLive(at: now, settings: settings) else { return .expired }
        if let rotatedAt = token.rotatedAt {
            let interval = TimeInterval(settings.refreshReuseIntervalSeconds)
            return now.timeIntervalSince(rotatedAt) <= interval ? .repeatSuccessor : .reuseDetected
        }
        return token.expiresAt > now ? .rotate : .expired
    }
}

/// Consecutive failed logins for one key (an account or an IP).
public struct ThrottleState: Sendable, Equatable {
    public var failures: Int
    public var lockedUntil: Date?

    public init(failures: Int = 0, lockedUntil: Date? = nil) {
        self.failures = failures
        self.lockedUntil = lockedUntil
    }

    /// Whole seconds to wait at `now`, or `nil` when attempts are allowed.
    public func retryAfter(at now: Date) -> Int? {
        guard let lockedUntil, lockedUntil > now else { return nil }
        return max(1, Int(lockedUntil.timeIntervalSince(now).rounded(.up)))
    }
}

/// Lockout after repeated failures (AT-07-06): from the threshold on, each failure locks the
/// key for a wait that doubles, up to the maximum.
public enum LoginThrottlePolicy {
    /// The lock a key gets once it has `failures` consecutive failures.
    public static func lock(failures: Int, now: Date, settings: ThrottlingSettings) -> Date? {
        guard failures >= settings.loginFailuresBeforeLockout else { return nil }
        let doublings = min(failures - settings.loginFailuresBeforeLockout, 30)
        let seconds = min(Double(settings.lockoutBaseSeconds) * pow(2, Double(doublings)), Double(settings.lockoutMaxSeconds))
        return now.addingTimeInterval(seconds)
    }

    /// The same waits as a table, for a store that must apply them inside the one atomic
    /// statement that reserves an attempt: `waits[i]` is the wait at `threshold + i` failures,
    /// the last entry the wait for every count past the table.
    public static func schedule(_ settings: ThrottlingSettings) -> LockSchedule {
        let start = Date(timeIntervalSince1970: 0)
        var waits: [Int64] = []
        var failures = max(1, settings.loginFailuresBeforeLockout)
        while let lock = lock(failures: failures, now: start, settings: settings) {
            let wait = Int64(lock.timeIntervalSince(start).rounded(.up))
            if let last = waits.last, last == wait { break }
            waits.append(wait)
            failures += 1
            if failures - settings.loginFailuresBeforeLockout > 31 { break }
        }
        return LockSchedule(threshold: max(1, settings.loginFailuresBeforeLockout), waits: waits.isEmpty ? [0] : waits)
    }
}

/// Lock waits by failure count (see `LoginThrottlePolicy.schedule`).
public struct LockSchedule: Sendable, Equatable {
    /// The failure count whose attempt locks the key first.
    public var threshold: Int
    /// Seconds locked from `threshold` failures on, one entry per further failure; the last
    /// entry holds for every count past the table.
    public var waits: [Int64]

    public init(threshold: Int, waits: [Int64]) {
        self.threshold = threshold
        self.waits = waits
    }

    /// Seconds a key with `failures` failures stays locked; `nil` below the threshold.
    public func wait(failures: Int) -> Int64? {
        guard failures >= threshold else { return nil }
        return waits[min(failures - threshold, waits.count - 1)]
    }
}

/// What reserving a login attempt gave.
public enum AttemptReservation: Sendable, Equatable {
    /// The attempt may go ahead; it already counts as the `failures`-th failure and locked
    /// the key until `lockedUntil` when it reached the threshold. Success clears both.
    case allowed(failures: Int, lockedUntil: Date?)
    /// The key is locked until then; nothing was counted.
    case locked(until: Date)
}
