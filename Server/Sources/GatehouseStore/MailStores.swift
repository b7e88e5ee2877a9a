import Foundation
import GatehouseCore

/// A part of the outbox delivered on its own (issue 58): a slow endpoint of one channel delays
/// only that channel's messages.
public enum OutboxLane: String, Sendable, CaseIterable {
    /// Mail (every kind but `sms`).
    case mail
    /// SMS (kind `sms`: codes and notices).
    case sms

    /// The lane a row of `kind` is delivered on.
    public init(kind: String) { self = kind == "sms" ? .sms : .mail }
}

/// The mail outbox: the queue the mail worker delivers from.
public protocol OutboxStore: Sendable {
    /// Queues a mail; call it inside the transaction of what caused it.
    func enqueueMail(_ message: OutboxMessage) async throws(StoreError)
    /// Leases up to `limit` due mails for `leaseSeconds`, so that several nodes never send one
    /// mail twice at once; a crashed node's lease simply runs out.
    func claimDueMail(now: Date, limit: Int, leaseSeconds: Int) async throws(StoreError) -> [OutboxMessage]
    /// The same, of one lane only.
    func claimDueMail(now: Date, limit: Int, leaseSeconds: Int, lane: OutboxLane) async throws(StoreError) -> [OutboxMessage]
    /// Marks a mail delivered; `keepBodies` false clears its bodies (and the tokens in them).
    func markMailSent(_ id: UUID, at date: Date, keepBodies: Bool) async throws(StoreError)
    /// Records a failed attempt: retried at `nextAttempt`, or failed for good when it is `nil`.
    func markMailFailed(_ id: UUID, error: String, nextAttempt: Date?, at date: Date) async throws(StoreError)
    /// Newest first.
    func recentMail(limit: Int) async throws(StoreError) -> [OutboxMessage]
    /// Mail not yet sent nor given up: due now or waiting for a retry.
    func pendingMailCount() async throws(StoreError) -> Int
    /// Fills in a queued request's mail (see `OutboxMessage.isRequest`); `payload` replaces the
    /// request's parameters (the mail's link and code, or nothing).
    func composeMail(
        _ id: UUID, recipient: String, subject: String, text: String, html: String?, linkHost: String?, payload: [String: String]?
    ) async throws(StoreError)
    /// Ends a queued request that has nothing to send (no such account); forgets the address.
    func dropMail(_ id: UUID, reason: String, at date: Date) async throws(StoreError)
}

/// The links Gatehouse mails (verification, password reset, magic link), stored as hashes.
public protocol EmailTokenStore: Sendable {
    func insertEmailToken(_ token: EmailToken) async throws(StoreError)
    func emailToken(hash: [UInt8]) async throws(StoreError) -> EmailToken?
    /// Marks a token used; false when it was used already (a concurrent use won).
    func useEmailToken(hash: [UInt8], at date: Date) async throws(StoreError) -> Bool
    /// Marks every unused token of `purpose` for a user, or for an address, used: a newer link
    /// replaces them, a password change ends reset links.
    func retireEmailTokens(userID: UserID?, normalizedEmail: String?, purpose: EmailTokenPurpose, at date: Date) async throws(StoreError)
    /// The newest token of `purpose` for an address, used or not.
    func newestEmailToken(normalizedEmail: String, purpose: EmailTokenPurpose) async throws(StoreError) -> EmailToken?
    /// Reserves one code attempt before the code is compared, in one conditional update: only
    /// while the token is unused, unexpired at `now` and below `limit` attempts. Returns the
    /// attempts counted so far, this one included, or nil when no attempt is left.
    func reserveCodeAttempt(hash: [UInt8], limit: Int, now: Date) async throws(StoreError) -> Int?
    /// When a user's tokens of `purpose` were made, since `date` (for resend limits).
    func emailTokenTimes(userID: UserID, purpose: EmailTokenPurpose, since date: Date) async throws(StoreError) -> [Date]
    /// Keeps the PKCE code challenge sent with a link's request (the newest one per address
    /// and purpose).
    func savePKCERequest(normalizedEmail: String, purpose: EmailTokenPurpose, challenge: String, method: String, expiresAt: Date)
        async throws(StoreError)
    /// Takes (deletes) the address's challenge for `purpose`, once; nil when there is none or it expired.
    func takePKCERequest(normalizedEmail: String, purpose: EmailTokenPurpose, now: Date) async throws(StoreError)
        -> (challenge: String, method: String)?
    /// The user's mailed links, for an export (hashes left out by the caller).
    func emailTokens(of userID: UserID) async throws(StoreError) -> [EmailToken]
}
