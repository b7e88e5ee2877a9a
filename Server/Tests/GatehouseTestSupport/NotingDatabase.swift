import GatehouseStore
import Synchronization

/// The real database, with each statement's SQL and how many rows it answered noted: the
/// sweeps' statements are read back from here. `beforeTurn` runs at each of housekeeping's
/// turns, before the database's own (others' requests between two batches).
public final class NotingDatabase: SQLDatabase {
    public let inner: any SQLDatabase
    public let noted = Mutex<[(sql: String, binds: [SQLValue], rows: Int)]>([])
    public let beforeTurn: @Sendable (any SQLDatabase) async -> Void
    public init(_ inner: any SQLDatabase, beforeTurn: @escaping @Sendable (any SQLDatabase) async -> Void = { _ in }) {
        self.inner = inner
        self.beforeTurn = beforeTurn
    }
    public var dialect: SQLDialect { inner.dialect }

    public func query(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow] {
        let rows = try await inner.query(sql, binds)
        noted.withLock { $0.append((sql, binds, rows.count)) }
        return rows
    }

    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        try await inner.transaction(body)
    }

    public func ping() async throws(StoreError) { try await inner.ping() }
    public func shutdown() async {}
    public func awaitHousekeepingTurn(after batch: Duration) async -> Bool {
        await beforeTurn(inner)
        return await inner.awaitHousekeepingTurn(after: batch)
    }
    public var housekeepingRests: HousekeepingRests { inner.housekeepingRests }
    public func countCachedRead() { inner.countCachedRead() }

    /// The statements that changed rows of `table`, and how many each changed.
    public func sweeps(of table: String) -> [Int] {
        batches(of: table).map(\.rows)
    }

    /// The statements that changed rows of `table`, with their values.
    public func batches(of table: String) -> [(sql: String, binds: [SQLValue], rows: Int)] {
        noted.withLock { $0 }.filter { $0.sql.hasPrefix("DELETE FROM \(table) ") || $0.sql.hasPrefix("UPDATE \(table) ") }
    }
}
