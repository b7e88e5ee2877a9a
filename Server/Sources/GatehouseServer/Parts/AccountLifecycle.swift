import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// The changes of an account's life that several use cases share: creating one (with a
/// temporary handle), upgrading an anonymous one, ending what an unproven address let in, and
/// deleting one. Each runs inside the caller's unit of work, so its jobs and events commit
/// with it.
struct AccountLifecycle: Sendable {
    let handles: HandleSettings
    /// The app's hooks (`BEFORE_USER_CREATED`); nil where no account is ever made (the
    /// operator's commands and imports), which then cannot admit one.
    let hooks: AuthHooks?

    init(handles: HandleSettings, hooks: AuthHooks? = nil) {
        (self.handles, self.hooks) = (handles, hooks)
    }

    /// What each change writes and reads: a caller's unit of work declares it too.
    typealias Creating = any UserStore & IdentityStore
    typealias Upgrading = any ProfileStore & IdentityStore & IdempotencyStore
    typealias Deleting = any UserStore & PlanLedgerStore
    typealias Reading = any UserStore & IdentityStore & PasskeyStore & MFAFactorStore & RecoveryCodeStore
    typealias ProvingInbox = any UserStore & PasswordStore & IdentityStore & PasskeyStore & MFAFactorStore & RecoveryCodeStore
        & SessionStore & IdempotencyStore & PhoneStore

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

    /// `BEFORE_USER_CREATED` for `account`, asked before the transaction that makes it: the
    /// admission `create` takes. 403 `hook_rejected`, 503 `hook_unavailable`.
    func admit(_ account: NewAccount, client: ClientInfo) async throws -> AccountAdmission {
        guard let hooks else { throw GatehouseError.internalError(nil) }
        return try await hooks.admit(account, client: client)
    }

    /// Runs `body` with an admission when `needed` (read before its transaction) says an
    /// account will be made, and once more with one when its transaction finds it must make
    /// one after all (`AuthHooks.admitting`).
    func admitting<T>(
        _ account: NewAccount, client: ClientInfo, needed: Bool, _ body: (AccountAdmission?) async throws -> T
    ) async throws -> T {
        guard let hooks else { throw GatehouseError.internalError(nil) }
        return try await hooks.admitting(account, client: client, needed: needed, body)
    }

    /// A new account with its first identity (none for a passkey account: its passkey is its
    /// way in); records `user.created` for `provider`. Only with the app's admission
    /// (`BEFORE_USER_CREATED`, asked before the transaction): without one it throws
    /// `AccountAdmission.NotAsked` and nothing is written.
    func create(_ work: Work<Creating>, _ user: User, identity: Identity?, provider: Provider, admitted admission: AccountAdmission?) async throws {
        guard admission != nil else { throw AccountAdmission.NotAsked() }
        try await work.tx.insertUser(user)
        if let identity { try await work.tx.insertIdentity(identity) }
        try await work.record(.userCreated, user: user.id, data: ["provider": provider.rawValue])
    }

    /// An anonymous account that gains a real identity keeps its id and data (contract, linking
    /// paragraph): it stops being anonymous, loses its `anonymous` identity, and `user.upgraded`
    /// is recorded; its Idempotency-Keys are forgotten.
    func upgradeAnonymous(_ work: Work<Upgrading>, _ id: UserID, provider: Provider) async throws {
        try await work.tx.markUpgraded(id, now: work.now)
        _ = try await work.tx.deleteIdentities(of: id, provider: .anonymous)
        // An anonymous start's Idempotency-Key must not sign in to the permanent account.
        try await work.tx.deleteIdempotencyKeys(of: id)
        try await work.record(.userUpgraded, user: id, data: ["provider": provider.rawValue])
    }

    /// Deletes an account: queues the revocation of Apple's token (if Gatehouse holds one) and
    /// the cancellation of its Stripe subscriptions and Google Play purchases, deletes the user (its identities, sessions,
    /// tokens, links and ledger rows go by cascade) and records `user.deleted` with `reason`.
    /// False when there is no such user.
    func delete(_ work: Work<Deleting>, _ id: UserID, reason: String) async throws -> Bool {
        for credential in Credential.allCases {
            switch credential {
            // Gatehouse may hold a token of Apple's: Apple is told, by a job that outlives the row.
            case .apple: try await work.queueAppleRevocation(of: id)
            // Their rows reference the user's and go with it (ON DELETE CASCADE in every migration).
            case .password, .emailLink, .google, .passkey, .anonymous, .phone, .totp, .recoveryCodes: continue
            }
        }
        for source in PlanSource.allCases {
            switch source {
            // Stripe would go on billing: every live subscription is cancelled, by a job.
            case .stripe:
                // Every customer of the account, merged ones too (issue 59, finding 1).
                for customer in try await work.tx.stripeCustomers(of: id) { try await work.enqueueJob(kind: .stripeCancel, payload: ["customer": customer]) }
            // Google Play would go on billing too, and its API cancels: every purchase that may
            // still bill is cancelled by the developer (it is not restored), by a job.
            case .googlePlay:
                for purchase in try await work.tx.googlePlayPurchases(of: id) where purchase.mayBill {
                    try await work.enqueueJob(kind: .googlePlayCancel, payload: ["token": purchase.purchaseToken])
                }
            // Apple bills through the person's Apple account, which they cancel there (no API
            // cancels for the developer); grants and the trial are rows of the account's own.
            case .appStore, .grant, .trial: continue
            }
        }
        guard try await work.tx.deleteUser(id) else { return false }
        try await work.record(.userDeleted, user: id, data: ["reason": reason])
        return true
    }

    /// What the account holds of each credential in the catalogue: the input of the last-way-in
    /// rule (read in the caller's transaction, after it locked the account's row) and what
    /// operators are shown (the admin API's `credentials`, the console's user page).
    static func inventory(of userID: UserID, in reader: Reading) async throws -> CredentialInventory {
        guard let user = try await reader.user(id: userID) else { return CredentialInventory() }
        let identities = try await reader.identities(of: userID)
        var inventory = CredentialInventory()
        for credential in Credential.allCases {
            switch credential {
            case .password:
                inventory[credential] = user.passwordHash == nil ? 0 : 1
            case .emailLink, .apple, .google, .anonymous, .phone:
                inventory[credential] = identities.filter { $0.provider == credential.provider }.count
            case .passkey:
                inventory[credential] = try await reader.passkeys(of: userID).count
            case .totp:
                inventory[credential] = try await reader.mfaFactors(of: userID).filter(\.isConfirmed).count
            case .recoveryCodes:
                inventory[credential] = try await reader.unusedRecoveryCodes(of: userID)
            }
        }
        return inventory
    }

    /// 409 `last_identity` when removing `removed` would leave the account no way back in.
    func requireAnotherWayIn(_ work: Work<Reading>, _ userID: UserID, removing removed: [Credential: Int], message: String) async throws {
        guard try await Self.inventory(of: userID, in: work.tx).leavesNoWayIn(removing: removed) else { return }
        throw GatehouseError(status: 409, code: .lastIdentity, message: message)
    }

    /// The inbox owner's proof of the address (a magic link or its code, a reset link or its
    /// page, `/auth/v1`'s recovery and one-time code): see `proveOwnership`.
    func proveInbox(_ work: Work<ProvingInbox>, _ user: User, removePassword: Bool) async throws -> User {
        try await proveOwnership(work, user, proved: .emailLink, removePassword: removePassword)
    }

    /// The owner's proof of an address or a number (`Credential.ownerProofs`): the one place
    /// every proof path goes through. When the account never verified what was proved,
    /// whoever set it up may not be that person, so every way in and every second factor added
    /// before the proof ends, as the catalogue (`Credential.atProof(of:)`) says, on either
    /// surface: the password (unless the proof sets a new one), provider identities, passkeys,
    /// a number or an address never verified, second factors with their recovery codes and
    /// open challenges, every session and every Idempotency-Key that could replay a sign-in.
    /// What was proved is then verified. Answers the account as it now stands.
    func proveOwnership(_ work: Work<ProvingInbox>, _ user: User, proved: Credential, removePassword: Bool) async throws -> User {
        let tx = work.tx
        // Parallel additions (a passkey, a factor) take turns on the row with the proof.
        try await tx.lockUser(user.id)
        guard var user = try await tx.user(id: user.id) else { return user }
        switch proved {
        case .emailLink: guard !user.emailVerified, user.normalizedEmail != nil else { return user }
        case .phone: guard user.phoneVerifiedAt == nil, user.phone != nil else { return user }
        case .password, .apple, .google, .passkey, .anonymous, .totp, .recoveryCodes:
            preconditionFailure("\(proved) is not an owner proof")
        }
        var ended: [String] = []
        for credential in Credential.allCases where credential.atProof(of: proved) == .ended {
            switch credential {
            case .password:
                guard removePassword, user.passwordHash != nil else { continue }
                try await tx.updatePassword(user.id, hash: nil, changedAt: work.now, now: work.now)
                user.passwordHash = nil
                user.passwordChangedAt = work.now
                ended.append(credential.rawValue)
            case .emailLink:
                // Only an address nobody proved: a verified one was proved by its own owner.
                guard user.email != nil, !user.emailVerified else { continue }
                try await tx.updateEmail(user.id, email: nil, normalizedEmail: nil, verifiedAt: nil, now: work.now)
                _ = try await tx.deleteIdentities(of: user.id, provider: .email)
                (user.email, user.normalizedEmail) = (nil, nil)
                ended.append(credential.rawValue)
            case .phone:
                guard user.phone != nil else { continue }
                try await tx.setPhone(user.id, phone: nil, verifiedAt: nil, now: work.now)
                _ = try await tx.deleteIdentities(of: user.id, provider: .phone)
                (user.phone, user.phoneVerifiedAt) = (nil, nil)
                ended.append(credential.rawValue)
            case .apple, .google, .anonymous:
                guard let provider = credential.provider,
                    try await tx.identities(of: user.id).contains(where: { $0.provider == provider })
                else { continue }
                if provider == .apple { try await work.queueAppleRevocation(of: user.id) }
                _ = try await tx.deleteIdentities(of: user.id, provider: provider)
                ended.append(credential.rawValue)
            case .passkey:
                if try await tx.deletePasskeys(of: user.id) > 0 { ended.append(credential.rawValue) }
            case .totp:
                if try await tx.deleteMFA(of: user.id) > 0 { ended.append(credential.rawValue) }
            case .recoveryCodes:
                guard try await tx.unusedRecoveryCodes(of: user.id) > 0 else { continue }
                try await tx.deleteRecoveryCodes(of: user.id)
                ended.append(credential.rawValue)
            }
        }
        let revoked = try await tx.revokeSessions(of: user.id, keeping: nil, reason: .unverifiedTakeoverGuard, at: work.now)
        try await tx.deleteIdempotencyKeys(of: user.id)
        if proved == .phone, let phone = user.phone {
            try await tx.setPhone(user.id, phone: phone, verifiedAt: work.now, now: work.now)
            user.phoneVerifiedAt = work.now
        } else if let normalized = user.normalizedEmail {
            _ = try await tx.markEmailVerified(user.id, normalizedEmail: normalized, at: work.now)
            user.emailVerifiedAt = work.now
        }
        try await work.audit(
            .unverifiedAccessRemoved, user: user.id,
            details: ["proved": proved.rawValue, "sessions_revoked": String(revoked.count), "ended": ended.joined(separator: ","),
                      "password_removed": String(ended.contains(Credential.password.rawValue))])
        return user
    }
}
