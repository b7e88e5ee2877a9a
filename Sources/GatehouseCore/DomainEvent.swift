import Foundation

/// Something an app's backend wants to hear about (`user.created`, `user.upgraded`,
/// `user.merged`, `user.deleted`, …; decision 23), in the event feed and sent to the webhook.
public struct DomainEvent: Sendable, Equatable {
    public var id: UUID
    /// Position in the feed (the cursor), assigned by the store.
    public var sequence: Int64?
    public var type: String
    public var userID: UserID?
    /// Facts of the event, e.g. `from` and `to` of a merge. Never a secret.
    public var data: [String: String]
    public var createdAt: Date
    /// A client's device-local id for analytics sent before it had an account.
    public var anonymousID: String?

    public init(
        id: UUID = UUID(), sequence: Int64? = nil, type: String, userID: UserID?, data: [String: String] = [:], createdAt: Date,
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
