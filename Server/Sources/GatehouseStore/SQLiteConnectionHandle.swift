import NIOConcurrencyHelpers
import NIOPosix
// The SQLite that sqlite-nio vendors (its symbols prefixed `sqlite_nio_`): the one copy of SQLite
// in the process, so its POSIX locks on the database file are never released by another copy.
import VaporCSQLite

/// One `sqlite3` connection that keeps its prepared statements.
///
/// SQLiteNIO compiles every statement again on every call (`sqlite3_prepare_v3` was 13.5 % of the
/// server's CPU under `entitlements/check`, BENCHMARKS.md) and hands each row to an event loop as
/// a task of its own. Here each SQL string is prepared once per connection and kept (up to
/// `cacheLimit` of them; SQL built with varying text beyond that is prepared per call), and a
/// call's rows come back in one piece.
///
/// Every libsqlite3 call runs on NIO's blocking thread pool, never on an event loop, under the
/// connection's lock: one statement at a time per connection, so a kept statement is never
/// stepped by two threads.
final class SQLiteConnectionHandle: @unchecked Sendable {
    struct Failure: Error {
        /// The extended result code (`SQLITE_CONSTRAINT_UNIQUE`, `SQLITE_FULL`, …).
        var code: Int32
        var message: String
        var primary: Int32 { code & 0xff }
    }

    static let cacheLimit = 256
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    private static let initialize: Void = { _ = sqlite_nio_sqlite3_initialize() }()

    private let lock = NIOLock()
    // Guarded by `lock`.
    private var db: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    /// Told the log's length after each commit, once ``reportCommits(to:)`` has set it.
    private var signal: WALSignal?
    private let pool: NIOThreadPool

    private init(db: OpaquePointer, pool: NIOThreadPool) {
        self.db = db
        self.pool = pool
    }

    /// Opens (creating when missing) the database file at `path`.
    static func open(path: String, pool: NIOThreadPool = .singleton) async throws -> SQLiteConnectionHandle {
        try await pool.runIfActive {
            Self.initialize
            var db: OpaquePointer?
            let flags = SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_EXRESCODE
            let code = sqlite_nio_sqlite3_open_v2(path, &db, flags, nil)
            guard code == SQLITE_OK, let db else {
                let message = db.map { String(cString: sqlite_nio_sqlite3_errmsg($0)) } ?? "out of memory"
                sqlite_nio_sqlite3_close_v2(db)
                throw Failure(code: code, message: message)
            }
            return SQLiteConnectionHandle(db: db, pool: pool)
        }
    }

    /// Runs one statement (its first, when `sql` holds several) and answers every row.
    func run(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await pool.runIfActive { try self.lock.withLock { try self.runLocked(sql, binds) } }
    }

    /// Runs one statement on the calling thread: the writer's statements, on the writer's own
    /// thread (`SQLiteDatabase`), where waiting for the disk or another process's lock is
    /// harmless. A trip to the pool costs two thread hops (BENCHMARKS.md, issue 61).
    func runHere(_ sql: String, _ binds: [SQLValue]) throws -> [SQLRow] {
        try lock.withLock { try runLocked(sql, binds) }
    }

    /// How long a statement waits for another connection's lock (`PRAGMA busy_timeout`).
    static let busyTimeoutMilliseconds: Int32 = 5_000

    /// From now on each commit tells `signal` how long the write-ahead log is, in place of
    /// SQLite's automatic checkpoint (`SQLiteCheckpointer`); the writer checkpoints itself only
    /// when `signal` answers so.
    func reportCommits(to signal: WALSignal) throws {
        try lock.withLock {
            guard let db else { throw Failure(code: SQLITE_MISUSE, message: "the connection is closed") }
            // Kept as long as the connection, which is as long as SQLite may call the hook.
            self.signal = signal
            _ = sqlite_nio_sqlite3_wal_hook(
                db,
                { context, db, _, pages in
                    guard let context, let db else { return SQLITE_OK }
                    let signal = Unmanaged<WALSignal>.fromOpaque(context).takeUnretainedValue()
                    if signal.committed(pages: Int(pages)) == .checkpointHere {
                        // What SQLite's automatic checkpoint would do; the pages the
                        // checkpointer has copied already are not copied again.
                        var copied: Int32 = 0
                        if sqlite_nio_sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, &copied) == SQLITE_OK {
                            signal.writerCopied(through: Int(copied))
                        }
                    }
                    return SQLITE_OK
                }, Unmanaged.passUnretained(signal).toOpaque())
        }
    }

    /// Finalizes the kept statements and closes the connection; later calls fail.
    func close() async {
        _ = try? await pool.runIfActive { self.lock.withLock { self.closeLocked() } }
    }

    deinit {
        closeLocked()
    }

    private func closeLocked() {
        for statement in statements.values { sqlite_nio_sqlite3_finalize(statement) }
        statements = [:]
        if let db { sqlite_nio_sqlite3_close_v2(db) }
        db = nil
    }

    private func runLocked(_ sql: String, _ binds: [SQLValue]) throws -> [SQLRow] {
        guard let db else { throw Failure(code: SQLITE_MISUSE, message: "the connection is closed") }
        StatementLog.note(.sqlite, sql, binds)
        let kept: Bool
        let statement: OpaquePointer
        if let cached = statements[sql] {
            (statement, kept) = (cached, true)
        } else {
            var prepared: OpaquePointer?
            let keep = statements.count < Self.cacheLimit
            let code = sqlite_nio_sqlite3_prepare_v3(db, sql, -1, keep ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0, &prepared, nil)
            guard code == SQLITE_OK else { throw failure(db, code) }
            // An empty statement (only a comment) compiles to nothing.
            guard let prepared else { return [] }
            if keep { statements[sql] = prepared }
            (statement, kept) = (prepared, keep)
        }
        defer {
            // Not `sqlite3_clear_bindings`: it expires any statement whose plan looked at a
            // parameter (SQLite does for `column = ?` terms it filters on), which then compiled
            // again at its next step. Every parameter is bound afresh below instead.
            if kept {
                sqlite_nio_sqlite3_reset(statement)
            } else {
                sqlite_nio_sqlite3_finalize(statement)
            }
        }
        for (offset, value) in binds.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .null: code = sqlite_nio_sqlite3_bind_null(statement, index)
            case .integer(let value): code = sqlite_nio_sqlite3_bind_int64(statement, index, value)
            case .real(let value): code = sqlite_nio_sqlite3_bind_double(statement, index, value)
            case .text(let value):
                code = sqlite_nio_sqlite3_bind_text64(
                    statement, index, value, UInt64(value.utf8.count), Self.transient, UInt8(SQLITE_UTF8))
            case .blob(let bytes):
                code = bytes.withUnsafeBytes {
                    sqlite_nio_sqlite3_bind_blob64(statement, index, $0.baseAddress, UInt64($0.count), Self.transient)
                }
            }
            guard code == SQLITE_OK else { throw failure(db, code) }
        }
        // Parameters the call leaves out are NULL, as in a statement prepared afresh.
        let parameters = sqlite_nio_sqlite3_bind_parameter_count(statement)
        if binds.count < parameters {
            for index in Int32(binds.count + 1)...parameters {
                let code = sqlite_nio_sqlite3_bind_null(statement, index)
                guard code == SQLITE_OK else { throw failure(db, code) }
            }
        }
        let count = sqlite_nio_sqlite3_column_count(statement)
        var names: [String] = []
        names.reserveCapacity(Int(count))
        for column in 0..<count {
            names.append(sqlite_nio_sqlite3_column_name(statement, column).map { String(cString: $0) } ?? "")
        }
        var rows: [SQLRow] = []
        while true {
            let code = sqlite_nio_sqlite3_step(statement)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else { throw failure(db, code) }
            var columns: [String: SQLValue] = [:]
            columns.reserveCapacity(names.count)
            for (column, name) in names.enumerated() {
                columns[name] = Self.value(statement, Int32(column))
            }
            rows.append(SQLRow(columns: columns))
        }
        return rows
    }

    private static func value(_ statement: OpaquePointer, _ column: Int32) -> SQLValue {
        switch sqlite_nio_sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite_nio_sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT:
            return .real(sqlite_nio_sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            // The pointer first, then its length (SQLite's documented order).
            guard let text = sqlite_nio_sqlite3_column_text(statement, column) else { return .text("") }
            let length = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self))
        case SQLITE_BLOB:
            let blob = sqlite_nio_sqlite3_column_blob(statement, column)
            let length = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
            guard let blob, length > 0 else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: blob, count: length)))
        default:
            return .null
        }
    }

    private func failure(_ db: OpaquePointer, _ code: Int32) -> Failure {
        // After a failed step the connection's code is the extended one (SQLITE_OPEN_EXRESCODE).
        let extended = sqlite_nio_sqlite3_extended_errcode(db)
        return Failure(
            code: extended & 0xff == code & 0xff ? extended : code, message: String(cString: sqlite_nio_sqlite3_errmsg(db)))
    }
}
