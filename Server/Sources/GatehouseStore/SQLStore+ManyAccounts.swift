import Foundation
import GatehouseCore

/// Reads of many accounts at once, for the console's lists (issue 65): one statement per table
/// for a page of accounts, where one per account and table made a page of 25 cost over a
/// hundred round trips, and a plan filter's scan of 2,000 accounts some thousands.
extension SQLStore {
    /// Accounts per statement: a page of the console or the API (up to 50) in the small one, a
    /// plan filter's batch of 200 in the large one. A list is padded to its size with an id no
    /// account has, so that each read is one of two statement texts whatever the count
    /// (PostgreSQL keeps each text prepared).
    static let accountsPerRead = (small: 50, large: 200)

    /// The rows of `sql` (its `user_id IN` list given as `%@`) for every account of `ids`.
    func rows(ofAccounts ids: [UserID], _ sql: String) async throws(StoreError) -> [SQLRow] {
        let distinct = Array(Set(ids.map(\.description))).sorted()
        var rows: [SQLRow] = []
        var start = 0
        while start < distinct.count {
            let size = distinct.count - start > Self.accountsPerRead.small ? Self.accountsPerRead.large : Self.accountsPerRead.small
            let chunk = distinct[start..<min(distinct.count, start + size)]
            let list = "(" + Array(repeating: "?", count: size).joined(separator: ", ") + ")"
            let binds = chunk.map { SQLValue.text($0) } + Array(repeating: SQLValue.text(""), count: size - chunk.count)
            rows += try await executor.query(sql.replacingOccurrences(of: "%@", with: list), binds)
            start += size
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

    public func passkeys(ofAccounts ids: [UserID]) async throws(StoreError) -> [UserID: [Passkey]] {
        try Self.byAccount(
            try await rows(ofAccounts: ids, "SELECT \(Self.passkeyColumns) FROM passkeys WHERE user_id IN %@ ORDER BY user_id, created_at, id"),
            Self.passkey(from:))
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
