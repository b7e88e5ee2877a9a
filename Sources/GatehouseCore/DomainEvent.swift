import Foundation
import GatehouseWire

/// Something an app's backend wants to hear about (`user.created`, `user.upgraded`,
/// `user.merged`, `user.deleted`, …; decision 23), in the event feed and sent to the webhook.
public struct DomainEvent: Sendable, Equatable {
    public var id: UUID
    /// Position in the feed (the cursor), assigned by the store.
    public var sequence: Int64?
    /// A `DomainEvent.Kind`'s raw value.
    public var type: Kind
    public var userID: UserID?
    /// Facts of the event, e.g. `from` and `to` of a merge. Never a secret.
    public var data: [String: String]
    public var createdAt: Date
    /// A client's device-local id for analytics sent before it had an account.
    public var anonymousID: String?

    public init(
        id: UUID? = nil, sequence: Int64? = nil, type: Kind, userID: UserID?, data: [String: String] = [:], createdAt: Date,
        anonymousID: String? = nil
    ) {
        self.id = id ?? SecureRandom.timeOrderedUUID(at: createdAt)
        self.sequence = sequence
        self.type = type
        self.userID = userID
        self.data = data
        self.createdAt = createdAt
        self.anonymousID = anonymousID
    }
}

extension DomainEvent {
    /// The event's `type` in the feed and the webhook (decision 23: dotted server events, and
    /// `analytics` for the client's).
    public enum Kind: String, Sendable, CaseIterable, Codable, CustomStringConvertible {
        public var description: String { rawValue }

        case userCreated = "user.created"
        /// An anonymous account got its first identity (same id).
        case userUpgraded = "user.upgraded"
        /// An anonymous account was merged into another (`from`, `to`).
        case userMerged = "user.merged"
        case userDeleted = "user.deleted"
        case planChanged = "plan.changed"
        case trialStarted = "trial.started"
        case purchaseSucceeded = "purchase.succeeded"
        case creditSpent = "credit.spent"
        /// A passkey was registered to an account (`passkey_id`).
        case passkeyAdded = "passkey.added"
        /// A passkey was removed from an account (`passkey_id`).
        case passkeyRemoved = "passkey.removed"
        /// A second factor was confirmed or removed (`factor_id`).
        case mfaFactorAdded = "mfa.factor_added"
        case mfaFactorRemoved = "mfa.factor_removed"
        /// A client analytics event (`POST /v1/events`); its name is in `data`.
        case analytics
    }
}
