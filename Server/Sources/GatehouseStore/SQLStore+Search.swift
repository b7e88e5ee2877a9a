import Foundation
import GatehouseCore

extension SQLStore {
    /// The accounts `search` finds, newest first (the operators' search): `conditions` (on the
    /// account's columns, with their `binds`) narrow them.
    ///
    /// Two ways, chosen by how many accounts share the prefix (issue 65), so that no term costs
    /// more than about `2 × denseFrom` index entries ordered or `limit × accounts / denseFrom`
    /// accounts walked, where one way alone costs every account for some term.
    /// - **Few share it** (fewer than ``UserFilter/denseFrom`` by address and by handle, which a
    ///   first statement counts, stopping there): the search starts from the matches, each way
    ///   through its own index, orders them and cuts them to the page. Walking every account
    ///   newest first and testing each would read the whole table when few match.
    /// - **Many share it** (a term of a letter or two): ordering every match reads and sorts them
    ///   all, a million at 1M for `q=l`. The search walks the accounts newest first instead, in
    ///   the index of the narrowing's list when there is one, and tests each: with at least
    ///   `denseFrom` matches, the page comes after about `limit × accounts / denseFrom` rows.
    ///   A narrowing walks its own list, whose share of matches the count does not see: a
    ///   common prefix narrowed to anonymous accounts (which have no address or handle) walks
    ///   all of them, as ordering would have read every match.
    func users(
        searching search: String, denseFrom: Int, narrowedBy conditions: [String], _ narrowing: [SQLValue], before: RowCursor?,
        limit: SQLValue
    ) async throws(StoreError) -> [User] {
        let lowered = search.lowercased()
        let end = lowered + "\u{10FFFF}"
        let bytes = dialect == .postgres ? " COLLATE \"C\"" : ""
        let counts = try await executor.query(
            """
            SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM users WHERE email_normalized\(bytes) >= ? AND email_normalized\(bytes) < ? LIMIT ?) AS e) AS by_email,
            (SELECT COUNT(*) FROM (SELECT 1 FROM users WHERE handle\(bytes) >= ? AND handle\(bytes) < ? LIMIT ?) AS h) AS by_handle
            """, [.text(lowered), .text(end), .integer(Int64(denseFrom)), .text(lowered), .text(end), .integer(Int64(denseFrom))]
        ).first
        let shared = max(try counts?.int("by_email") ?? 0, try counts?.int("by_handle") ?? 0)
        if shared >= Int64(denseFrom) {
            return try await users(walkingFor: lowered, search, narrowedBy: conditions, narrowing, before: before, limit: limit)
        }
        return try await users(orderingMatchesOf: lowered, search, narrowedBy: conditions, narrowing, before: before, limit: limit)
    }

    /// The search when many accounts share its prefix: the accounts newest first (from the
    /// cursor), each tested. The prefix tests compare the column's first characters, which no
    /// index serves, so each database walks the list's index in its order and stops at the page.
    private func users(
        walkingFor lowered: String, _ search: String, narrowedBy conditions: [String], _ narrowing: [SQLValue], before: RowCursor?,
        limit: SQLValue
    ) async throws(StoreError) -> [User] {
        var tests = [
            """
            (substr(email_normalized, 1, length(?)) = ? OR substr(handle, 1, length(?)) = ? OR id = ? OR phone = ? \
            OR id IN (SELECT user_id FROM identities WHERE subject = ?))
            """
        ]
        var binds: [SQLValue] = [.text(lowered), .text(lowered), .text(lowered), .text(lowered), .text(lowered), .text(search), .text(search)]
        tests += conditions
        binds += narrowing
        if let before {
            tests.append("(created_at, id) < (?, ?)")
            binds += [.integer(before.createdAt), .text(before.id)]
        }
        return try await executor.query(
            "SELECT \(Self.userColumns) FROM users WHERE \(tests.joined(separator: " AND ")) ORDER BY created_at DESC, id DESC LIMIT ?",
            binds + [limit]
        ).map(Self.user(from:))
    }

    /// The search when few accounts share its prefix: from the matches. A prefix is a range of the
    /// column in byte order (PostgreSQL: the C collation, which the prefix indexes use). Each match
    /// comes with its `(created_at, id)`, which the prefix indexes hold (migration 35), so the
    /// matches are ordered and cut to the page before any account's row is read: a prefix that
    /// tens of thousands of accounts share read each of their rows twice before (94 ms at 1M on
    /// PostgreSQL). A narrowed search reads each match's row once, by key, as the page's accounts
    /// are (on PostgreSQL through a LATERAL with a LIMIT, which is never flattened into a join that
    /// could hash every account).
    private func users(
        orderingMatchesOf lowered: String, _ search: String, narrowedBy conditions: [String], _ narrowing: [SQLValue],
        before: RowCursor?, limit: SQLValue
    ) async throws(StoreError) -> [User] {
        let end = lowered + "\u{10FFFF}"
        let bytes = dialect == .postgres ? " COLLATE \"C\"" : ""
        var binds: [SQLValue] = [.text(lowered), .text(end), .text(lowered), .text(end), .text(lowered), .text(search), .text(search)]
        let matches = """
            WITH matches(match_at, match_id) AS MATERIALIZED (
            SELECT created_at, id FROM users WHERE email_normalized\(bytes) >= ? AND email_normalized\(bytes) < ?
            UNION SELECT created_at, id FROM users WHERE handle\(bytes) >= ? AND handle\(bytes) < ?
            UNION SELECT created_at, id FROM users WHERE id = ? UNION SELECT created_at, id FROM users WHERE phone = ?
            UNION SELECT users.created_at, users.id FROM identities JOIN users ON users.id = identities.user_id WHERE identities.subject = ?)
            """
        var pageConditions = conditions
        binds += narrowing
        if let before {
            pageConditions.append("(match_at, match_id) < (?, ?)")
            binds += [.integer(before.createdAt), .text(before.id)]
        }
        let narrowed: String
        if conditions.isEmpty {
            narrowed = "matches"
        } else if dialect == .postgres {
            narrowed = "matches CROSS JOIN LATERAL (SELECT * FROM users WHERE users.id = matches.match_id LIMIT 1) AS users"
        } else {
            narrowed = "matches JOIN users ON users.id = matches.match_id"
        }
        let whereClause = pageConditions.isEmpty ? "" : "WHERE " + pageConditions.joined(separator: " AND ")
        binds.append(limit)
        let accounts =
            dialect == .postgres
            ? "SELECT users.* FROM page CROSS JOIN LATERAL (SELECT \(Self.userColumns) FROM users WHERE users.id = page.page_id LIMIT 1) AS users"
            : "SELECT \(Self.userColumns) FROM users WHERE id IN (SELECT page_id FROM page)"
        return try await executor.query(
            """
            \(matches), page(page_id) AS MATERIALIZED (
            SELECT match_id FROM \(narrowed) \(whereClause) ORDER BY match_at DESC, match_id DESC LIMIT ?)
            \(accounts) ORDER BY created_at DESC, id DESC
            """, binds
        ).map(Self.user(from:))
    }
}
