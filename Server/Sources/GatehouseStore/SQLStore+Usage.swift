import Foundation
import GatehouseCore

extension SQLStore {
    public func usageRecord(of userID: UserID, meter: String, periodStart: Date, idempotencyKey: String) async throws(StoreError) -> UsageRecord? {
        guard
            let row = try await executor.query(
                "SELECT amount, period_start, created_at FROM usage_records WHERE user_id = ? AND meter = ? AND period_start = ? AND idempotency_key = ?",
                [.text(userID.description), .text(meter), .integer(periodStart.unixSeconds), .text(idempotencyKey)]
            ).first
        else { return nil }
        return UsageRecord(
            userID: userID, meter: meter, amount: Int(try row.int("amount")), idempotencyKey: idempotencyKey,
            periodStart: Date(unixSeconds: try row.int("period_start")), createdAt: Date(unixSeconds: try row.int("created_at")))
    }

    public func usage(of userID: UserID, meter: String, periodStart: Date) async throws(StoreError) -> Int {
        let rows = try await executor.query(
            "SELECT used FROM usage_meters WHERE user_id = ? AND meter = ? AND period_start = ?",
            [.text(userID.description), .text(meter), .integer(periodStart.unixSeconds)])
        return Int(try rows.first?.int("used") ?? 0)
    }

    public func addUsage(_ record: UsageRecord, limit: Int?) async throws(StoreError) -> Int? {
        let user = SQLValue.text(record.userID.description)
        let amount = SQLValue.integer(Int64(record.amount))
        try await executor.query(
            "INSERT INTO usage_records (user_id, meter, idempotency_key, amount, period_start, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [
                user, .text(record.meter), .text(record.idempotencyKey), amount, .integer(record.periodStart.unixSeconds),
                .integer(record.createdAt.unixSeconds),
            ])
        // The reservation itself: one statement that adds the amount only while the count stays
        // within the limit, so uses arriving together can never pass it between them.
        let ceiling = SQLValue.integer(Int64(limit ?? Int(Int64.max / 2)))
        let rows = try await executor.query(
            """
            INSERT INTO usage_meters (user_id, meter, period_start, used) SELECT ?, ?, ?, ? WHERE ? <= ?
            ON CONFLICT (user_id, meter, period_start) DO UPDATE SET used = usage_meters.used + excluded.used
            WHERE usage_meters.used + excluded.used <= ?
            RETURNING used
            """,
            [user, .text(record.meter), .integer(record.periodStart.unixSeconds), amount, amount, ceiling, ceiling])
        return try rows.first.map { row throws(StoreError) in Int(try row.int("used")) }
    }

    public func usageRecords(of userID: UserID) async throws(StoreError) -> [UsageRecord] {
        try await executor.query(
            "SELECT meter, idempotency_key, amount, period_start, created_at FROM usage_records WHERE user_id = ? ORDER BY created_at, meter",
            [.text(userID.description)]
        ).map { row throws(StoreError) in
            UsageRecord(
                userID: userID, meter: try row.string("meter"), amount: Int(try row.int("amount")),
                idempotencyKey: try row.string("idempotency_key"), periodStart: Date(unixSeconds: try row.int("period_start")),
                createdAt: Date(unixSeconds: try row.int("created_at")))
        }
    }

    public func usageCounts(of userID: UserID) async throws(StoreError) -> [(meter: String, periodStart: Date, used: Int)] {
        try await executor.query(
            "SELECT meter, period_start, used FROM usage_meters WHERE user_id = ? ORDER BY period_start, meter", [.text(userID.description)]
        ).map { row throws(StoreError) in
            (meter: try row.string("meter"), periodStart: Date(unixSeconds: try row.int("period_start")), used: Int(try row.int("used")))
        }
    }

    public func purgeUsage(before: Date) async throws(StoreError) -> Int {
        let cutoff = SQLValue.integer(before.unixSeconds)
        let records = try await sweep(
            Sweep(table: "usage_records", key: "(user_id, meter, period_start, idempotency_key)", condition: "period_start < ?",
                order: "period_start", reach: .ownRow,
                binds: [cutoff]))
        let meters = try await sweep(
            Sweep(table: "usage_meters", key: "(user_id, meter, period_start)", condition: "period_start < ?", order: "period_start", reach: .ownRow,
                binds: [cutoff]))
        return records + meters
    }
}
