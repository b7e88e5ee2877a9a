import Foundation
import GatehouseCore
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import _ConnectionPoolModule
import ServiceLifecycle
import Synchronization

/// PostgreSQL through postgres-nio's connection pool. Several Gatehouse nodes may share one
/// database: nothing here keeps state that another node would need to see.
///
/// The pool must be running: add ``service`` to the application's service group, or use
/// ``withRunning(_:)`` for short-lived work such as the CLI.
public final class PostgresDatabase: SQLDatabase {
    public let dialect = SQLDialect.postgres
    private let client: PostgresClient
    private let logger: Logger
    /// Whether queries go as named prepared statements (`PreparedStatements`); off for a
    /// connection pooler that cannot keep them (PgBouncer in transaction mode before 1.21).
    private let prepared: Bool
    /// The URL with its password masked, for messages.
    public let redactedURL: String
    private let observer: (any PoolObserver)?
    private let leased = Atomic<Int>(0)
    /// The time-outs of the leases in flight, all checked by one task that runs with the pool.
    let deadlines = Deadlines()
    /// Statements and transactions begun on this node since the pool was made, but housekeeping's
    /// readings of the log: it rests between its batches while others use the database (`pace`).
    let uses = Atomic<Int>(0)
    let pace: HousekeepingPace

    /// The pool as a service, to run in the application's service group: the pool, and the task
    /// that times out its leases.
    public var service: some Service { PoolService(client: client, deadlines: deadlines, started: started) }
    /// Opened once the pool runs: a lease asked for before then waits for it (`PoolStart`).
    let started = PoolStart()

    public convenience init(
        url: String, maximumConnections: Int = 20, minimumConnections: Int = 0, preparedStatements: Bool = true, logger: Logger,
        observer: (any PoolObserver)? = nil
    ) throws(StoreError) {
        try self.init(
            url: url, maximumConnections: maximumConnections, minimumConnections: minimumConnections, preparedStatements: preparedStatements,
            logger: logger, observer: observer, eventLoops: PostgresEventLoops())
    }

    /// The pool on `eventLoops` (a test's own group, whose loops no one else is given).
    init(
        url: String, maximumConnections: Int, minimumConnections: Int, preparedStatements: Bool, logger: Logger,
        observer: (any PoolObserver)?, eventLoops: PostgresEventLoops
    ) throws(StoreError) {
        let parsed = try PostgresURL(url)
        var configuration = PostgresClient.Configuration(
            host: parsed.host, port: parsed.port, username: parsed.username, password: parsed.password,
            database: parsed.database, tls: parsed.tls)
        configuration.options.maximumConnections = max(2, maximumConnections)
        // The connections kept open when idle. postgres-nio gives every other connection a 60 s
        // idle timer each time it goes back to the pool, and a cancelled timer's task and
        // dispatch source live until its deadline: under load, tens of MiB (BENCHMARKS.md,
        // issue 61 step 8). A server keeps its whole pool; a CLI command opens on demand.
        configuration.options.minimumConnections = min(max(0, minimumConnections), configuration.options.maximumConnections)
        configuration.options.connectTimeout = .seconds(5)
        client = PostgresClient(configuration: configuration, eventLoopGroup: eventLoops, backgroundLogger: logger)
        self.logger = logger
        prepared = preparedStatements
        redactedURL = parsed.redacted
        self.observer = observer
        pace = HousekeepingPace(settings: HousekeepingPace.settings, observer: observer)
    }

    /// Runs the pool for the length of `body`, for commands that do not start a server.
    @discardableResult
    public func withRunning<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await self.started.running(self.client)
                return nil
            }
            group.addTask {
                await self.deadlines.tick()
                return nil
            }
            defer { group.cancelAll() }
            return try await body()
        }
    }

    @discardableResult
    public func query(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow] {
        try await query(sql, binds, counted: true)
    }

    /// One statement outside a transaction; `counted` among the ``uses`` housekeeping's pace reads.
    func query(_ sql: String, _ binds: [SQLValue], counted: Bool) async throws(StoreError) -> [SQLRow] {
        let (logger, prepared) = (self.logger, self.prepared)
        do {
            return try await withLease(counted: counted) { connection in
                try await Self.run(sql, binds, on: connection, logger: logger, prepared: prepared, inTransaction: false)
            }
        } catch {
            throw Self.map(error)
        }
    }

    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        do {
            let (logger, prepared) = (self.logger, self.prepared)
            return try await withLease { connection in
                try await connection.withTransaction(logger: logger) { connection in
                    try await body(PostgresTransaction(connection: connection, logger: logger, prepared: prepared))
                }
            }
        } catch let error as PostgresTransactionError {
            // Report the closure's own error, not the wrapper, so services see what they threw.
            if let closureError = error.closureError { throw closureError }
            throw Self.map(error.commitError ?? error.beginError ?? error)
        } catch let error as StoreError {
            throw error
        } catch let error as PSQLError {
            throw Self.map(error)
        }
    }

    /// How long a query or transaction waits for the pool to hand it a connection. While the
    /// database is down the pool would queue requests until its circuit breaker trips (a minute);
    /// Gatehouse answers 503 after this instead. Long enough for a burst (100 concurrent spends of
    /// one account queue on its row lock) on a busy machine.
    static let leaseTimeout: Duration = .seconds(10)
    /// How long work on a leased connection may take before the caller is answered `.unavailable`
    /// anyway. With PostgreSQL killed under load, a sign-up whose COMMIT had landed was seen never
    /// to get its answer back from the pool (PostgresRestartTests); the caller must not wait for
    /// that forever. Whether such a write landed is then unknown to the caller, as with any
    /// network failure: clients retry with the same `Idempotency-Key`.
    static let answerTimeout: Duration = .seconds(20)

    /// Runs `body` on a leased connection, waiting at most ``leaseTimeout`` for the lease. On
    /// time-out the caller gets `.unavailable` at once; the queued lease is cancelled and, should
    /// the pool grant it anyway, runs nothing. Once `body` has started, the caller waits at most
    /// ``answerTimeout`` more.
    ///
    /// The two time-outs are entries in ``deadlines``, removed when the lease is over: a task
    /// sleeping per query outlived its query (a cancelled `Task.sleep` keeps its wake-up task and
    /// timer until the deadline), so at 9,000 queries a second the node held about 40 MiB of them
    /// (heaptrack, issue 61).
    private func withLease<T: Sendable>(
        counted: Bool = true, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        if counted, DatabaseUses.counted { uses.add(1, ordering: .relaxed) }
        let lease = PendingLease<T>(deadlines: deadlines)
        let (client, observer) = (self.client, self.observer)
        let asked = ContinuousClock.now
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                lease.install(continuation)
                let work = Task {
                    do {
                        await self.started.wait()
                        let value = try await client.withConnection { connection in
                            guard lease.begin() else { throw CancellationError() }
                            guard let observer else { return try await body(connection) }
                            observer.leased(waited: ContinuousClock.now - asked, inUse: self.leased.add(1, ordering: .relaxed).newValue)
                            defer { observer.released(inUse: self.leased.subtract(1, ordering: .relaxed).newValue) }
                            return try await body(connection)
                        }
                        lease.finish(.success(value))
                    } catch {
                        lease.finish(.failure(error))
                    }
                }
                lease.setTimer(after: Self.leaseTimeout) {
                    if lease.abandon(StoreError.unavailable("no database connection within \(Self.leaseTimeout)")) {
                        work.cancel()
                        return
                    }
                    // The work had started: it gets its own time for the answer.
                    lease.setTimer(after: Self.answerTimeout) {
                        if lease.finish(.failure(StoreError.unavailable("no answer from the database within \(Self.answerTimeout)"))) {
                            work.cancel()
                        }
                    }
                }
            }
        } onCancel: {
            lease.abandon(CancellationError())
        }
    }

    /// Answers within two seconds or throws `.unavailable`: the pool would otherwise wait for a
    /// connection as long as the database is down, and does not always give up on cancellation,
    /// so the probe is abandoned rather than awaited (it only reads).
    public func ping() async throws(StoreError) {
        do {
            try await deadlines.abandoning(.seconds(2), orThrow: { StoreError.unavailable("no answer within 2.0 seconds") }) {
                _ = try await self.query("SELECT 1 AS ok")
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .unavailable("\(error)")
        }
    }

    public func shutdown() async {}

    /// Keeps `cache` in step with the database until cancelled: listens on
    /// ``SessionCache/channel`` on one of the pool's connections, kept for as long as it works,
    /// applies each announcement, and sends a heartbeat every
    /// ``SessionCache/Settings/heartbeatInterval`` on the same connection. When the connection
    /// fails, the cache stops serving and empties (`restart`) until a new one hears its first
    /// heartbeat (logged: "session cache: listening"); reconnection is tried every second.
    public func feedSessionChanges(into cache: SessionCache) async {
        let (client, logger) = (self.client, self.logger)
        while !Task.isCancelled {
            cache.restart()
            await started.wait()
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: SessionCache.channel) { notifications in
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask {
                                while !Task.isCancelled {
                                    let payload = cache.heartbeat()
                                    let rows = try await connection.query("SELECT pg_notify(\(SessionCache.channel), \(payload))", logger: logger)
                                    for try await _ in rows {}
                                    try await Task.sleep(for: cache.settings.heartbeatInterval)
                                }
                            }
                            group.addTask {
                                for try await notification in notifications {
                                    if cache.apply(notification.payload) {
                                        logger.info("session cache: listening; cached sessions are served")
                                    }
                                }
                                throw StoreError.unavailable("the session change listener's connection closed")
                            }
                            try await group.next()
                            group.cancelAll()
                        }
                    }
                }
            } catch {
                // Changes may be missed from now on: stop serving copies at once.
                cache.restart()
                if Task.isCancelled { break }
                logger.warning(
                    "session cache: the change listener failed; cached sessions are not served until it is back",
                    metadata: ["error": "\(Self.map(error))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
        cache.restart()
        let counts = cache.counts
        logger.info("session cache: stopped", metadata: ["served": "\(counts.hits)", "read": "\(counts.misses)"])
    }

    /// Runs one statement on `connection`: named and prepared when `prepared` lets it (see
    /// `PreparedStatements`), else unnamed. A prepared form PostgreSQL will no longer run (the
    /// table changed under a running node) is dropped for good; outside a transaction the
    /// statement is then sent again unnamed, inside one the error stands (the transaction is
    /// aborted already).
    static func run(
        _ sql: String, _ binds: [SQLValue], on connection: PostgresConnection, logger: Logger, prepared: Bool, inTransaction: Bool
    ) async throws -> [SQLRow] {
        StatementLog.note(.postgres, sql, binds)
        let statement = prepared ? PreparedStatements.statement(sql, binds) : (slot: nil, sql: numberPlaceholders(sql))
        let bindings = makeBindings(binds)
        guard let slot = statement.slot else {
            return try await collect(try await connection.query(PostgresQuery(unsafeSQL: statement.sql, binds: bindings), logger: logger))
        }
        do {
            return try await collect(try await PreparedStatements.execute(slot: slot, bindings: bindings, on: connection, logger: logger))
        } catch where PreparedStatements.isStalePreparation(error) {
            logger.notice("a prepared statement went stale; sending it unnamed from now on", metadata: ["error": "\(String(reflecting: error))"])
            PreparedStatements.stopPreparing(sql, binds)
            if inTransaction { throw error }
            return try await collect(try await connection.query(PostgresQuery(unsafeSQL: statement.sql, binds: bindings), logger: logger))
        }
    }

    private static func makeBindings(_ binds: [SQLValue]) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: binds.count)
        for value in binds {
            switch value {
            case .null: bindings.appendNull()
            case .integer(let value): bindings.append(value)
            case .real(let value): bindings.append(value)
            case .text(let value): bindings.append(value)
            case .blob(let bytes): bindings.append(ByteBuffer(bytes: bytes))
            }
        }
        return bindings
    }

    /// Turns `?` placeholders into PostgreSQL's `$1, $2, …`.
    static func numberPlaceholders(_ sql: String) -> String {
        var result = ""
        result.reserveCapacity(sql.utf8.count + 8)
        var index = 0
        for character in sql {
            if character == "?" {
                index += 1
                result += "$\(index)"
            } else {
                result.append(character)
            }
        }
        return result
    }

    fileprivate static func collect<Rows: AsyncSequence>(_ rows: Rows) async throws -> [SQLRow] where Rows.Element == PostgresRow {
        var result: [SQLRow] = []
        for try await row in rows {
            var columns: [String: SQLValue] = [:]
            for cell in row {
                columns[cell.columnName] = try value(of: cell)
            }
            result.append(SQLRow(columns: columns))
        }
        return result
    }

    private static func value(of cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2, .int4, .int8:
            return .integer(try cell.decode(Int64.self))
        case .bool:
            return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case .float4, .float8:
            return .real(try cell.decode(Double.self))
        case .bytea:
            return .blob(Array(try cell.decode(ByteBuffer.self).readableBytesView))
        case .void:
            return .null
        default:
            return .text(try cell.decode(String.self))
        }
    }

    static func map(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        // A lease or a query abandoned by its cancelled task (the server shuts down).
        if error is CancellationError { return .cancelled }
        // The pool gives up on a database it cannot reach (its circuit breaker): 503, not 500.
        if let error = error as? ConnectionPoolError { return .unavailable("\(error)") }
        guard let error = error as? PSQLError else {
            return .database("\(error)")
        }
        if let state = error.serverInfo?[.sqlState] {
            let message = error.serverInfo?[.message] ?? "server error"
            switch state {
            case "23505":
                return .uniqueViolation(error.serverInfo?[.constraintName] ?? message)
            case "40001", "40P01":
                return .conflict(message)
            case "57P01", "57P02", "57P03", "53300":
                return .unavailable(message)
            default:
                return .database("\(state): \(message)")
            }
        }
        switch error.code {
        case .queryCancelled:
            return .cancelled
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .poolClosed, .uncleanShutdown,
            .sslUnsupported, .failedToAddSSLHandler:
            let reason = error.underlying.map { "\($0)" } ?? error.code.description
            return .unavailable(reason)
        default:
            return .database(error.code.description)
        }
    }
}
