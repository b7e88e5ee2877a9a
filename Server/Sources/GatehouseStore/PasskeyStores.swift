import Foundation
import GatehouseCore

/// What the operators' lists read of a page of accounts at once: a statement per table for
/// the page, not one per account.
public protocol AccountPageStore: Sendable {
    /// The passkeys of every account of `ids` (a page of the admin API's users), each account's
    /// as `PasskeyStore.passkeys(of:)` orders them; accounts with none are absent.
    func passkeys(ofAccounts ids: [UserID]) async throws(StoreError) -> [UserID: [Passkey]]
}

/// Passkeys and the challenges of open WebAuthn ceremonies.
public protocol PasskeyStore: Sendable {
    /// Stores an open ceremony's challenge.
    func insertPasskeyChallenge(_ challenge: PasskeyChallenge) async throws(StoreError)
    /// The account's open ceremonies (its export).
    func passkeyChallenges(of userID: UserID) async throws(StoreError) -> [PasskeyChallenge]
    /// Takes the challenge with this id if it is still live, in one statement that deletes it:
    /// of any number of parallel callers, one gets it and the rest get nil.
    func consumePasskeyChallenge(id: UUID, now: Date) async throws(StoreError) -> PasskeyChallenge?
    /// Throws `uniqueViolation` (`UniqueKey.passkeyCredential`) when the credential id is
    /// registered already, to this account or another.
    func insertPasskey(_ passkey: Passkey) async throws(StoreError)
    func passkey(credentialID: [UInt8]) async throws(StoreError) -> Passkey?
    /// The user's passkeys, oldest first.
    func passkeys(of userID: UserID) async throws(StoreError) -> [Passkey]
    /// Stores a sign-in's counter and backup state, only if the stored counter is still
    /// `expected` (compare-and-set): false when another sign-in moved it meanwhile.
    func recordPasskeyUse(_ id: UUID, expected: UInt32, signCount: UInt32, backedUp: Bool, at date: Date) async throws(StoreError) -> Bool
    /// False when the user has no passkey with this id.
    func renamePasskey(_ id: UUID, of userID: UserID, name: String) async throws(StoreError) -> Bool
    /// False when the user has no passkey with this id.
    func deletePasskey(_ id: UUID, of userID: UserID) async throws(StoreError) -> Bool
    /// Every passkey of the user and its open ceremonies (the owner's proof of the inbox ends
    /// them); how many passkeys.
    func deletePasskeys(of userID: UserID) async throws(StoreError) -> Int
    /// The length of a registered credential id (the first by primary key, anyone's): what a
    /// decoy id is made to look like (nil with no passkey yet).
    func newestPasskeyCredentialIDLength() async throws(StoreError) -> Int?
    /// Deletes the challenges that expired before `date` (ceremonies never finished); how many.
    func purgePasskeyChallenges(before date: Date) async throws(StoreError) -> Int
}
