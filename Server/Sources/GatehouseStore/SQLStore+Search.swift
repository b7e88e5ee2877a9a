import Foundation
import GatehouseCore

extension SQLStore {
    /// The accounts `search` finds, newest first (the operators' search): `conditions` (on the
    /// account's columns, with their `binds`) narrow them.
    ///
    /// Two ways, by how many accounts share the prefix (issue 65):
    /// - **Few share it** (fewer than ``UserFilter/denseFrom`` by address and by handle, which a
    ///   first statement counts, stopping there): the search starts from the matches, each way
    ///   through its own index, orders them and cuts them to the page. Walking the accounts
    ///   newest first and testing each would read the whole table when few match.
    /// - **Many share it** (a term of a letter or two): ordering the matches reads and sorts every
    ///   one of them, a million at 1M for `q=l`. The search first walks the newest
    ///   ``UserFilter/walkAtMost`` accounts (from the cursor; those of the narrowing's list when
    ///   there is one) and tests each, stopping when the page fills. When the matches are spread
    ///   over time, it fills within `limit × accounts / matches` accounts. When they are not (a
    ///   prefix shared by accounts made long ago), the page does not fill within the walk's
    ///   bound, and the search goes back a week at a time from the cursor, reading each week's
    ///   matches through an index by week (`PrefixMatches.weekByWeek`), until the weeks read hold
    ///   a page: such a term costs the walk, a look into each week gone back, and the matches of
    ///   the weeks that fill the page.
    func users(
        searching search: String, filter: UserFilter, narrowedBy conditions: [String], _ narrowing: [SQLValue], before: RowCursor?,
        limit: Int
    ) async throws(StoreError) -> [User] {
        let lowered = search.lowercased()
        let end = lowered + "\u{10FFFF}"
        let dense = Int64(filter.denseFrom)
        let counts = try await executor.query(
            """
            SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM users WHERE \(prefixRange("email_normalized")) LIMIT ?) AS e) AS by_email,
            (SELECT COUNT(*) FROM (SELECT 1 FROM users WHERE \(prefixRange("handle")) LIMIT ?) AS h) AS by_handle
            """, [.text(lowered), .text(end), .integer(dense), .text(lowered), .text(end), .integer(dense)]
        ).first
        guard max(try counts?.int("by_email") ?? 0, try counts?.int("by_handle") ?? 0) >= dense else {
            return try await users(
                orderingMatchesOf: lowered, search, .all, narrowedBy: conditions, narrowing, before: before, limit: limit)
        }
        if let page = try await users(
            walkingFor: lowered, search, atMost: filter.walkAtMost, narrowedBy: conditions, narrowing, before: before, limit: limit)
        {
            return page
        }
        return try await users(
            orderingMatchesOf: lowered, search, .weekByWeek, narrowedBy: conditions, narrowing, before: before, limit: limit)
    }

    /// A week in seconds, as the search's indexes by week count them (migration 37): an account's
    /// week is its `created_at` divided by this, counted from 1970. The indexes' expression and
    /// each statement that reads them are written with this number, so it changes only with a new
    /// migration.
    static let searchWeek: Int64 = 604_800

    /// Which of a prefix's matches the search orders.
    enum PrefixMatches {
        /// Every match: fewer than ``UserFilter/denseFrom`` share the prefix.
        case all
        /// Many share the prefix and a walk of the newest accounts did not fill the page: the
        /// matches of one week at a time, newest week first, until the weeks read hold a page
        /// (or the oldest account's week is read). Each week's matches are a range of an index
        /// by week (migration 37). Ordering every match read all of them: 100,000 accounts made
        /// years ago sharing a prefix took 81–92 ms p99 at 1M (BENCHMARKS.md, issue 65, step 23),
        /// a week at a time 27–39 ms in three runs of four (step 30).
        case weekByWeek
    }

    /// `column` starts with a term: the range from the term (the first `?`) to the term followed
    /// by U+10FFFF (the second), in byte order, as the prefix indexes hold it (PostgreSQL: the C
    /// collation).
    private func prefixRange(_ column: String) -> String {
        let bytes = dialect == .postgres ? " COLLATE \"C\"" : ""
        return "\(column)\(bytes) >= ? AND \(column)\(bytes) < ?"
    }

    /// The search when many accounts share its prefix: the newest `atMost` accounts of the list
    /// from the cursor, each tested, or nil when they hold less than a page of matches (and the
    /// list goes on past them). A first statement finds the time of the oldest of them from the
    /// list's index alone; the walk is then a range of that index (those accounts, and any others
    /// made in the same second), which each database reads in its order and leaves at the page.
    private func users(
        walkingFor lowered: String, _ search: String, atMost: Int, narrowedBy conditions: [String], _ narrowing: [SQLValue],
        before: RowCursor?, limit: Int
    ) async throws(StoreError) -> [User]? {
        var range = conditions
        var rangeBinds = narrowing
        if let before {
            range.append("(created_at, id) < (?, ?)")
            rangeBinds += [.integer(before.createdAt), .text(before.id)]
        }
        let listed = range.isEmpty ? "" : "WHERE " + range.joined(separator: " AND ")
        let floors = try await executor.query(
            """
            SELECT MIN(created_at) AS floor, COUNT(*) AS walked FROM (
            SELECT created_at FROM users \(listed) ORDER BY created_at DESC, id DESC LIMIT ?) AS walk
            """, rangeBinds + [.integer(Int64(atMost))])
        guard let floor = floors.first, let oldest = try floor.optionalInt("floor") else { return [] }
        let tests = """
            (substr(email_normalized, 1, length(?)) = ? OR substr(handle, 1, length(?)) = ? OR id = ? OR phone = ? \
            OR id IN (SELECT user_id FROM identities WHERE subject = ?))
            """
        let page = try await executor.query(
            """
            SELECT \(Self.userColumns) FROM users WHERE \((range + ["created_at >= ?", tests]).joined(separator: " AND "))
            ORDER BY created_at DESC, id DESC LIMIT ?
            """,
            rangeBinds + [.integer(oldest)]
                + [.text(lowered), .text(lowered), .text(lowered), .text(lowered), .text(lowered), .text(search), .text(search)]
                + [.integer(Int64(limit))]
        ).map(Self.user(from:))
        // A page short of the limit is the list's end only when the walk met fewer accounts than it may.
        let walked = try floor.int("walked")
        return page.count == limit || walked < Int64(atMost) ? page : nil
    }

    /// The search from its matches: all of them when few accounts share its prefix, a week at a
    /// time when many do and a walk found less than a page (`PrefixMatches`). A prefix is a range
    /// of the column in byte order (``prefixRange(_:)``). Each match comes with its
    /// `(created_at, id)`, which the prefix indexes hold (migration 35), so
    /// the matches are ordered and cut to the page before any account's row is read: a prefix
    /// that tens of thousands of accounts share read each of their rows twice before (94 ms at 1M
    /// on PostgreSQL). A narrowed search reads each match's row once, by key, as the page's
    /// accounts are (on PostgreSQL through a LATERAL with a LIMIT, which is never flattened into a
    /// join that could hash every account).
    private func users(
        orderingMatchesOf lowered: String, _ search: String, _ prefixMatches: PrefixMatches, narrowedBy conditions: [String],
        _ narrowing: [SQLValue], before: RowCursor?, limit: Int
    ) async throws(StoreError) -> [User] {
        var binds: [SQLValue] = []
        let weeks: String
        let byPrefix: String
        switch prefixMatches {
        case .all:
            weeks = ""
            byPrefix = newestMatches(of: lowered, cut: conditions.isEmpty, before: before, limit: limit, binds: &binds)
        case .weekByWeek:
            weeks = "RECURSIVE " + weeksBack(for: lowered, narrowedBy: conditions, narrowing, before: before, limit: limit, binds: &binds)
            byPrefix = matchesOfWeeksBack(lowered, narrowedBy: conditions, narrowing, before: before, limit: limit, binds: &binds)
        }
        binds += [.text(lowered), .text(search), .text(search)]
        let matches = """
            WITH \(weeks)matches(match_at, match_id) AS MATERIALIZED (
            \(byPrefix)
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
        binds.append(.integer(Int64(limit)))
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

    /// Every match of the prefix by address and by handle (`PrefixMatches.all`), for the union of
    /// the search's matches. Unnarrowed (`cut`), the page is among the newest `limit` matches of
    /// each prefix (past the cursor), so each is cut to those before the union: a top-N sort of its
    /// index range. Deduplicating and ordering every match took twice as long (BENCHMARKS.md, issue
    /// 65, step 23). The cut orders by `created_at + 0`, which no index holds: ordered by
    /// `created_at`, PostgreSQL walks users_created backwards and tests each account, seconds when
    /// the matches are old. A narrowed search tests each match's row and keeps them all.
    private func newestMatches(of lowered: String, cut: Bool, before: RowCursor?, limit: Int, binds: inout [SQLValue]) -> String {
        let end = lowered + "\u{10FFFF}"
        func newest(_ column: String) -> String {
            binds += [.text(lowered), .text(end)]
            let matching = "SELECT created_at, id FROM users WHERE \(prefixRange(column))"
            guard cut else { return matching }
            let (after, page) = Self.page(before: before, limit: limit)
            binds += page
            return "SELECT * FROM (\(matching)\(after) ORDER BY created_at + 0 DESC, id DESC LIMIT ?) AS newest"
        }
        let byEmail = newest("email_normalized")
        return "\(byEmail)\nUNION \(newest("handle"))"
    }

    /// The accounts of one week (`week`, an SQL expression; from `source`, which holds `users`,
    /// and where `also` holds) whose address or handle starts with the term, narrowed and past the
    /// cursor: two ranges of the indexes by week (migration 37).
    private func matches(
        of lowered: String, from source: String = "users", inWeek week: String, also: [String] = [], narrowedBy conditions: [String],
        _ narrowing: [SQLValue], before: RowCursor?, binds: inout [SQLValue]
    ) -> String {
        var tests = also + conditions
        var testBinds = narrowing
        if let before {
            tests.append("(created_at, id) < (?, ?)")
            testBinds += [.integer(before.createdAt), .text(before.id)]
        }
        func inWeek(_ column: String) -> String {
            binds += [.text(lowered), .text(lowered + "\u{10FFFF}")] + testBinds
            let all = ["created_at / \(Self.searchWeek) = \(week)", prefixRange(column)] + tests
            return "SELECT created_at, id FROM \(source) WHERE \(all.joined(separator: " AND "))"
        }
        let byEmail = inWeek("email_normalized")
        return "\(byEmail) UNION \(inWeek("handle"))"
    }

    /// `weeks(week, found)`: the weeks gone back (`PrefixMatches.weekByWeek`), from the cursor's
    /// week (or the newest account's) back, each row holding how many matches the weeks after it
    /// hold. It stops at the first week with a page of matches after it, or past the oldest
    /// account's week; that last week is not read.
    private func weeksBack(
        for lowered: String, narrowedBy conditions: [String], _ narrowing: [SQLValue], before: RowCursor?, limit: Int,
        binds: inout [SQLValue]
    ) -> String {
        let start: String
        if let before {
            start = "CAST(? AS BIGINT)"
            binds.append(.integer(before.createdAt / Self.searchWeek))
        } else {
            start = "(SELECT MAX(created_at) FROM users) / \(Self.searchWeek)"
        }
        let counted = matches(of: lowered, inWeek: "weeks.week", narrowedBy: conditions, narrowing, before: before, binds: &binds)
        binds.append(.integer(Int64(limit)))
        return """
            weeks(week, found) AS (SELECT \(start), CAST(0 AS BIGINT)
            UNION ALL SELECT week - 1, found + (SELECT COUNT(*) FROM (\(counted)) AS counted) FROM weeks
            WHERE found < ? AND week >= (SELECT MIN(created_at) FROM users) / \(Self.searchWeek)),

            """
    }

    /// The matches of the weeks ``weeksBack(for:narrowedBy:_:before:limit:binds:)`` went back
    /// over, but its last: on PostgreSQL each week's newest page, through a LATERAL with a LIMIT
    /// (a range of each index by week, never flattened into a join that could read every match);
    /// on SQLite every match of those weeks, a range of each index by week for each (a CROSS
    /// JOIN, which SQLite reads in the order written: joined, it read every match through the
    /// prefix indexes and looked each one's week up).
    private func matchesOfWeeksBack(
        _ lowered: String, narrowedBy conditions: [String], _ narrowing: [SQLValue], before: RowCursor?, limit: Int,
        binds: inout [SQLValue]
    ) -> String {
        let read = "weeks.week > (SELECT MIN(week) FROM weeks)"
        guard dialect == .postgres else {
            return matches(
                of: lowered, from: "weeks CROSS JOIN users", inWeek: "weeks.week", also: [read], narrowedBy: conditions, narrowing,
                before: before, binds: &binds)
        }
        let inWeek = matches(of: lowered, inWeek: "weeks.week", narrowedBy: conditions, narrowing, before: before, binds: &binds)
        binds.append(.integer(Int64(limit)))
        return """
            SELECT newest.created_at, newest.id FROM weeks CROSS JOIN LATERAL (
            SELECT created_at, id FROM (\(inWeek)) AS week_matches ORDER BY created_at DESC, id DESC LIMIT ?) AS newest WHERE \(read)
            """
    }
}
