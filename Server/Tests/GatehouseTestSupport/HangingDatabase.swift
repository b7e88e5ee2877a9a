import GatehouseStore
import Synchronization

/// The real database, except that once armed, each statement (inside a transaction too) waits
/// until its task is cancelled, then fails as a cancelled query does (`StoreError.cancelled`):
/// background work caught in the middle of a query by a shutdown. `hung` hears the SQL of each
/// statement as it begins to wait.
public final class HangingDatabase: SQLDatabase {
    public let inner: any SQLDatabase
    public let hung: AsyncStream<String>
    private let hungContinuation: AsyncStream<String>.Continuation
    private let armed = Atomic<Bool>(false)

    public init(_ inner: any SQLDatabase) {
        self.inner = inner
        (hung, hungContinuation) = AsyncStream.makeStream(of: String.self)
    }

    /// From now on, every statement waits (the work's set-up ran before).
    public func arm() { armed.store(true, ordering: .sequentiallyConsistent) }

    public var dialect: SQLDialect { inner.dialect }

    public func query(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow] {
        try await hangIfArmed(sql)
        return try await inner.query(sql, binds)
    }

    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        try await inner.transaction { executor in try await body(Executor(inner: executor, database: self)) }
    }

    public func ping() async throws(StoreError) { try await inner.ping() }
    public func shutdown() async {}
    public func awaitHousekeepingTurn(after batch: Duration) async -> Bool { await inner.awaitHousekeepingTurn(after: batch) }
    public var housekeepingRests: HousekeepingRests { inner.housekeepingRests }
    public func countCachedRead() { inner.countCachedRead() }

    fileprivate func hangIfArmed(_ sql: String) async throws(StoreError) {
        guard armed.load(ordering: .sequentiallyConsistent) else { return }
        hungContinuation.yield(sql)
        do {
            try await Task.sleep(for: .seconds(3_600))
        } catch {
            throw .cancelled
        }
    }

    /// A transaction's statements, each of which may hang as the database's own may.
    private struct Executor: SQLExecutor {
        let inner: any SQLExecutor
        let database: HangingDatabase
        var dialect: SQLDialect { inner.dialect }

        func query(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow] {
            try await database.hangIfArmed(sql)
            return try await inner.query(sql, binds)
        }
    }
}
