import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// Passwords: the policy a new one must meet, the hash, and the attempt that checks one
/// against an account under the lockout. Every use case that takes a password (sign-up, login,
/// linking an email, reset, change, the proof before deletion) goes through here.
struct Credentials: Sendable {
    let hasher: PasswordHasher
    let policy: PasswordPolicy
    let breached: BreachedPasswordChecker?
    let throttle: Throttle
    let preset: Preset
    /// Audits refusals, each on its own (no transaction of a use case's).
    let audits: UnitOfWork<Void>
    /// One hash in flight per account on this node.
    let lanes = HashLanes()

    /// The one lockout key of an account's password, whatever name was typed to reach it (its
    /// address or its number; issue 58): its address when it has one (what a reset or a magic
    /// link clears), else its id.
    static func lockoutKey(_ user: User) -> String { user.normalizedEmail ?? user.id.description }

    /// Every password check (login, a sign-up's replay, a password change, the proof before a
    /// deletion) goes through here: an attempt on the account is reserved atomically before
    /// the hash (429 while locked), a success releases it, a failure stays counted and is
    /// audited. Returns the verification; a failure has already been recorded when it returns.
    func checkAttempt(
        _ password: String, against hash: String?, account: String, userID: UserID?, client: ClientInfo, event: AuditEvent.Name
    ) async throws -> PasswordHasher.Verification {
        let check = try await checkAttemptHeld(password, against: hash, account: account, userID: userID, client: client, event: event)
        try await check.release(in: throttle.store)
        return check.verification
    }

    /// `checkAttempt` for a caller that writes anyway once the password matches (a login's
    /// session): a match's reserved attempt is still held when this returns, and the caller gives
    /// it back with `PasswordCheck.release(in:)` in its own transaction, or on its own when it
    /// goes no further. One commit fewer on the login path (issue 61).
    func checkAttemptHeld(
        _ password: String, against hash: String?, account: String, userID: UserID?, client: ClientInfo, event: AuditEvent.Name
    ) async throws -> PasswordCheck {
        let reservation: AttemptReservation
        do {
            reservation = try await throttle.reserveAttempt(account)
        } catch {
            try await audits.audit(event, .locked, user: userID, client: client, details: ["reason": "account locked"])
            throw error
        }
        let verification = try await lanes.one(account) { try await hasher.verify(password, against: hash) }
        if hash != nil, verification.matches {
            return PasswordCheck(verification: verification, heldKey: Throttle.accountKey(account))
        }
        let wait = try await throttle.failed(reservation, client: client)
        try await audits.audit(event, .failure, user: userID, client: client, details: ["reason": "invalid credentials"])
        if let wait {
            try await audits.audit(.lockout, .locked, user: userID, client: client, details: ["retry_after": String(wait)])
        }
        return PasswordCheck(verification: PasswordHasher.Verification(matches: false, needsRehash: false), heldKey: nil)
    }

    /// Refuses `password` with 422 `weak_password` listing every failed rule.
    func checkStrength(_ password: String, email: String) async throws {
        let local = email.split(separator: "@").first.map(String.init) ?? ""
        var problems = policy.problems(password, context: [local, email, preset.app.name, preset.name])
        if problems.isEmpty, policy.settings.breachedCheck, let breached, await breached.isBreached(password) == true {
            problems.append(policy.breached)
        }
        guard problems.isEmpty else {
            throw GatehouseError(
                status: 422, code: .weakPassword, message: problems.map(\.message).joined(separator: " "),
                reasons: problems.map(\.code))
        }
    }

    /// The hash to store (on the hashing threads, never the event loop).
    func hash(_ password: String) async throws -> String {
        try await hasher.hash(password)
    }

    /// The address as typed (trimmed, NFC), when it may receive mail and own an account: valid, and
    /// already in its canonical form (finding 7: a fullwidth or otherwise compatibility-mapped
    /// look-alike would be stored and mailed as typed while it collides with the real address).
    /// 400 `invalid_email` otherwise.
    func canonicalAddress(_ email: String) throws -> String {
        guard let address = EmailAddress.canonical(email) else { throw GatehouseError.invalidEmail(preset) }
        return address
    }
}

/// A password checked under the lockout: the verification, and for a match the lockout key whose
/// reserved attempt is still counted until `release(in:)` gives it back.
struct PasswordCheck: Sendable {
    let verification: PasswordHasher.Verification
    /// The key of the attempt a match still holds; nil after a failure, which stays counted.
    let heldKey: String?

    var matches: Bool { verification.matches }

    /// Gives a match's attempt back (the account's count starts again) through `store`: a
    /// transaction's, so that it commits with the caller's write, or the store's own.
    func release(in store: any ThrottleStore) async throws {
        guard let heldKey else { return }
        try await store.clearThrottle(key: heldKey)
    }
}
