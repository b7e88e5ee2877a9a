import Foundation
import GatehouseCore
import GatehouseWire

/// Accounts: created, found, listed, disabled, re-addressed and deleted.
public protocol UserStore: Sendable {
    /// Inserts a new user; `.uniqueViolation` (`uniqueKey` `.email` or `.handle`) when the email or handle is taken.
    func insertUser(_ user: User) async throws(StoreError)
    func user(id: UserID) async throws(StoreError) -> User?
    func user(normalizedEmail: String) async throws(StoreError) -> User?
    /// Newest first. `search` matches the start of the normalised email or handle, the exact id,
    /// or a provider's exact subject.
    func users(search: String?, before: RowCursor?, limit: Int) async throws(StoreError) -> [User]
    /// How many accounts there are, anonymous ones included.
    func userCount() async throws(StoreError) -> Int
    /// Sets or clears the disabled state; false when no such user exists.
    func setDisabled(_ id: UserID, at date: Date?, reason: String?, now: Date) async throws(StoreError) -> Bool
    /// Marks the email verified (now) when it is still `normalizedEmail`; false otherwise.
    func markEmailVerified(_ id: UserID, normalizedEmail: String, at date: Date) async throws(StoreError) -> Bool
    /// Replaces the account's address (`.uniqueViolation`, `.email`, when another account has it).
    func updateEmail(_ id: UserID, email: String?, normalizedEmail: String?, verifiedAt: Date?, now: Date) async throws(StoreError)
    /// Deletes the account and, by cascade, everything that belongs to it; strips the client
    /// addresses from its audit rows and its address from the outbox.
    func deleteUser(_ id: UserID) async throws(StoreError) -> Bool
    /// Inside a transaction: holds the user's row until it ends, so one user's writes that must
    /// take turns (spends, links, deletion) do (PostgreSQL row lock; SQLite's single writer
    /// already serialises them).
    func lockUser(_ id: UserID) async throws(StoreError)
    /// Replaces one of the account's metadata objects (merged by the caller under
    /// `AccountMetadata`'s rules, inside a transaction that holds `lockUser`).
    func setMetadata(_ id: UserID, _ kind: AccountMetadata.Kind, _ object: [String: JSONValue], now: Date) async throws(StoreError)
}

/// A password's stored hash: every change is a compare-and-set on the hash it was decided from.
public protocol PasswordStore: Sendable {
    /// The start of each kind of stored password hash made elsewhere: bcrypt's `$2a$12$` (variant
    /// and cost) and Firebase scrypt's `$firebase-scrypt$<key id>`, once each.
    func passwordHashSchemes() async throws(StoreError) -> [String]
    /// Replaces the password hash (after a change, a reset or a re-hash); `nil` removes it.
    func updatePassword(_ id: UserID, hash: String?, changedAt: Date?, now: Date) async throws(StoreError)
    /// Replaces the hash with one of the same password under today's algorithm, only while the
    /// stored hash is still `old` (a reset or change in between wins); false when it was not.
    func rehashPassword(_ id: UserID, from old: String, to new: String, now: Date) async throws(StoreError) -> Bool
    /// A change of password decided from `old` (the hash the current password was checked
    /// against): written only while the stored hash is still `old`, in the same statement; false
    /// when another change, a reset or a re-hash came first.
    func changePassword(_ id: UserID, from old: String, to new: String, now: Date) async throws(StoreError) -> Bool
}

/// The providers' accounts linked to a user (Apple, Google, email).
public protocol IdentityStore: Sendable {
    /// `.uniqueViolation` (`.identity`) when the provider's account is linked already.
    func insertIdentity(_ identity: Identity) async throws(StoreError)
    func identities(of userID: UserID) async throws(StoreError) -> [Identity]
    /// The identities of every account of `ids`, read together (the console's lists); an account
    /// with none is absent.
    func identities(ofAccounts ids: [UserID]) async throws(StoreError) -> [UserID: [Identity]]
    /// The identity a provider knows as `subject`.
    func identity(provider: Provider, subject: String) async throws(StoreError) -> Identity?
    /// Updates what a provider says of an identity (its address, whether it is a relay).
    func updateIdentity(_ id: UUID, email: String?, isPrivateRelay: Bool) async throws(StoreError)
    /// Removes a user's identities of `provider`; returns how many it removed.
    func deleteIdentities(of userID: UserID, provider: Provider) async throws(StoreError) -> Int
}

/// Where a newest-first page ends: its last row's creation second and id (a UUID). The user
/// lists, an account's sessions and its credit ledger page by it, as `(created_at, id) < (?, ?)`.
public struct RowCursor: Sendable, Equatable {
    public var createdAt: Int64
    public var id: String

    public init(createdAt: Int64, id: String) {
        self.createdAt = createdAt
        self.id = id
    }

    public init?(_ token: String) {
        let parts = token.split(separator: "_", maxSplits: 1)
        guard parts.count == 2, let time = Int64(parts[0]), UserID(String(parts[1])) != nil else { return nil }
        self.createdAt = time
        self.id = String(parts[1])
    }

    public var token: String { "\(createdAt)_\(id)" }
}

/// The account's profile beyond sign-in: names, handle, avatar, anonymous names, the plan override.
public protocol ProfileStore: Sendable {
    /// Replaces the profile fields; `.uniqueViolation` (`.handle`) when the handle is taken.
    func updateProfile(
        _ id: UserID, displayName: String?, handle: String?, avatarURL: String?, onboardingComplete: Bool, now: Date
    ) async throws(StoreError)
    func setNameSuggestions(_ id: UserID, _ names: [String]?, now: Date) async throws(StoreError)
    /// An anonymous account that gained a real identity.
    func markUpgraded(_ id: UserID, now: Date) async throws(StoreError)
    func setPlanOverride(_ id: UserID, _ plan: String?, now: Date) async throws(StoreError)
    func user(handle: String) async throws(StoreError) -> User?
    /// Anonymous accounts created before `before` with no session active since then.
    func staleAnonymousUsers(before: Date, limit: Int) async throws(StoreError) -> [UserID]
    /// Accounts a phone sign-up made before `before` whose number was never proved: no address,
    /// no identity, not anonymous (issue 58). Nobody can sign in to them.
    func unprovedPhoneSignUps(before: Date, limit: Int) async throws(StoreError) -> [UserID]
    /// Sets the display name and avatar only where they are empty (a provider never overwrites a profile).
    func fillProfile(_ id: UserID, displayName: String?, avatarURL: String?, now: Date) async throws(StoreError)
}

/// Idempotency keys: a replay of a request that opened a session reaches the same account.
public protocol IdempotencyStore: Sendable {
    /// The user an idempotency key (hashed) made in `scope` since `since`, and the session that
    /// request opened.
    func idempotentUser(scope: String, keyHash: [UInt8], since: Date) async throws(StoreError) -> (user: UserID, session: SessionID?)?
    /// `.uniqueViolation` (`.idempotencyKey`) when the key was stored meanwhile.
    func insertIdempotencyKey(scope: String, keyHash: [UInt8], userID: UserID, sessionID: SessionID, at date: Date) async throws(StoreError)
    /// Forgets every idempotency key of the account (an upgrade, a global logout or a new
    /// password ends what a replay could reach).
    func deleteIdempotencyKeys(of userID: UserID) async throws(StoreError)
    func idempotencyKeyTimes(of userID: UserID) async throws(StoreError) -> [Date]
}

/// The domain-event feed (and analytics events before an account existed).
public protocol EventStore: Sendable {
    /// Appends to the feed; inside a transaction, feed order is commit order.
    func insertEvent(_ event: DomainEvent) async throws(StoreError)
    /// Gives a user the analytics a device sent before it had an account.
    func attachAnonymousEvents(_ anonymousID: String, to userID: UserID) async throws(StoreError)
    /// Oldest first, after the cursor `after`; optionally one user's.
    func events(after: Int64?, userID: UserID?, limit: Int) async throws(StoreError) -> [DomainEvent]
}
