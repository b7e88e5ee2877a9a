import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// An operator's changes to an account's data (issue 46): its metadata and its address. Today
/// through `/auth/v1/admin/users` with the service role key (GoTrue's `PUT /admin/users/{id}`);
/// another operator surface would call the same actions.
extension OperatorService {
    /// Merges `user_metadata` and `app_metadata` (top level; `null` removes a key) under
    /// `AccountMetadata`'s rules; audited once per object changed.
    func setMetadata(
        _ reference: String, userMetadata: [String: JSONValue]?, appMetadata: [String: JSONValue]?, by actor: String = operatorActor,
        client: ClientInfo? = nil
    ) async throws {
        let user = try await find(reference)
        var patches: [AccountMetadata.Kind: [String: JSONValue]] = [:]
        patches[.user] = userMetadata
        patches[.app] = appMetadata
        try await unitOfWork.run(client: client) { [patches] work in
            for kind in try await MetadataWrites.apply(work.narrowed { $0 }, user: user.id, patches, by: .operator) {
                try await work.audit(.metadataChanged, user: user.id, details: ["kind": kind.rawValue, "by": actor])
            }
        }
    }

    /// Changes the account's address as the operator says, without a mail: unverified unless
    /// `verified` (the operator vouches for it). The address is the account's email identity's
    /// too, so a password and a magic link follow it; sessions stay. Until it is verified, its
    /// owner's first proof (a magic link, a reset link) ends every other way in, as for any
    /// unverified address. 409 `email_in_use` when another account has it.
    func changeEmail(_ reference: String, to address: String, verified: Bool, by actor: String = operatorActor, client: ClientInfo? = nil) async throws {
        let user = try await find(reference)
        guard EmailAddress.isValid(address) else {
            throw GatehouseError(status: 400, code: .invalidEmail, message: "Unable to validate email address: invalid format")
        }
        let normalized = EmailAddress.normalize(address)
        do {
            try await unitOfWork.run(client: client) { work in
                try await work.tx.lockUser(user.id)
                guard let stored = try await work.tx.user(id: user.id) else { throw GatehouseError.notFound("User not found") }
                let same = stored.normalizedEmail == normalized
                let verifiedAt = verified ? (same ? stored.emailVerifiedAt ?? work.now : work.now) : (same ? stored.emailVerifiedAt : nil)
                guard !same || verifiedAt != stored.emailVerifiedAt || stored.email != address else { return }
                try await work.tx.updateEmail(user.id, email: address, normalizedEmail: normalized, verifiedAt: verifiedAt, now: work.now)
                // A reset link mailed to the old address is found by the account, not the address:
                // it ends with the address, or its holder could still take the account.
                if !same { try await work.tx.retireEmailTokens(userID: user.id, normalizedEmail: nil, purpose: .passwordReset, at: work.now) }
                if !same, let identity = try await work.tx.identities(of: user.id).first(where: { $0.provider == .email }) {
                    _ = try await work.tx.deleteIdentities(of: user.id, provider: .email)
                    try await work.tx.insertIdentity(
                        Identity(userID: user.id, provider: .email, subject: normalized, email: address, createdAt: identity.createdAt))
                }
                try await work.audit(.emailChanged, user: user.id, details: ["by": actor, "verified": String(verifiedAt != nil)])
            }
        } catch let error as StoreError where error.uniqueKey == .email || error.uniqueKey == .identity {
            throw GatehouseError(status: 409, code: .emailInUse, message: "This email is already in use.")
        }
    }
}
