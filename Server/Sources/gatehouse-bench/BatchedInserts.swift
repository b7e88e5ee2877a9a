import GatehouseStore
import Synchronization

/// The loader's database (issue 65): the store's own statements, with its plain inserts sent a
/// few hundred rows at a time. One row per statement costs a round trip each, which made a
/// million accounts (about forty rows each) a matter of hours on PostgreSQL.
///
/// Inside a transaction, an `INSERT INTO t (columns) VALUES (?, …)` with no other clause is kept
/// back and joined with the same statement's other rows into one `VALUES (…), (…)`; the rows
/// reach the database in the order their statements were first seen in the transaction (an
/// account before its identities, a session before its refresh tokens). Any other statement (an upsert, a
/// `RETURNING`, a read) first sends everything kept back, so it sees every row written before
/// it, and the transaction sends the rest before it commits. Values are bound exactly as the
/// store binds them; only the number of rows per statement changes.
struct BatchedInserts: SQLDatabase {
    let database: any SQLDatabase

    var dialect: SQLDialect { database.dialect }

    func query(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow] {
        try await database.query(sql, binds)
    }

    func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        try await database.transaction { executor in
            let batching = BatchingExecutor(executor)
            let result = try await body(batching)
            try await batching.flush()
            return result
        }
    }

    func ping() async throws(StoreError) { try await database.ping() }

    func shutdown() async { await database.shutdown() }

    func awaitHousekeepingTurn(after batch: Duration) async -> Bool { await database.awaitHousekeepingTurn(after: batch) }

    var housekeepingRests: HousekeepingRests { database.housekeepingRests }

    func countCachedRead() { database.countCachedRead() }
}

/// One transaction's executor that keeps plain inserts back (see ``BatchedInserts``).
final class BatchingExecutor: SQLExecutor, Sendable {
    /// Parameters per statement: under SQLite's limit (32,766) and PostgreSQL's (65,535).
    static let bindsPerStatement = 16_000

    /// The rows of one insert statement kept back.
    struct Pending {
        /// `INSERT INTO t (columns) VALUES`
        var head: String
        /// `(?, ?, …)`
        var row: String
        var columns: Int
        var binds: [SQLValue] = []
    }

    private let executor: any SQLExecutor
    private let pending = Mutex<(groups: [Pending], binds: Int)>(([], 0))

    init(_ executor: any SQLExecutor) { self.executor = executor }

    var dialect: SQLDialect { executor.dialect }

    func query(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow] {
        guard let (head, row, columns) = Self.parsed(sql), columns == binds.count, columns > 0 else {
            // A lock reads no table: the rows kept back need not go first (the events' lock,
            // taken before each event, would otherwise send the events one at a time).
            if !sql.hasPrefix("SELECT pg_advisory_xact_lock(") { try await flush() }
            return try await executor.query(sql, binds)
        }
        let full = pending.withLock { pending in
            if let index = pending.groups.firstIndex(where: { $0.head == head && $0.row == row }) {
                pending.groups[index].binds += binds
            } else {
                pending.groups.append(Pending(head: head, row: row, columns: columns, binds: binds))
            }
            pending.binds += binds.count
            return pending.binds >= Self.bindsPerStatement * 4
        }
        if full { try await flush() }
        return []
    }

    /// Sends every row kept back, statement by statement in first-seen order.
    func flush() async throws(StoreError) {
        // The statements keep their first-seen order across flushes: a row's parent was seen
        // before it, so its statement is sent first or has been already.
        let groups = pending.withLock { pending in
            defer {
                for index in pending.groups.indices { pending.groups[index].binds.removeAll(keepingCapacity: true) }
                pending.binds = 0
            }
            return pending.groups
        }
        for group in groups {
            let perStatement = max(1, Self.bindsPerStatement / group.columns)
            var start = 0
            while start < group.binds.count {
                let end = min(group.binds.count, start + perStatement * group.columns)
                let rows = (end - start) / group.columns
                let sql = group.head + " " + Array(repeating: group.row, count: rows).joined(separator: ", ")
                try await executor.query(sql, Array(group.binds[start..<end]))
                start = end
            }
        }
    }

    /// The store's statements are a few hundred fixed strings: each is read once.
    private static let parses = Mutex<[String: (head: String, row: String, columns: Int)?]>([:])

    static func parsed(_ sql: String) -> (head: String, row: String, columns: Int)? {
        if let known = parses.withLock({ $0[sql] }) { return known }
        let parse = plainInsert(sql)
        parses.withLock { $0[sql] = .some(parse) }
        return parse
    }

    /// `INSERT INTO t (…) VALUES` and `(?, …)` of a statement that inserts one row of
    /// placeholders and does nothing else, and its number of placeholders; nil for any other.
    static func plainInsert(_ sql: String) -> (head: String, row: String, columns: Int)? {
        let text = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        guard text.hasPrefix("INSERT INTO "), let values = text.range(of: " VALUES ", options: .backwards) else { return nil }
        let row = String(text[values.upperBound...])
        let inner = row.dropFirst().dropLast()
        guard row.first == "(", row.last == ")", !inner.isEmpty, inner.allSatisfy({ $0 == "?" || $0 == "," || $0 == " " }) else { return nil }
        let head = String(text[..<values.lowerBound]) + " VALUES"
        guard !head.contains(" SELECT ") else { return nil }
        return (head, row, inner.filter { $0 == "?" }.count)
    }
}
