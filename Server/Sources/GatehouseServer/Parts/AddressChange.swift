import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Making another address an account's (issue 46), for every way it happens: an operator's
/// change (`OperatorService.changeEmail`, the service role's `PUT /admin/users/{id}`) and an
/// email-change link followed (`EmailVerificationService.signIn`). In the caller's transaction,
/// which holds the account's row.
enum AddressChange {
    typealias Changing = any UserStore & IdentityStore & EmailTokenStore

    /// What changed: nothing (the address was the account's already, in the same state), or the
    /// address and whether it is now verified.
    enum Outcome: Equatable {
        case unchanged
        case changed(verified: Bool)
    }

    /// `address` becomes the account's, verified when `verified` (or when it is the account's
    /// verified address already). The email identity follows it, so a password and a magic link
    /// go by the new address; the account's live reset links end with the old one (they are found
    /// by the account, not the address). Until the new address is verified, its owner's first
    /// proof ends every other way in, as for any unverified address. A unique key refuses an
    /// address another account has (`StoreError.uniqueViolation`, for the caller to answer).
    static func apply(_ work: Work<Changing>, _ stored: User, to address: String, verified: Bool) async throws -> Outcome {
        let normalized = EmailAddress.normalize(address)
        let same = stored.normalizedEmail == normalized
        let verifiedAt = verified ? (same ? stored.emailVerifiedAt ?? work.now : work.now) : (same ? stored.emailVerifiedAt : nil)
        guard !same || verifiedAt != stored.emailVerifiedAt || stored.email != address else { return .unchanged }
        try await work.tx.updateEmail(stored.id, email: address, normalizedEmail: normalized, verifiedAt: verifiedAt, now: work.now)
        if !same {
            try await work.tx.retireEmailTokens(userID: stored.id, normalizedEmail: nil, purpose: .passwordReset, at: work.now)
            if let identity = try await work.tx.identities(of: stored.id).first(where: { $0.provider == .email }) {
                _ = try await work.tx.deleteIdentities(of: stored.id, provider: .email)
                try await work.tx.insertIdentity(
                    Identity(userID: stored.id, provider: .email, subject: normalized, email: address, createdAt: identity.createdAt))
            }
        }
        return .changed(verified: verifiedAt != nil)
    }

    /// An address another account has, as every surface answers it.
    static func inUse(_ error: StoreError) -> Bool {
        error.uniqueKey == .email || error.uniqueKey == .identity
    }
}
