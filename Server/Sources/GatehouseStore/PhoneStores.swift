import Foundation
import GatehouseCore
import GatehouseWire

/// Phone numbers on accounts and the codes sent to them by SMS (issue 43).
public protocol PhoneStore: Sendable {
    /// The account whose number this is (E.164), verified or not.
    func user(phone: String) async throws(StoreError) -> User?
    /// Sets (or clears, with nil) an account's number and when it was proved. Throws
    /// `uniqueViolation` (`UniqueKey.phone`) when another account has the number.
    func setPhone(_ id: UserID, phone: String?, verifiedAt: Date?, now: Date) async throws(StoreError)
    func insertPhoneCode(_ code: PhoneCode) async throws(StoreError)
    /// The newest code of `purpose` sent to a number (for `verify_phone`, the one `userID` asked for), used or not.
    func newestPhoneCode(phone: String?, purpose: SMSPurpose, userID: UserID?) async throws(StoreError) -> PhoneCode?
    /// Reserves one guess before the code is compared, in one conditional update: only while
    /// the code is unused, unexpired at `now` and below `limit` guesses. Returns the guesses
    /// counted so far, this one included, or nil when none is left.
    func reservePhoneCodeAttempt(_ id: UUID, limit: Int, now: Date) async throws(StoreError) -> Int?
    /// Marks a code used; false when it was used already (a concurrent use won).
    func usePhoneCode(_ id: UUID, at date: Date) async throws(StoreError) -> Bool
    /// Every code of `purpose` sent to a number since `since`, used or not, newest first: the
    /// codes a typed code is checked against, and who asked for them (issue 58).
    func phoneCodes(phone: String, purpose: SMSPurpose, since: Date) async throws(StoreError) -> [PhoneCode]
    /// The codes an account asked for to add a number (for an export; the caller leaves the hashes out).
    func phoneCodes(of userID: UserID) async throws(StoreError) -> [PhoneCode]
    /// Ends the unused codes of `purpose` that a newer code of the same request replaces: to
    /// `phone` when given, and bound to `userID` (nil: bound to no account, the number's holder
    /// asking to sign in). Another party's codes to the same number are left alone.
    func retirePhoneCodes(phone: String?, boundTo userID: UserID?, purpose: SMSPurpose, at date: Date) async throws(StoreError)
}
