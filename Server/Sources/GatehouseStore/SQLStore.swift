import Foundation
import GatehouseCore
import Synchronization
import Tracing

/// The store over either database. The statements are portable SQL; where the dialects
/// differ, the statement is chosen by `dialect`.
public struct SQLStore: GatehouseStore {
    let executor: any SQLExecutor
    /// Set when this store runs on the whole database rather than inside a transaction.
    private let database: (any SQLDatabase)?
    /// This node's copies of sessions and accounts (PostgreSQL); nil reads the database each time.
    let sessionCache: SessionCache?
    /// Inside a transaction: the changes to drop from `sessionCache` once it has ended.
    private let pendingChanges: PendingChanges?
    /// Each transaction is a `db.transaction` span of it (nil: traces are off).
    let tracer: (any Tracer)?

    /// True inside `transaction`.
    var isTransaction: Bool { database == nil }

    /// Between two batches of housekeeping, the last of which took `batch`: the database's turn
    /// first (``SQLDatabase/awaitHousekeepingTurn(after:)``), then a sign-in waiting for the
    /// writer goes first. Inside a transaction nothing is let in between. Answers whether others
    /// used the database since the turn before, or throws ``StoreError/cancelled`` when the task
    /// was cancelled meanwhile: a server that shuts down stops its housekeeping at the next turn,
    /// where every batch before has been committed, and its next start sweeps what is left
    /// (without this, SQLite's sweep went on to its end with no rest, holding the shutdown up).
    func betweenHousekeepingBatches(after batch: Duration) async throws(StoreError) -> Bool {
        guard let database else { return false }
        let busy = await database.awaitHousekeepingTurn(after: batch)
        await Task.yield()
        if Task.isCancelled { throw .cancelled }
        return busy
    }

    /// A read the session cache answered: a use of the database all the same, for housekeeping's
    /// pace (``SQLDatabase/countCachedRead()``). Without it, a sweep beside 25,600 `/v1/me` a
    /// second the cache answered at 1M accounts on PostgreSQL saw an idle database, grew its
    /// batches to 400 rows, and one took 603 ms on the two busy cores (BENCHMARKS.md, issue 65
    /// step 37).
    func countCachedRead() { database?.countCachedRead() }

    /// The rests housekeeping took since the database was opened (none inside a transaction).
    public var housekeepingRests: HousekeepingRests { database?.housekeepingRests ?? HousekeepingRests() }

    /// A store over `database`; with `sessionCache`, token-authenticated reads of a session may
    /// be answered from it (see `SessionCache` for when), and this store's own changes to
    /// sessions and accounts drop its copies. With `tracer`, each transaction is a span.
    public init(database: any SQLDatabase, sessionCache: SessionCache? = nil, tracer: (any Tracer)? = nil) {
        self.executor = database
        self.database = database
        self.sessionCache = sessionCache
        self.pendingChanges = nil
        self.tracer = tracer
    }

    private init(transaction executor: any SQLExecutor, sessionCache: SessionCache?, pendingChanges: PendingChanges?) {
        self.executor = executor
        self.database = nil
        self.sessionCache = sessionCache
        self.pendingChanges = pendingChanges
        self.tracer = nil
    }

    /// Notes that `change` was written: outside a transaction its copies go now (the statement
    /// has committed), inside one when the transaction ends.
    func changed(_ change: SessionCache.Change) {
        guard let sessionCache else { return }
        if let pendingChanges {
            pendingChanges.append(change)
        } else {
            sessionCache.drop(change)
        }
    }

    public var dialect: SQLDialect { executor.dialect }

    /// One of an account's ``AccountFacts``: outside a transaction, this node's copy when the
    /// cache may serve it (counted as a use of the database, ``SQLDatabase/countCachedRead()``),
    /// else `read` from the database (and kept, unless a change was dropped meanwhile). A
    /// transaction always reads the database: what it decides and writes never rests on a copy.
    func accountFact<T: Sendable>(
        of user: UserID, cached: (AccountFacts) -> T?, keep: @escaping (inout AccountFacts, T) -> Void,
        read: () async throws(StoreError) -> T
    ) async throws(StoreError) -> T {
        guard !isTransaction, let sessionCache else { return try await read() }
        if let value = sessionCache.fact(of: user, cached) {
            countCachedRead()
            return value
        }
        let ticket = sessionCache.ticket()
        let value = try await read()
        sessionCache.keepFact(of: user, ticket: ticket) { keep(&$0, value) }
        return value
    }

    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any GatehouseStore) async throws -> T) async throws -> T {
        guard let database else {
            // Already inside a transaction: join it.
            return try await body(self)
        }
        // The span covers the wait for the writer or a pooled connection, then the work.
        return try await traced(
            tracer, "db.transaction", kind: .client, attributes: ["db.system.name": .string(dialect == .postgres ? "postgresql" : "sqlite")]
        ) {
            try await run(body, on: database)
        }
    }

    private func run<T: Sendable>(
        _ body: @escaping @Sendable (any GatehouseStore) async throws -> T, on database: any SQLDatabase
    ) async throws -> T {
        guard let sessionCache else {
            return try await database.transaction { executor in
                try await body(SQLStore(transaction: executor, sessionCache: nil, pendingChanges: nil))
            }
        }
        // Drop what the transaction changed once it has ended, committed or not: dropping a
        // copy is always safe, and a commit whose answer was lost may still have landed.
        let changes = PendingChanges()
        defer { for change in changes.taken() { sessionCache.drop(change) } }
        return try await database.transaction { executor in
            try await body(SQLStore(transaction: executor, sessionCache: sessionCache, pendingChanges: changes))
        }
    }

    /// The newest migration the database has applied (`GET /health`'s `schema_version`).
    public func schemaVersion() async throws(StoreError) -> Int? {
        try await executor.query("SELECT MAX(version) AS version FROM gatehouse_migrations").first?.optionalInt("version").map(Int.init)
    }

    public func ping() async throws(StoreError) {
        if let database {
            try await database.ping()
        } else {
            try await executor.query("SELECT 1 AS ok")
        }
    }

    /// A newest-first page's condition after `WHERE …` (`AND (created_at, id) < (?, ?)`, or
    /// nothing for the first page) and its binds, the limit (1 to 1,000) last. A row value, which
    /// both databases read as a range of a `(…, created_at)` index.
    static func page(before: RowCursor?, limit: Int) -> (condition: String, binds: [SQLValue]) {
        let limit = SQLValue.integer(Int64(max(1, min(limit, 1000))))
        guard let before else { return ("", [limit]) }
        return (" AND (created_at, id) < (?, ?)", [.integer(before.createdAt), .text(before.id), limit])
    }
}

/// The changes a transaction made to sessions and accounts, dropped from the cache when it ends.
final class PendingChanges: Sendable {
    private let changes = Mutex<[SessionCache.Change]>([])

    func append(_ change: SessionCache.Change) {
        changes.withLock { $0.append(change) }
    }

    func taken() -> [SessionCache.Change] {
        changes.withLock { changes in
            defer { changes = [] }
            return changes
        }
    }
}
