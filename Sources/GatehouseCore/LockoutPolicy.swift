import Foundation
import GatehouseWire

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
public enum LockoutPolicy {
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

    /// The whole seconds a key locked until `until` waits at `now`: at least one, so a 429 never
    /// says "try again in 0 seconds".
    public static func wait(until: Date, at now: Date) -> Int {
        ThrottleState(lockedUntil: until).retryAfter(at: now) ?? 1
    }

    /// The wait to announce after a reserved attempt failed: the lock it set when its failure
    /// reached the threshold, else `nil` (the attempt only counted).
    public static func wait(after reservation: AttemptReservation, at now: Date, settings: ThrottlingSettings) -> Int? {
        guard case .allowed(let failures, let lockedUntil?) = reservation, failures >= settings.loginFailuresBeforeLockout else {
            return nil
        }
        return ThrottleState(lockedUntil: lockedUntil).retryAfter(at: now)
    }
}

/// The policy's former name, for code written before the move (the server's rewrite in flight).
public typealias LoginThrottlePolicy = LockoutPolicy

/// Lock waits by failure count (see `LockoutPolicy.schedule`).
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
