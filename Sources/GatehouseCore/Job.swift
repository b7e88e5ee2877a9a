import Foundation
import GatehouseWire

/// A unit of durable background work. Its payload may hold a secret (an authorization code, a
/// provider token), so it is stored sealed.
public struct Job: Sendable, Equatable {
    public var id: UUID
    public var kind: String
    public var payload: [UInt8]
    public var encryption: String
    public var attempts: Int
    public var nextAttemptAt: Date
    public var createdAt: Date
    /// The trace context of the request that queued it (opaque text; nil with traces off).
    public var traceContext: String?

    public init(
        id: UUID? = nil, kind: String, payload: [UInt8], encryption: String, attempts: Int = 0, nextAttemptAt: Date? = nil,
        createdAt: Date, traceContext: String? = nil
    ) {
        self.id = id ?? SecureRandom.timeOrderedUUID(at: createdAt)
        self.kind = kind
        self.payload = payload
        self.encryption = encryption
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt ?? createdAt
        self.createdAt = createdAt
        self.traceContext = traceContext
    }
}

/// What a background job does: the job row's `kind`. Closed: the server alone queues jobs.
public enum JobKind: String, Sendable, CaseIterable {
    /// Exchange Apple's authorization code for a refresh token (kept sealed, for revocation).
    case appleExchange = "apple_exchange"
    /// Revoke Apple's refresh token (an account deleted, or Apple unlinked).
    case appleRevoke = "apple_revoke"
    /// Deliver a domain event to the configured webhook.
    case webhook
    /// Cancel every live Stripe subscription of a deleted account's customer (issue 44).
    case stripeCancel = "stripe_cancel"
    /// Make the account of an `/auth/v1` phone sign-up with a password and text its code, when
    /// the number has no account yet (issue 58): the request does the same work, and so takes
    /// the same time, whether the number is taken or free.
    case phoneSignUp = "phone_sign_up"
    /// Acknowledge a Google Play purchase (issue 59): Google refunds one not acknowledged within
    /// three days.
    case googlePlayAcknowledge = "google_play_acknowledge"
    /// Cancel a deleted account's Google Play purchase that may still bill (issue 59).
    case googlePlayCancel = "google_play_cancel"
}
