import Foundation
import GatehouseCore
import GatehouseStore

/// Per-IP request limits and per-account login lockout, counted in the database so that
/// every node sees the same numbers.
struct ThrottleService: Sendable {
    let store: any GatehouseStore
    let settings: ThrottlingSettings
    /// `GATEHOUSE_IP_LIMITS`; per-account limits apply whatever it says.
    let ipLimits: Bool
    let clock: any WallClock
    let copy: [String: String]

    /// Counts one `action` from `ip` in a fixed window and refuses past `limit`.
    func limitIP(_ action: String, ip: String?, limit: Int, windowSeconds: Int64) async throws {
        guard ipLimits, let ip else { return }
        try await self.limit("\(action):\(ip)", limit: limit, windowSeconds: windowSeconds)
    }

    /// Counts one hit on `key` in a fixed window and refuses past `limit`. Always on:
    /// `GATEHOUSE_IP_LIMITS` lifts only the per-IP limits of `limitIP`.
    func limit(_ key: String, limit: Int, windowSeconds: Int64) async throws {
        let now = clock.now.unixSeconds
        let windowStart = now - now % windowSeconds
        let count = try await store.hitRateLimit(key: "\(key):\(windowSeconds)", windowStart: windowStart)
        if count > limit {
            throw GatehouseError(
                status: 429, code: .rateLimited,
                message: copy["error.rate_limited"] ?? "Too many requests. Please wait a moment and try again.",
                retryAfter: Int(windowStart + windowSeconds - now))
        }
    }

    static func accountKey(_ normalizedEmail: String) -> String { "login:\(normalizedEmail)" }

    /// Refuses with 429 `too_many_attempts` while the account is locked.
    func checkAccount(_ normalizedEmail: String) async throws {
        guard let state = try await store.throttle(key: Self.accountKey(normalizedEmail)),
            let wait = state.retryAfter(at: clock.now)
        else { return }
        throw tooManyAttempts(wait)
    }

    /// Failed logins from `ip` in the current hour.
    func ipFailures(_ ip: String) async throws -> Int {
        let now = clock.now.unixSeconds
        return try await store.rateLimitCount(key: Self.ipFailureKey(ip), windowStart: now - now % 3_600)
    }

    static func ipFailureKey(_ ip: String) -> String { "login-failure:\(ip)" }

    /// Counts a failed login for the account and the IP; returns the wait when this failure
    /// locked the account.
    func recordFailure(_ normalizedEmail: String, ip: String?) async throws -> Int? {
        let now = clock.now
        let key = Self.accountKey(normalizedEmail)
        let failures = try await store.recordFailure(key: key, at: now)
        if let ip {
            let hour = now.unixSeconds - now.unixSeconds % 3_600
            _ = try await store.hitRateLimit(key: Self.ipFailureKey(ip), windowStart: hour)
        }
        guard let lock = LoginThrottlePolicy.lock(failures: failures, now: now, settings: settings) else { return nil }
        try await store.setLock(key: key, until: lock)
        return ThrottleState(failures: failures, lockedUntil: lock).retryAfter(at: now)
    }

    func clearAccount(_ normalizedEmail: String) async throws {
        try await store.clearThrottle(key: Self.accountKey(normalizedEmail))
    }

    func tooManyAttempts(_ wait: Int) -> GatehouseError {
        GatehouseError(
            status: 429, code: .tooManyAttempts,
            message: copy["error.too_many_attempts"] ?? "Too many failed attempts. Please wait before trying again.",
            retryAfter: wait)
    }
}
