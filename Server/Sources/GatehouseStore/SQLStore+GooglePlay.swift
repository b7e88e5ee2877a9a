import Foundation
import GatehouseCore
import GatehouseWire

extension SQLStore {
    // MARK: Applied once, for every source

    public func recordLedgerEvent(source: PlanSource, id: String, type: String, outcome: String, at date: Date) async throws(StoreError) -> Bool {
        !(try await executor.query(
            "INSERT INTO ledger_events (source, event_id, type, outcome, received_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING event_id",
            [.text(source.rawValue), .text(id), .text(type), .text(outcome), .integer(date.unixSeconds)]
        ).isEmpty)
    }

    public func ledgerEventRecorded(source: PlanSource, id: String) async throws(StoreError) -> Bool {
        !(try await executor.query(
            "SELECT event_id FROM ledger_events WHERE source = ? AND event_id = ?", [.text(source.rawValue), .text(id)]
        ).isEmpty)
    }

    // MARK: Google Play

    private static let googlePlayColumns =
        "purchase_token, user_id, product_id, state, expires_at, linked_purchase_token, obfuscated_account_id, acknowledged, test_purchase, superseded_by, voided_at, read_at, updated_at"

    /// Every account's of `ids` (the console's lists).
    func googlePlayRows(ofAccounts ids: [UserID]) async throws(StoreError) -> [UserID: [GooglePlaySubscriptionRecord]] {
        try Self.byAccount(
            try await rows(
                ofAccounts: ids,
                "SELECT \(Self.googlePlayColumns) FROM google_play_purchases WHERE user_id IN %@ ORDER BY user_id, read_at, purchase_token"),
            Self.googlePlayPurchase(from:))
    }

    public func googlePlayPurchases(of userID: UserID) async throws(StoreError) -> [GooglePlaySubscriptionRecord] {
        try await accountFact(of: userID, cached: \.googlePlayPurchases, keep: { $0.googlePlayPurchases = $1 }) { () async throws(StoreError) in
            try await executor.query(
                "SELECT \(Self.googlePlayColumns) FROM google_play_purchases WHERE user_id = ? ORDER BY read_at, purchase_token",
                [.text(userID.description)]
            ).map(Self.googlePlayPurchase(from:))
        }
    }

    public func googlePlayPurchase(token: String) async throws(StoreError) -> GooglePlaySubscriptionRecord? {
        try await executor.query("SELECT \(Self.googlePlayColumns) FROM google_play_purchases WHERE purchase_token = ?", [.text(token)])
            .first.map(Self.googlePlayPurchase(from:))
    }

    @discardableResult
    public func saveGooglePlayPurchase(_ record: GooglePlaySubscriptionRecord) async throws(StoreError) -> UserID? {
        let updates = Self.googlePlayColumns.split(separator: ",").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            .map { column in
                switch column {
                // The token is the key: the first account to store it owns it; what ended it stays.
                case "user_id", "superseded_by", "voided_at": "\(column) = COALESCE(google_play_purchases.\(column), excluded.\(column))"
                // Acknowledged once is acknowledged for good.
                case "acknowledged": "acknowledged = CASE WHEN google_play_purchases.acknowledged = 1 THEN 1 ELSE excluded.acknowledged END"
                default: "\(column) = excluded.\(column)"
                }
            }
            .joined(separator: ", ")
        let saved = try await executor.query(
            """
            INSERT INTO google_play_purchases (\(Self.googlePlayColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (purchase_token) DO UPDATE SET \(updates)
            WHERE google_play_purchases.read_at <= excluded.read_at
            RETURNING user_id
            """,
            [
                .text(record.purchaseToken), SQLValue(record.userID?.description), .text(record.productID), .text(record.state.rawValue),
                SQLValue(record.expiresAt?.unixSeconds), SQLValue(record.linkedPurchaseToken), SQLValue(record.obfuscatedAccountID),
                SQLValue(record.acknowledged), SQLValue(record.testPurchase), SQLValue(record.supersededBy), SQLValue(record.voidedAt?.unixSeconds),
                .integer(record.readAt.unixMilliseconds), .integer(record.readAt.unixSeconds),
            ])
        if let row = saved.first {
            let owner = try row.optionalString("user_id").flatMap(UserID.init)
            if let owner { changed(.facts(owner)) }
            return owner
        }
        // A later read was stored meanwhile (nothing written): the owner is its.
        return try await googlePlayPurchase(token: record.purchaseToken)?.userID
    }

    @discardableResult
    public func supersedeGooglePlayPurchase(_ token: String, by newer: String) async throws(StoreError) -> Bool {
        let marked = try await executor.query(
            "UPDATE google_play_purchases SET superseded_by = ? WHERE purchase_token = ? AND superseded_by IS NULL RETURNING user_id",
            [.text(newer), .text(token)])
        for row in marked { if let owner = try row.optionalString("user_id").flatMap(UserID.init) { changed(.facts(owner)) } }
        return !marked.isEmpty
    }

    @discardableResult
    public func voidGooglePlayPurchase(_ token: String, at date: Date) async throws(StoreError) -> Bool {
        let marked = try await executor.query(
            "UPDATE google_play_purchases SET voided_at = ? WHERE purchase_token = ? AND voided_at IS NULL RETURNING user_id",
            [.integer(date.unixSeconds), .text(token)])
        for row in marked { if let owner = try row.optionalString("user_id").flatMap(UserID.init) { changed(.facts(owner)) } }
        return !marked.isEmpty
    }

    public func markGooglePlayPurchaseAcknowledged(_ token: String) async throws(StoreError) {
        let marked = try await executor.query(
            "UPDATE google_play_purchases SET acknowledged = 1 WHERE purchase_token = ? RETURNING user_id", [.text(token)])
        for row in marked { if let owner = try row.optionalString("user_id").flatMap(UserID.init) { changed(.facts(owner)) } }
    }

    public func moveGooglePlayPurchases(from: UserID, to: UserID) async throws(StoreError) {
        defer { changed(.facts(from)); changed(.facts(to)) }
        try await executor.query("UPDATE google_play_purchases SET user_id = ? WHERE user_id = ?", [.text(to.description), .text(from.description)])
    }

    private static func googlePlayPurchase(from row: SQLRow) throws(StoreError) -> GooglePlaySubscriptionRecord {
        let user = try row.optionalUserID("user_id", of: "google_play_purchases")
        return GooglePlaySubscriptionRecord(
            purchaseToken: try row.string("purchase_token"), userID: user, productID: try row.string("product_id"),
            state: GooglePlaySubscriptionRecord.State(rawValue: try row.string("state")) ?? .unknown,
            expiresAt: try row.optionalInt("expires_at").map(Date.init(unixSeconds:)),
            linkedPurchaseToken: try row.optionalString("linked_purchase_token"), obfuscatedAccountID: try row.optionalString("obfuscated_account_id"),
            acknowledged: try row.bool("acknowledged"), testPurchase: try row.bool("test_purchase"),
            readAt: Date(unixMilliseconds: try row.int("read_at")), supersededBy: try row.optionalString("superseded_by"),
            voidedAt: try row.optionalInt("voided_at").map(Date.init(unixSeconds:)))
    }
}
