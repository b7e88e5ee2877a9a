import Foundation
import GatehouseWire

/// A mail waiting in (or delivered from) the outbox. The outbox table is the queue: a mail is
/// written in the same transaction as what caused it, so a crash between commit and sending
/// loses nothing.
public struct OutboxMessage: Sendable, Equatable {
    public var id: UUID
    public var createdAt: Date
    /// What it is for: `verification`, `password_reset`, `magic_link`, `test`, …
    public var kind: String
    /// The address as the person typed it.
    public var recipient: String
    public var subject: String
    /// Cleared once an SMTP server has taken the mail, so no link token outlives its delivery.
    public var textBody: String?
    public var htmlBody: String?
    /// The host of the link inside, for the log line (never the link itself).
    public var linkHost: String?
    /// `pending`, `sent` or `failed`.
    public var status: String
    public var attempts: Int
    public var nextAttemptAt: Date
    public var lastError: String?
    public var sentAt: Date?
    /// A queued request (a forgot-password or magic-link request) whose mail the worker
    /// composes when it picks it up; its parameters, e.g. `redirect_to`.
    public var payload: [String: String]?
    /// The trace context of the request that queued it (opaque text; nil with traces off).
    public var traceContext: String?

    /// True while this is a request with no mail composed yet.
    public var isRequest: Bool { textBody == nil && payload != nil && status == "pending" }

    public init(
        id: UUID? = nil, createdAt: Date, kind: String, recipient: String, subject: String, textBody: String?,
        htmlBody: String?, linkHost: String? = nil, status: String = "pending", attempts: Int = 0, nextAttemptAt: Date? = nil,
        lastError: String? = nil, sentAt: Date? = nil, payload: [String: String]? = nil, traceContext: String? = nil
    ) {
        self.id = id ?? SecureRandom.timeOrderedUUID(at: createdAt)
        self.createdAt = createdAt
        self.kind = kind
        self.recipient = recipient
        self.subject = subject
        self.textBody = textBody
        self.htmlBody = htmlBody
        self.linkHost = linkHost
        self.status = status
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt ?? createdAt
        self.lastError = lastError
        self.sentAt = sentAt
        self.payload = payload
        self.traceContext = traceContext
    }
}

/// The wait before trying failed background work again: 5 s, doubling, at most an hour.
public enum RetryBackoff {
    public static func delay(afterAttempts attempts: Int) -> TimeInterval {
        min(5 * pow(2, Double(max(0, attempts - 1))), 3_600)
    }

    /// When to try again after `attempts` failed ones, or nil once `maximum` were made: every
    /// queue of leased work (the outbox, the job queue) schedules its retries here.
    public static func nextAttempt(after attempts: Int, of maximum: Int, now: Date) -> Date? {
        attempts < maximum ? now.addingTimeInterval(delay(afterAttempts: attempts)) : nil
    }
}

/// What a mail is for: the outbox row's `kind`, the template's name (`mail.<kind>.subject` in a
/// preset's copy). Closed: the server alone makes mail.
public enum MailKind: String, Sendable, CaseIterable {
    case verification
    /// A forgot-password request, composed by the mail worker (dropped when there is no account).
    case passwordReset = "password_reset"
    /// A magic link and its code, composed by the mail worker.
    case magicLink = "magic_link"
    case passwordChanged = "password_changed"
    case newSignIn = "new_sign_in"
    case mfaFactorAdded = "mfa_factor_added"
    case mfaFactorRemoved = "mfa_factor_removed"
    case recoveryCodeUsed = "recovery_code_used"
    /// A number added to, changed on or removed from the account (issue 58).
    case phoneChanged = "phone_changed"
    /// An operator's test of delivery.
    case test
}
