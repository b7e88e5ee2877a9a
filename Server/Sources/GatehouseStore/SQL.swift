import Foundation
import GatehouseCore

/// A value bound to or read from a SQL statement. The schema uses only these five kinds so
/// that the same statements run on SQLite and PostgreSQL.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLValue {
    public init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    public init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
    public init(_ value: Int?) { self = value.map { .integer(Int64($0)) } ?? .null }
    /// Booleans are stored as 0 and 1 in both databases.
    public init(_ value: Bool) { self = .integer(value ? 1 : 0) }
    public init(_ value: [UInt8]?) { self = value.map { .blob($0) } ?? .null }
}

/// Which SQL dialect a database speaks; statements that differ choose by it.
public enum SQLDialect: String, Sendable {
    case sqlite
    case postgres
}

/// One result row, by column name.
public struct SQLRow: Sendable {
    public let columns: [String: SQLValue]

    public init(columns: [String: SQLValue]) {
        self.columns = columns
    }

    /// The columns whose names start with `prefix`, without it (one table's part of a join).
    func unprefixed(_ prefix: String) -> SQLRow {
        var columns: [String: SQLValue] = [:]
        columns.reserveCapacity(self.columns.count)
        for (name, value) in self.columns where name.hasPrefix(prefix) { columns[String(name.dropFirst(prefix.count))] = value }
        return SQLRow(columns: columns)
    }

    func value(_ name: String) throws(StoreError) -> SQLValue {
        guard let value = columns[name] else {
            throw StoreError.decoding("no column '\(name)' in result")
        }
        return value
    }

    public func int(_ name: String) throws(StoreError) -> Int64 {
        guard let value = try optionalInt(name) else { throw StoreError.decoding("column '\(name)' is null") }
        return value
    }

    public func optionalInt(_ name: String) throws(StoreError) -> Int64? {
        switch try value(name) {
        case .null: return nil
        case .integer(let value): return value
        case .real(let value): return Int64(value)
        case .text(let text):
            guard let value = Int64(text) else { throw StoreError.decoding("column '\(name)' is not an integer") }
            return value
        case .blob: throw StoreError.decoding("column '\(name)' is not an integer")
        }
    }

    public func bool(_ name: String) throws(StoreError) -> Bool {
        try int(name) != 0
    }

    public func string(_ name: String) throws(StoreError) -> String {
        guard let value = try optionalString(name) else { throw StoreError.decoding("column '\(name)' is null") }
        return value
    }

    /// An account id column that may be null (a ledger row no account holds yet); `table` names
    /// the row in the error when the text is not an account id.
    func optionalUserID(_ name: String, of table: String) throws(StoreError) -> UserID? {
        guard let text = try optionalString(name) else { return nil }
        guard let id = UserID(text) else { throw StoreError.decoding("bad \(table).\(name)") }
        return id
    }

    public func optionalString(_ name: String) throws(StoreError) -> String? {
        switch try value(name) {
        case .null: return nil
        case .text(let value): return value
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        case .blob(let bytes): return String(decoding: bytes, as: UTF8.self)
        }
    }

    public func bytes(_ name: String) throws(StoreError) -> [UInt8] {
        guard let value = try optionalBytes(name) else { throw StoreError.decoding("column '\(name)' is null") }
        return value
    }

    public func optionalBytes(_ name: String) throws(StoreError) -> [UInt8]? {
        switch try value(name) {
        case .null: return nil
        case .blob(let bytes): return bytes
        case .text(let text): return Array(text.utf8)
        default: throw StoreError.decoding("column '\(name)' is not binary")
        }
    }
}

/// Something that runs SQL: a whole database (each statement on its own) or one open
/// transaction. Statements use `?` placeholders, which the PostgreSQL driver numbers;
/// statement text therefore never contains a literal question mark.
public protocol SQLExecutor: Sendable {
    var dialect: SQLDialect { get }
    /// Runs one statement and returns its rows (none for most writes).
    @discardableResult
    func query(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow]
    /// Runs one write of a counter that may be lost to a power cut, never to the process ending
    /// (a lockout's or a rate limit's count): it is visible to every reader when this returns, as
    /// any commit is, but this node does not wait for the disk. SQLite commits it to the
    /// write-ahead log without `fsync`, and the next flushed commit's `fsync` carries it to the
    /// disk with that commit (the log is replayed in order, so no later commit outlives it).
    /// Inside a transaction, or on PostgreSQL (whose flush is the database server's work, not the
    /// node's), it is `query`.
    @discardableResult
    func queryUnflushed(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow]
}

extension SQLExecutor {
    @discardableResult
    public func query(_ sql: String) async throws(StoreError) -> [SQLRow] {
        try await query(sql, [])
    }

    @discardableResult
    public func queryUnflushed(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow] {
        try await query(sql, binds)
    }
}

/// A database connection pool with transactions and a liveness probe.
public protocol SQLDatabase: SQLExecutor {
    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    func transaction<T: Sendable>(
        _ body: @escaping @Sendable (any SQLExecutor) async throws -> T
    ) async throws -> T
    /// Answers quickly whether the database responds; throws `StoreError.unavailable` if not.
    func ping() async throws(StoreError)
    /// Closes every connection.
    func shutdown() async
    /// Called between two batches of housekeeping (a sweep, a reclaim of free pages), the last of
    /// which took `batch`: waits while the database has writing of its own to catch up on before
    /// more is added, and rests while others need the machine. SQLite waits while its write-ahead
    /// log holds many pages its checkpointer has not copied yet (`SQLiteCheckpointer`); PostgreSQL
    /// rests while its log since the turn before ran ahead of what its checkpoints are set for; both
    /// rest while requests use the database (`HousekeepingPace`). Answers whether others used
    /// the database since the turn before (housekeeping then keeps its batches small). A rest
    /// ends early when the task is cancelled (the server shuts down); the caller then stops.
    func awaitHousekeepingTurn(after batch: Duration) async -> Bool
    /// The rests housekeeping took since the database was opened.
    var housekeepingRests: HousekeepingRests { get }
    /// A read this node's session cache answered in the database's place: counted among the uses
    /// housekeeping's pace reads, so that it rests beside the requests the cache serves as beside
    /// any (issue 65, step 37).
    func countCachedRead()
}

/// Told when a query or transaction gets its connection and gives it back, and when housekeeping
/// rests between its batches (the server's database metrics). Called on the request's path:
/// keep it cheap.
public protocol PoolObserver: Sendable {
    /// A connection was handed out after waiting `waited`; `inUse` are now leased.
    func leased(waited: Duration, inUse: Int)
    /// A connection came back; `inUse` are still leased.
    func released(inUse: Int)
    /// Housekeeping rests `rest` between two batches, for `reason`: told as a rest begins, or as
    /// SQLite's wait for its checkpointer ends (its length is known only then).
    func housekeepingRested(for reason: HousekeepingRest, _ rest: Duration)
}

/// Storage failures. Stores never throw HTTP errors; services map these.
public enum StoreError: Error, Sendable, CustomStringConvertible, Equatable {
    /// A unique constraint refused the write; the associated value is the database's own
    /// words for it (SQLite's message, PostgreSQL's constraint name), which `uniqueKey` reads.
    case uniqueViolation(String)
    /// The database cannot be reached or did not answer in time.
    case unavailable(String)
    /// A row could not be turned into a value.
    case decoding(String)
    /// Another writer got in the way; the operation may be retried.
    case conflict(String)
    /// A shipped migration differs from the one the database recorded.
    case migrationMismatch(String)
    /// The database has a schema version this binary does not know (a newer Gatehouse migrated
    /// it): the node refuses to start on it.
    case schemaNewerThanBinary(database: Int, known: Int)
    /// The task waiting on the database was cancelled (the server shuts down) before its work
    /// ended: housekeeping stopped between two batches, or a statement was abandoned.
    case cancelled
    /// Anything else the database said.
    case database(String)

    public var description: String {
        switch self {
        case .uniqueViolation(let what): return "unique constraint violated: \(what)"
        case .unavailable(let why): return "database unavailable: \(why)"
        case .decoding(let why): return "cannot read row: \(why)"
        case .conflict(let why): return "write conflict: \(why)"
        case .migrationMismatch(let why): return "migration mismatch: \(why)"
        case .schemaNewerThanBinary(let database, let known):
            return "schema_newer_than_binary: the database has schema version \(database), newer than this Gatehouse knows (up to \(known)); upgrade Gatehouse to a release that has migration \(database)"
        case .cancelled: return "cancelled: the work stopped before its end (the server shuts down)"
        case .database(let why): return "database error: \(why)"
        }
    }
}
