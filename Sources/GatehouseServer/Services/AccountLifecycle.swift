import Foundation
import GatehouseCore
import GatehouseStore

/// The account changes several use cases share, done inside the caller's transaction so that
/// their jobs and events commit with them; the caller wakes the workers after the commit.
extension EventRecorder {
    /// Deletes an account: queues the revocation of Apple's token (if Gatehouse holds one),
    /// deletes the user (its identities, sessions, tokens and links go by cascade) and records
    /// `user.deleted` with `reason`. False when there is no such user.
    func deleteAccount(_ tx: any GatehouseStore, _ id: UserID, reason: String) async throws -> Bool {
        try await jobs.queueAppleRevocation(tx, user: id)
        guard try await tx.deleteUser(id) else { return false }
        try await record(tx, "user.deleted", user: id, data: ["reason": reason])
        return true
    }

    /// An anonymous account that gains a real identity keeps its id and data (contract, linking
    /// paragraph): it stops being anonymous, loses its `anonymous` identity, and `user.upgraded`
    /// is recorded; its Idempotency-Keys are forgotten.
    func upgradeAnonymous(_ tx: any GatehouseStore, _ id: UserID, provider: String) async throws {
        try await tx.markUpgraded(id, now: clock.now)
        _ = try await tx.deleteIdentities(of: id, provider: .anonymous)
        // An anonymous start's Idempotency-Key must not sign in to the permanent account.
        try await tx.deleteIdempotencyKeys(of: id)
        try await record(tx, "user.upgraded", user: id, data: ["provider": provider])
    }
}

extension MergeTokens {
    /// 409 `identity_in_use`; an anonymous caller also gets a merge token into `owner`
    /// (decision 4), a permanent one only the error.
    func identityInUse(_ message: String, caller: User, owner: UserID) throws -> GatehouseError {
        var error = GatehouseError(status: 409, code: .identityInUse, message: message)
        if caller.isAnonymous {
            error.details = ["merge_token": .string(try make(from: caller.id, to: owner))]
        }
        return error
    }
}
