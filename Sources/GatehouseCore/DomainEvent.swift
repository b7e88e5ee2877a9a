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
        id: UUID = UUID(), sequence: Int64? = nil, type: Kind, userID: UserID?, data: [String: String] = [:], createdAt: Date,
        anonymousID: String? = nil
    ) {
        self.id = id
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
    public struct Kind: GatehouseValue {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let userCreated: Kind = "user.created"
        /// An anonymous account got its first identity (same id).
        public static let userUpgraded: Kind = "user.upgraded"
        /// An anonymous account was merged into another (`from`, `to`).
        public static let userMerged: Kind = "user.merged"
        public static let userDeleted: Kind = "user.deleted"
        public static let planChanged: Kind = "plan.changed"
        public static let trialStarted: Kind = "trial.started"
        public static let purchaseSucceeded: Kind = "purchase.succeeded"
        public static let creditSpent: Kind = "credit.spent"
        /// A passkey was registered to an account (`passkey_id`).
        public static let passkeyAdded: Kind = "passkey.added"
        /// A passkey was removed from an account (`passkey_id`).
        public static let passkeyRemoved: Kind = "passkey.removed"
        /// A second factor was confirmed or removed (`factor_id`).
        public static let mfaFactorAdded: Kind = "mfa.factor_added"
        public static let mfaFactorRemoved: Kind = "mfa.factor_removed"
        /// A client analytics event (`POST /v1/events`); its name is in `data`.
        public static let analytics: Kind = "analytics"
    }
}
