import Crypto
import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// Per-IP request limits and per-account login lockout, counted in the database so that
/// every node sees the same numbers. Every limit is reserved in one atomic statement before the
/// work it guards (STYLE.md rule 11), so requests released together cannot all pass a check.
///
/// Per-IP counters key on the client's real address whatever the preset's privacy setting says
/// (privacy governs what is stored, not what is limited): the address is turned into a keyed
/// hash first, so the counters' keys in the database reveal no address.
struct Throttle: Sendable {
    let store: any ThrottleStore
    let settings: ThrottlingSettings
    /// `GATEHOUSE_IP_LIMITS`; per-account limits apply whatever it says.
    let ipLimits: Bool
    let clock: any WallClock
    let copy: [String: String]
    /// The key of the addresses' keyed hash (shared by every node through the database).
    let chainKey: RefreshChainKey
    /// The way past a lockout that an attacker guessing passwords lacks, said in the 429.
    let recovery: SignInMethods

    /// Counts one `action` from the client's address in a fixed window and refuses past `limit`.
    func limitIP(_ action: String, client: ClientInfo, limit: Int, windowSeconds: Int64) async throws {
        guard ipLimits, let key = try addressKey(client) else { return }
        try await self.limit("\(action):\(key)", limit: limit, windowSeconds: windowSeconds)
    }

    /// Counts one hit on `key` in a fixed window and refuses past `limit`. Always on:
    /// `GATEHOUSE_IP_LIMITS` lifts only the per-IP limits of `limitIP`. The hit is counted by
    /// one `INSERT … ON CONFLICT … RETURNING count` before the caller's work, refused ones too.
    func limit(_ key: String, limit: Int, windowSeconds: Int64) async throws {
        let now = clock.now.unixSeconds
        let windowStart = now - now % windowSeconds
        let count = try await store.hitRateLimit(key: "\(key):\(windowSeconds)", windowStart: windowStart)
        if count > limit { throw spent(windowStart: windowStart, windowSeconds: windowSeconds, now: now) }
    }

    /// Refuses as `limit` would once the window's hits have reached `limit`, counting nothing:
    /// for a request that must answer like one that spends the limit without spending it.
    func refuseIfSpent(_ key: String, limit: Int, windowSeconds: Int64) async throws {
        let now = clock.now.unixSeconds
        let windowStart = now - now % windowSeconds
        if try await store.rateLimitCount(key: "\(key):\(windowSeconds)", windowStart: windowStart) >= limit {
            throw spent(windowStart: windowStart, windowSeconds: windowSeconds, now: now)
        }
    }

    private func spent(windowStart: Int64, windowSeconds: Int64, now: Int64) -> GatehouseError {
        GatehouseError(
            status: 429, code: .rateLimited, message: copy["error.rate_limited"] ?? "Too many requests. Please wait a moment and try again.",
            retryAfter: Int(windowStart + windowSeconds - now))
    }

    static func accountKey(_ normalizedEmail: String) -> String { "login:\(normalizedEmail)" }

    /// Reserves one password attempt on the account before the hash is checked (R7): 429
    /// `too_many_attempts` while it is locked, otherwise the attempt already counts as a
    /// failure, and the one that reaches the threshold locks the account for everyone else at
    /// once. `succeeded` undoes it; `failed` counts the address.
    func reserveAttempt(_ account: String) async throws -> AttemptReservation {
        let reservation = try await store.reserveAttempt(
            key: Self.accountKey(account), at: clock.now, schedule: LockoutPolicy.schedule(settings))
        if case .locked(let until) = reservation {
            throw tooManyAttempts(LockoutPolicy.wait(until: until, at: clock.now))
        }
        return reservation
    }

    /// A reserved attempt that failed: counts the client's address (for the CAPTCHA threshold)
    /// and returns the wait when this attempt locked the account.
    func failed(_ reservation: AttemptReservation, client: ClientInfo) async throws -> Int? {
        if let key = try addressKey(client) {
            let now = clock.now.unixSeconds
            _ = try await store.hitRateLimit(key: Self.ipFailureKey(key), windowStart: now - now % 3_600)
        }
        return LockoutPolicy.wait(after: reservation, at: clock.now, settings: settings)
    }

    /// A reserved attempt that succeeded, or the owner proving the inbox: the count starts again.
    func clearAccount(_ account: String) async throws {
        try await store.clearThrottle(key: Self.accountKey(account))
    }

    /// Failed logins from the client's address in the current hour.
    func ipFailures(_ client: ClientInfo) async throws -> Int {
        guard let key = try addressKey(client) else { return 0 }
        let now = clock.now.unixSeconds
        return try await store.rateLimitCount(key: Self.ipFailureKey(key), windowStart: now - now % 3_600)
    }

    static func ipFailureKey(_ addressKey: String) -> String { "login-failure:\(addressKey)" }

    /// Wrong operator keys from one address: the tenth locks the address out of that key for
    /// five minutes, each further one (after a lock ends) for longer.
    static let operatorKeySchedule = LockSchedule(threshold: 10, waits: [300, 900, 3_600])

    /// Reserves one try of the operator key `name` (the admin key, the service-role key) from
    /// the client's address before the key is compared, in one atomic statement: 429
    /// `rate_limited` with `Retry-After` while the address is locked out (the right key too).
    /// Counted whatever `GATEHOUSE_IP_LIMITS` says: this guards the operator's keys, as the
    /// console's sign-in form is.
    func reserveKeyAttempt(_ name: String, client: ClientInfo) async throws -> String {
        try await reserveSecretAttempt(
            "operator-key:\(name)", client: client, schedule: Self.operatorKeySchedule, refusal: "Too many wrong keys from this address.")
    }

    /// Wrong secrets of one OpenID client from one address: the fiftieth locks the address out
    /// of that client for five minutes. Higher than the operator keys' threshold: a backend's
    /// token requests run many at once, and each holds a reservation until its secret checks out.
    static let clientSecretSchedule = LockSchedule(threshold: 50, waits: [300, 900, 3_600])

    /// Reserves one try of an OpenID client's secret from the client's address before the
    /// secret is compared (issue 60), as `reserveKeyAttempt` does for the operator's keys:
    /// wrong secrets lock the address out of that client for a while, the right one too.
    func reserveClientSecretAttempt(_ clientID: String, client: ClientInfo) async throws -> String {
        try await reserveSecretAttempt(
            "oauth-client-secret:\(clientID)", client: client, schedule: Self.clientSecretSchedule,
            refusal: "Too many wrong client secrets from this address.")
    }

    /// One try of a secret (`what`) from the client's address, reserved in one atomic statement
    /// before the secret is compared; the key to clear once it checks out.
    private func reserveSecretAttempt(_ what: String, client: ClientInfo, schedule: LockSchedule, refusal: String) async throws -> String {
        let key = "\(what):\(try addressKey(client) ?? "unknown")"
        if case .locked(let until) = try await store.reserveAttempt(key: key, at: clock.now, schedule: schedule) {
            throw GatehouseError(
                status: 429, code: .rateLimited, message: refusal + " Wait a few minutes and try again.",
                retryAfter: LockoutPolicy.wait(until: until, at: clock.now))
        }
        return key
    }

    /// The key was right: the address's count starts again.
    func clearKeyAttempts(_ key: String) async throws {
        try await store.clearThrottle(key: key)
    }

    /// The keyed hash of the client's address (HMAC-SHA256 under a key derived from the
    /// stored chain key, 128 bits, base64url); nil when the address is unknown.
    func addressKey(_ client: ClientInfo) throws -> String? {
        guard let ip = client.ip else { return nil }
        return try keyed(ip)
    }

    /// The keyed hash of the client's network (`IPAddress.limitNetwork`: its /24 or /64); nil
    /// when the address is unknown or not an address.
    func networkKey(_ client: ClientInfo) throws -> String? {
        guard let ip = client.ip, let address = IPAddress(ip) else { return nil }
        return try keyed(address.limitNetwork)
    }

    private func keyed(_ text: String) throws -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: try chainKey.derived("gatehouse client address counters"))
        return Data(Data(mac).prefix(16)).base64URLEncoded
    }

    func tooManyAttempts(_ wait: Int) -> GatehouseError {
        GatehouseError(status: 429, code: .tooManyAttempts, message: copy["error.too_many_attempts"] ?? defaultLockoutMessage, retryAfter: wait)
    }

    /// The lockout's words: the wait, and the way in that does not depend on the password
    /// (finding 11: a lockout kept up by a stranger must not keep the owner out).
    private var defaultLockoutMessage: String {
        let wait = "Too many failed attempts. Please wait before trying again."
        if recovery.emailPassword { return wait + " To sign in now, reset your password from the link we email you." }
        if recovery.magicLink { return wait + " To sign in now, use a sign-in link sent to your email." }
        return wait
    }
}
