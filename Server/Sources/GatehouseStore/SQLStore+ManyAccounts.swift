import Foundation
import GatehouseCore

/// Reads of many accounts at once, for the console's lists (issue 65): one statement per table
/// for a page of accounts, where one per account and table made a page of 25 cost over a
/// hundred round trips, and a plan filter's scan of 2,000 accounts some thousands.
extension SQLStore {
    /// Accounts per statement. Short lists are padded to it with an id no account has, so that
    /// each read is one statement text whatever the count (PostgreSQL keeps each text prepared).
    static let accountsPerRead = 50

    /// The rows of `sql` (its `user_id IN` list given as `%@`) for every account of `ids`.
    func rows(ofAccounts ids: [UserID], _ sql: String) async throws(StoreError) -> [SQLRow] {
        let distinct = Array(Set(ids.map(\.description))).sorted()
        let list = "(" + Array(repeating: "?", count: Self.accountsPerRead).joined(separator: ", ") + ")"
        let statement = sql.replacingOccurrences(of: "%@", with: list)
        var rows: [SQLRow] = []
        for start in stride(from: 0, to: distinct.count, by: Self.accountsPerRead) {
            let chunk = distinct[start..<min(distinct.count, start + Self.accountsPerRead)]
            let binds = chunk.map { SQLValue.text($0) } + Array(repeating: SQLValue.text(""), count: Self.accountsPerRead - chunk.count)
            rows += try await executor.query(statement, binds)
        }
        return rows
    }

    /// `rows` by the account in their `user_id` column, each account's in the order read.
    static func byAccount<T>(_ rows: [SQLRow], _ decode: (SQLRow) throws(StoreError) -> T) throws(StoreError) -> [UserID: [T]] {
        var found: [UserID: [T]] = [:]
        for row in rows {
            guard let id = UserID(try row.string("user_id")) else { throw StoreError.decoding("bad user_id") }
            found[id, default: []].append(try decode(row))
        }
        return found
    }

    public func identities(ofAccounts ids: [UserID]) async throws(StoreError) -> [UserID: [Identity]] {
        try Self.byAccount(
            try await rows(
                ofAccounts: ids,
                "SELECT id, user_id, provider, subject, email, is_private_relay, created_at FROM identities WHERE user_id IN %@ ORDER BY user_id, created_at, id"),
            Self.identity(from:))
    }

    public func ledgerRows(ofAccounts ids: [UserID], sources: Set<PlanSource>) async throws(StoreError) -> [UserID: LedgerRows] {
        var ledgers: [UserID: LedgerRows] = [:]
        for source in PlanSource.allCases where sources.contains(source) {
            switch source {
            case .appStore:
                for (id, rows) in try await appStoreRows(ofAccounts: ids) { ledgers[id, default: LedgerRows()].appStore = rows }
            case .stripe:
                for (id, rows) in try await stripeRows(ofAccounts: ids) { ledgers[id, default: LedgerRows()].stripe = rows }
            case .googlePlay:
                for (id, rows) in try await googlePlayRows(ofAccounts: ids) { ledgers[id, default: LedgerRows()].googlePlay = rows }
            case .grant:
                for (id, rows) in try await grantRows(ofAccounts: ids) { ledgers[id, default: LedgerRows()].grants = rows }
            case .trial: continue  // The account's own fields.
            }
        }
        return ledgers
    }
}
