import Foundation
import GatehouseCore
import GatehouseStore

/// The changes of an account's life that several use cases share: creating one (with a
/// temporary handle), upgrading an anonymous one, ending what an unproven address let in, and
/// deleting one. Each runs inside the caller's unit of work, so its jobs and events commit
/// with it.
struct AccountLifecycle: Sendable {
    let handles: HandleSettings

    /// Runs `body` with a fresh temporary handle (decision 9) when handles are on, trying
    /// another one if it happens to be taken.
    func withTemporaryHandle<T>(_ body: (String?) async throws -> T) async throws -> T {
        guard handles.enabled else { return try await body(nil) }
        for attempt in 1...5 {
            let handle = handles.temporaryPrefix + String(format: "%06d", Int.random(in: 0..<1_000_000))
            do {
                return try await body(handle)
            } catch let error as StoreError where error.uniqueKey == .handle && attempt < 5 {
                continue
            }
        }
        throw GatehouseError.internalError(nil)
    }

    /// A new account with its first identity (none for a passkey account: its passkey is its
    /// way in); records `user.created` for `provider`.
    func create(_ work: Work, _ user: User, identity: Identity?, provider: Provider) async throws {
        try await work.tx.insertUser(user)
        if let identity { try await work.tx.insertIdentity(identity) }
        try await work.record(.userCreated, user: user.id, data: ["provider": provider.rawValue])
    }

    /// An anonymous account that gains a real identity keeps its id and data (contract, linking
    /// paragraph): it stops being anonymous, loses its `anonymous` identity, and `user.upgraded`
    /// is recorded; its Idempotency-Keys are forgotten.
    func upgradeAnonymous(_ work: Work, _ id: UserID, provider: Provider) async throws {
        try await work.tx.markUpgraded(id, now: work.now)
        _ = try await work.tx.deleteIdentities(of: id, provider: .anonymous)
        // An anonymous start's Idempotency-Key must not sign in to the permanent account.
        try await work.tx.deleteIdempotencyKeys(of: id)
        try await work.record(.userUpgraded, user: id, data: ["provider": provider.rawValue])
    }

    /// Deletes an account: queues the revocation of Apple's token (if Gatehouse holds one),
    /// deletes the user (its identities, sessions, tokens and links go by cascade) and records
    /// `user.deleted` with `reason`. False when there is no such user.
    func delete(_ work: Work, _ id: UserID, reason: String) async throws -> Bool {
        try await work.queueAppleRevocation(of: id)
        guard try await work.tx.deleteUser(id) else { return false }
        try await work.record(.userDeleted, user: id, data: ["reason": reason])
        return true
    }

    /// The inbox owner proves an address the account never verified (finding 13): whoever set
    /// the account up with it may not be that person, so every way in added before this proof
    /// ends: the password (unless the proof sets a new one), every provider identity, every
    /// session and every Idempotency-Key that could replay a sign-in.
    func endWhatCameBeforeProof(_ work: Work, _ user: User, removePassword: Bool) async throws {
        let tx = work.tx
        if removePassword, user.passwordHash != nil {
            try await tx.updatePassword(user.id, hash: nil, changedAt: work.now, now: work.now)
        }
        var removed: [String] = []
        for identity in try await tx.identities(of: user.id) where identity.provider != .email && identity.provider != .anonymous {
            if identity.provider == .apple { try await work.queueAppleRevocation(of: user.id) }
            _ = try await tx.deleteIdentities(of: user.id, provider: identity.provider)
            removed.append(identity.provider.rawValue)
        }
        let revoked = try await tx.revokeSessions(of: user.id, keeping: nil, reason: "unverified_takeover_guard", at: work.now)
        try await tx.deleteIdempotencyKeys(of: user.id)
        try await work.audit(
            .unverifiedAccessRemoved, user: user.id,
            details: ["sessions_revoked": String(revoked.count), "identities_removed": removed.sorted().joined(separator: ","),
                      "password_removed": String(removePassword && user.passwordHash != nil)])
    }
}
