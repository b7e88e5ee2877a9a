import Foundation
import GatehouseCore

extension SQLStore {
    private static let subscriptionColumns =
        "original_transaction_id, user_id, product_id, environment, status, expires_at, grace_expires_at, will_renew, introductory, signed_at, updated_at"

    public func subscription(originalTransactionID: String, forUpdate: Bool) async throws(StoreError) -> SubscriptionRecord? {
        let lock = forUpdate && dialect == .postgres ? " FOR UPDATE" : ""
        return try await executor.query(
            "SELECT \(Self.subscriptionColumns) FROM subscriptions WHERE original_transaction_id = ?\(lock)", [.text(originalTransactionID)]
        ).first.map(Self.subscription(from:))
    }

    /// Every account's of `ids` (the console's lists).
    func appStoreRows(ofAccounts ids: [UserID]) async throws(StoreError) -> [UserID: [SubscriptionRecord]] {
        try Self.byAccount(
            try await rows(
                ofAccounts: ids,
                "SELECT \(Self.subscriptionColumns) FROM subscriptions WHERE user_id IN %@ ORDER BY user_id, signed_at, original_transaction_id"),
            Self.subscription(from:))
    }

    public func subscriptions(of userID: UserID) async throws(StoreError) -> [SubscriptionRecord] {
        try await accountFact(of: userID, cached: \.subscriptions, keep: { $0.subscriptions = $1 }) { () async throws(StoreError) in
            try await executor.query(
                "SELECT \(Self.subscriptionColumns) FROM subscriptions WHERE user_id = ? ORDER BY signed_at, original_transaction_id",
                [.text(userID.description)]
            ).map(Self.subscription(from:))
        }
    }

    @discardableResult
    public func saveSubscription(_ record: SubscriptionRecord) async throws(StoreError) -> UserID? {
        // The original transaction id is the row's key: the first account to store it owns it,
        // and no later save changes that (an unowned row, from a notification, is adopted).
        let updates = Self.subscriptionColumns.split(separator: ",").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            .map { $0 == "user_id" ? "user_id = COALESCE(subscriptions.user_id, excluded.user_id)" : "\($0) = excluded.\($0)" }
            .joined(separator: ", ")
        let saved = try await executor.query(
            """
            INSERT INTO subscriptions (\(Self.subscriptionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (original_transaction_id) DO UPDATE SET \(updates)
            WHERE subscriptions.signed_at <= excluded.signed_at
            RETURNING user_id
            """,
            [
                .text(record.originalTransactionID), SQLValue(record.userID?.description), .text(record.productID), .text(record.environment),
                .text(record.status.rawValue), SQLValue(record.expiresAt?.unixSeconds), SQLValue(record.graceExpiresAt?.unixSeconds),
                SQLValue(record.willRenew), SQLValue(record.introductory), .integer(record.signedAt.unixMilliseconds),
                .integer(record.updatedAt.unixSeconds),
            ])
        // Newer facts were stored meanwhile (nothing written): the owner is theirs.
        if let row = saved.first {
            let owner = try row.optionalString("user_id").flatMap(UserID.init)
            if let owner { changed(.facts(owner)) }
            return owner
        }
        return try await subscription(originalTransactionID: record.originalTransactionID, forUpdate: false)?.userID
    }

    public func moveSubscriptions(from: UserID, to: UserID) async throws(StoreError) {
        defer { changed(.facts(from)); changed(.facts(to)) }
        try await executor.query("UPDATE subscriptions SET user_id = ? WHERE user_id = ?", [.text(to.description), .text(from.description)])
    }

    private static func subscription(from row: SQLRow) throws(StoreError) -> SubscriptionRecord {
        guard let status = SubscriptionRecord.Status(rawValue: try row.string("status")) else {
            throw StoreError.decoding("bad subscriptions.status")
        }
        let user = try row.optionalUserID("user_id", of: "subscriptions")
        return SubscriptionRecord(
            originalTransactionID: try row.string("original_transaction_id"), userID: user, productID: try row.string("product_id"),
            environment: try row.string("environment"), status: status, expiresAt: try row.optionalInt("expires_at").map(Date.init(unixSeconds:)),
            graceExpiresAt: try row.optionalInt("grace_expires_at").map(Date.init(unixSeconds:)), willRenew: try row.bool("will_renew"),
            introductory: try row.bool("introductory"), signedAt: Date(unixMilliseconds: try row.int("signed_at")),
            updatedAt: Date(unixSeconds: try row.int("updated_at")))
    }
}
