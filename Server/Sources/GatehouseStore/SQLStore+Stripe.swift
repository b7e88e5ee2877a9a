import Foundation
import GatehouseCore
import GatehouseWire

extension SQLStore {
    public func stripeCustomer(of userID: UserID) async throws(StoreError) -> String? {
        try await executor.query("SELECT customer_id FROM stripe_customers WHERE user_id = ? AND own = 1", [.text(userID.description)])
            .first?.string("customer_id")
    }

    public func stripeCustomers(of userID: UserID) async throws(StoreError) -> [String] {
        try await executor.query(
            "SELECT customer_id FROM stripe_customers WHERE user_id = ? ORDER BY own DESC, created_at, customer_id", [.text(userID.description)]
        ).map { row throws(StoreError) in try row.string("customer_id") }
    }

    public func stripeCustomerOwner(_ customerID: String) async throws(StoreError) -> UserID? {
        guard let text = try await executor.query("SELECT user_id FROM stripe_customers WHERE customer_id = ?", [.text(customerID)])
            .first?.string("user_id")
        else { return nil }
        return UserID(text)
    }

    public func saveStripeCustomer(userID: UserID, customerID: String, at date: Date) async throws(StoreError) -> String {
        let saved = try await executor.query(
            "INSERT INTO stripe_customers (user_id, customer_id, own, created_at) VALUES (?, ?, 1, ?) ON CONFLICT DO NOTHING RETURNING customer_id",
            [.text(userID.description), .text(customerID), .integer(date.unixSeconds)])
        if let row = saved.first { return try row.string("customer_id") }
        guard let stored = try await stripeCustomer(of: userID) else { throw StoreError.conflict("the customer belongs to another account") }
        return stored
    }

    private static let stripeColumns =
        "subscription_id, customer_id, user_id, price_id, status, current_period_end, cancel_at_period_end, trial_end, past_due_since, read_at, updated_at"

    /// Every account's of `ids` (the console's lists).
    func stripeRows(ofAccounts ids: [UserID]) async throws(StoreError) -> [UserID: [StripeSubscriptionRecord]] {
        try Self.byAccount(
            try await rows(
                ofAccounts: ids, "SELECT \(Self.stripeColumns) FROM stripe_subscriptions WHERE user_id IN %@ ORDER BY user_id, read_at, subscription_id"),
            Self.stripeSubscription(from:))
    }

    public func stripeSubscriptions(of userID: UserID) async throws(StoreError) -> [StripeSubscriptionRecord] {
        try await accountFact(of: userID, cached: \.stripeSubscriptions, keep: { $0.stripeSubscriptions = $1 }) { () async throws(StoreError) in
            try await executor.query(
                "SELECT \(Self.stripeColumns) FROM stripe_subscriptions WHERE user_id = ? ORDER BY read_at, subscription_id", [.text(userID.description)]
            ).map(Self.stripeSubscription(from:))
        }
    }

    public func stripeSubscriptionOwner(_ subscriptionID: String) async throws(StoreError) -> UserID? {
        try await executor.query("SELECT user_id FROM stripe_subscriptions WHERE subscription_id = ?", [.text(subscriptionID)])
            .first?.optionalString("user_id").flatMap(UserID.init)
    }

    public func moveStripeRows(from: UserID, to: UserID) async throws(StoreError) {
        defer { changed(.facts(from)); changed(.facts(to)) }
        try await executor.query("UPDATE stripe_subscriptions SET user_id = ? WHERE user_id = ?", [.text(to.description), .text(from.description)])
        // Every customer moves (issue 59, finding 1); `from`'s own one stays own only if `to` has none.
        try await executor.query(
            "UPDATE stripe_customers SET own = 0 WHERE user_id = ? AND EXISTS (SELECT 1 FROM stripe_customers kept WHERE kept.user_id = ? AND kept.own = 1)",
            [.text(from.description), .text(to.description)])
        try await executor.query("UPDATE stripe_customers SET user_id = ? WHERE user_id = ?", [.text(to.description), .text(from.description)])
    }

    @discardableResult
    public func saveStripeSubscription(_ record: StripeSubscriptionRecord) async throws(StoreError) -> Bool {
        let updates = Self.stripeColumns.split(separator: ",").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            .map { column in
                switch column {
                case "user_id": "user_id = COALESCE(stripe_subscriptions.user_id, excluded.user_id)"
                // Still past due: billing grace keeps counting from the first read that saw it.
                case "past_due_since":
                    "past_due_since = CASE WHEN excluded.status = 'past_due' AND stripe_subscriptions.status = 'past_due' "
                        + "THEN COALESCE(stripe_subscriptions.past_due_since, excluded.past_due_since) ELSE excluded.past_due_since END"
                default: "\(column) = excluded.\(column)"
                }
            }
            .joined(separator: ", ")
        let terminal = StripeSubscriptionRecord.terminalStatuses.sorted().map { "'\($0)'" }.joined(separator: ", ")
        let saved = try await executor.query(
            """
            INSERT INTO stripe_subscriptions (\(Self.stripeColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (subscription_id) DO UPDATE SET \(updates)
            WHERE stripe_subscriptions.read_at <= excluded.read_at AND stripe_subscriptions.status NOT IN (\(terminal))
            RETURNING subscription_id, user_id
            """,
            [
                .text(record.subscriptionID), .text(record.customerID), SQLValue(record.userID?.description), .text(record.priceID),
                .text(record.status), SQLValue(record.currentPeriodEnd?.unixSeconds), SQLValue(record.cancelAtPeriodEnd),
                SQLValue(record.trialEnd?.unixSeconds), SQLValue(record.pastDueSince?.unixSeconds), .integer(record.readAt.unixMilliseconds), .integer(record.updatedAt.unixSeconds),
            ])
        for row in saved { if let owner = try row.optionalString("user_id").flatMap(UserID.init) { changed(.facts(owner)) } }
        return !saved.isEmpty
    }

    private static func stripeSubscription(from row: SQLRow) throws(StoreError) -> StripeSubscriptionRecord {
        let user = try row.optionalUserID("user_id", of: "stripe_subscriptions")
        return StripeSubscriptionRecord(
            subscriptionID: try row.string("subscription_id"), customerID: try row.string("customer_id"), userID: user,
            priceID: try row.string("price_id"), status: try row.string("status"),
            currentPeriodEnd: try row.optionalInt("current_period_end").map(Date.init(unixSeconds:)),
            cancelAtPeriodEnd: try row.bool("cancel_at_period_end"), trialEnd: try row.optionalInt("trial_end").map(Date.init(unixSeconds:)),
            pastDueSince: try row.optionalInt("past_due_since").map(Date.init(unixSeconds:)),
            readAt: Date(unixMilliseconds: try row.int("read_at")), updatedAt: Date(unixSeconds: try row.int("updated_at")))
    }

    // MARK: Grants

    private static let grantColumns = "id, user_id, plan, tier, starts_at, ends_at, reason, created_by, revoked_at"

    public func insertGrant(_ grant: PlanGrant) async throws(StoreError) {
        defer { changed(.facts(grant.userID)) }
        try await executor.query(
            "INSERT INTO plan_grants (\(Self.grantColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(grant.id.uuidString.lowercased()), .text(grant.userID.description), .text(grant.plan.rawValue), SQLValue(grant.tier),
                .integer(grant.startsAt.unixSeconds), .integer(grant.until.unixSeconds), .text(grant.reason), .text(grant.createdBy),
                SQLValue(grant.revokedAt?.unixSeconds),
            ])
    }

    /// Every account's of `ids` (the console's lists).
    func grantRows(ofAccounts ids: [UserID]) async throws(StoreError) -> [UserID: [PlanGrant]] {
        try Self.byAccount(
            try await rows(ofAccounts: ids, "SELECT \(Self.grantColumns) FROM plan_grants WHERE user_id IN %@ ORDER BY user_id, starts_at, id"),
            Self.grant(from:))
    }

    public func grants(of userID: UserID) async throws(StoreError) -> [PlanGrant] {
        try await accountFact(of: userID, cached: \.grants, keep: { $0.grants = $1 }) { () async throws(StoreError) in
            try await executor.query(
                "SELECT \(Self.grantColumns) FROM plan_grants WHERE user_id = ? ORDER BY starts_at, id", [.text(userID.description)]
            ).map(Self.grant(from:))
        }
    }

    public func revokeGrant(_ id: UUID, of userID: UserID, at date: Date) async throws(StoreError) -> Bool {
        defer { changed(.facts(userID)) }
        return !(try await executor.query(
            "UPDATE plan_grants SET revoked_at = ? WHERE id = ? AND user_id = ? AND revoked_at IS NULL RETURNING id",
            [.integer(date.unixSeconds), .text(id.uuidString.lowercased()), .text(userID.description)]
        ).isEmpty)
    }

    public func moveGrants(from: UserID, to: UserID) async throws(StoreError) {
        defer { changed(.facts(from)); changed(.facts(to)) }
        try await executor.query("UPDATE plan_grants SET user_id = ? WHERE user_id = ?", [.text(to.description), .text(from.description)])
    }

    private static func grant(from row: SQLRow) throws(StoreError) -> PlanGrant {
        guard let id = UUID(uuidString: try row.string("id")), let user = UserID(try row.string("user_id")) else {
            throw StoreError.decoding("bad plan_grants row")
        }
        return PlanGrant(
            id: id, userID: user, plan: PlanState(rawValue: try row.string("plan")), tier: try row.optionalString("tier"),
            startsAt: Date(unixSeconds: try row.int("starts_at")), until: Date(unixSeconds: try row.int("ends_at")),
            reason: try row.string("reason"), createdBy: try row.string("created_by"),
            revokedAt: try row.optionalInt("revoked_at").map(Date.init(unixSeconds:)))
    }
}
