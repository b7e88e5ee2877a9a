import Foundation
import GatehouseCore

extension SQLStore {
    public func creditsSpent(of userID: UserID, since periodStart: Date) async throws(StoreError) -> [String: Int] {
        try await accountFact(
            of: userID, cached: { $0.credits.flatMap { $0.since == periodStart ? $0.spent : nil } }, keep: { $0.credits = (periodStart, $1) }
        ) { () async throws(StoreError) in
            let rows = try await executor.query(
                "SELECT credit, CAST(SUM(amount) AS BIGINT) AS spent FROM credit_ledger WHERE user_id = ? AND period_start >= ? GROUP BY credit",
                [.text(userID.description), .integer(periodStart.unixSeconds)])
            var spent: [String: Int] = [:]
            for row in rows { spent[try row.string("credit")] = Int(try row.int("spent")) }
            return spent
        }
    }

    private static let spendColumns = "id, user_id, credit, amount, action, subject, idempotency_key, period_start, created_at"

    public func creditSpend(of userID: UserID, idempotencyKey: String) async throws(StoreError) -> CreditSpend? {
        try await executor.query(
            "SELECT \(Self.spendColumns) FROM credit_ledger WHERE user_id = ? AND idempotency_key = ?",
            [.text(userID.description), .text(idempotencyKey)]
        ).first.map(Self.spend(from:))
    }

    public func insertCreditSpend(_ spend: CreditSpend) async throws(StoreError) {
        defer { changed(.facts(spend.userID)) }
        try await executor.query(
            "INSERT INTO credit_ledger (\(Self.spendColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(spend.id.uuidString.lowercased()), .text(spend.userID.description), .text(spend.credit), .integer(Int64(spend.amount)),
                .text(spend.action), SQLValue(spend.subject), .text(spend.idempotencyKey), .integer(spend.periodStart.unixSeconds),
                .integer(spend.createdAt.unixSeconds),
            ])
    }

    public func creditLedger(of userID: UserID) async throws(StoreError) -> [CreditSpend] {
        try await executor.query(
            "SELECT \(Self.spendColumns) FROM credit_ledger WHERE user_id = ? ORDER BY created_at, id", [.text(userID.description)]
        ).map(Self.spend(from:))
    }

    public func creditLedger(of userID: UserID, before: RowCursor?, limit: Int) async throws(StoreError) -> [CreditSpend] {
        let (after, binds) = Self.page(before: before, limit: limit)
        return try await executor.query(
            "SELECT \(Self.spendColumns) FROM credit_ledger WHERE user_id = ?\(after) ORDER BY created_at DESC, id DESC LIMIT ?",
            [.text(userID.description)] + binds
        ).map(Self.spend(from:))
    }

    private static func spend(from row: SQLRow) throws(StoreError) -> CreditSpend {
        guard let id = UUID(uuidString: try row.string("id")), let user = UserID(try row.string("user_id")) else {
            throw StoreError.decoding("bad credit_ledger row")
        }
        return CreditSpend(
            id: id, userID: user, credit: try row.string("credit"), amount: Int(try row.int("amount")), action: try row.string("action"),
            subject: try row.optionalString("subject"), idempotencyKey: try row.string("idempotency_key"),
            periodStart: Date(unixSeconds: try row.int("period_start")), createdAt: Date(unixSeconds: try row.int("created_at")))
    }
}
