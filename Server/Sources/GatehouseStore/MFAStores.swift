import Foundation
import GatehouseCore

/// Second factors (TOTP): enrolled, confirmed, each step taken once by a compare-and-set.
public protocol MFAFactorStore: Sendable {
    func insertMFAFactor(_ factor: MFAFactor) async throws(StoreError)
    /// The account's factors, oldest first.
    func mfaFactors(of userID: UserID) async throws(StoreError) -> [MFAFactor]
    /// Confirms an unconfirmed factor of the user with the step of its first code; false when
    /// there is no such factor or another call confirmed it first.
    func confirmMFAFactor(_ id: UUID, of userID: UserID, step: Int64, at date: Date) async throws(StoreError) -> Bool
    /// Takes `step` for a confirmed factor only when it is later than the last step taken
    /// (compare-and-set): false for a code used already, by this call or a parallel one.
    func useMFAStep(_ id: UUID, of userID: UserID, step: Int64, at date: Date) async throws(StoreError) -> Bool
    /// False when the user has no factor with this id.
    func renameMFAFactor(_ id: UUID, of userID: UserID, name: String) async throws(StoreError) -> Bool
    /// False when the user has no factor with this id.
    func deleteMFAFactor(_ id: UUID, of userID: UserID) async throws(StoreError) -> Bool
    /// Every factor of the user, with its recovery codes and open challenges (the owner's proof
    /// of the inbox ends them); how many factors.
    func deleteMFA(of userID: UserID) async throws(StoreError) -> Int
    /// Deletes factors never confirmed and enrolled before `date`; how many.
    func purgeUnconfirmedMFAFactors(enrolledBefore date: Date) async throws(StoreError) -> Int
}

/// Recovery codes: each one is taken in one conditional statement.
public protocol RecoveryCodeStore: Sendable {
    /// Replaces every recovery code of the user with these hashes (the old ones die).
    func replaceRecoveryCodes(of userID: UserID, hashes: [[UInt8]], at date: Date) async throws(StoreError)
    /// Takes an unused code in one statement: false when unknown or used (by anyone, however
    /// many try at once).
    func useRecoveryCode(of userID: UserID, hash: [UInt8], at date: Date) async throws(StoreError) -> Bool
    /// Codes not used yet.
    func unusedRecoveryCodes(of userID: UserID) async throws(StoreError) -> Int
    func deleteRecoveryCodes(of userID: UserID) async throws(StoreError)
    /// When each of the user's recovery codes was made and used (the account's export).
    func recoveryCodeTimes(of userID: UserID) async throws(StoreError) -> [(createdAt: Date, usedAt: Date?)]
}

/// The challenges of sign-ins waiting for a second factor: tries reserved in one statement.
public protocol MFAChallengeStore: Sendable {
    /// The user's challenges, oldest first (the account's export).
    func mfaChallenges(of userID: UserID) async throws(StoreError) -> [MFAChallenge]
    func insertMFAChallenge(_ challenge: MFAChallenge) async throws(StoreError)
    /// Reserves one attempt on a live, unconsumed challenge that has attempts left, in one
    /// statement; nil otherwise.
    func reserveMFAChallengeAttempt(idHash: [UInt8], now: Date, maximum: Int) async throws(StoreError) -> MFAChallenge?
    /// Gives back a try reserved by `reserveMFAChallengeAttempt` when the code was never looked
    /// at (the account's lockout refused first).
    func releaseMFAChallengeAttempt(idHash: [UInt8]) async throws(StoreError)
    func mfaChallenge(idHash: [UInt8]) async throws(StoreError) -> MFAChallenge?
    /// Takes the challenge once: false when it is consumed or expired already.
    func consumeMFAChallenge(idHash: [UInt8], at date: Date) async throws(StoreError) -> Bool
    /// Deletes the challenges that expired before `date`; how many.
    func purgeMFAChallenges(before date: Date) async throws(StoreError) -> Int
}
