import Foundation
import Logging
import NIOPosix
import Synchronization

/// The embedded default: one SQLite file in WAL mode with `synchronous=FULL`, so a commit
/// that returned is on disk and survives `kill -9` or a power cut; only a throttle counter's
/// write (`queryUnflushed`) leaves its `fsync` to the next commit, and survives `kill -9` alone.
///
/// One writer connection, serialised by an async lock (SQLite allows one writer at a time
/// anyway, and `BEGIN IMMEDIATE` keeps other processes such as the CLI out for the length of
/// a transaction), and a few read-only connections that WAL lets run beside it. Every write runs
/// on the writer's own thread (`ThreadExecutor`), its statements and commit included; reads run
/// on NIO's thread pool; no libsqlite3 call runs on an event loop. Each connection keeps its
/// prepared statements (`SQLiteConnectionHandle`). The write-ahead log is copied into the file by
/// a connection of its own (`SQLiteCheckpointer`), not inside the writer's commits.
public final class SQLiteDatabase: SQLDatabase {
    public let dialect = SQLDialect.sqlite
    public let path: String
    private let writer: SQLiteConnectionHandle
    /// The writer, lent to one statement or transaction at a time.
    private let writerLock = Lender(count: 1)
    /// Where every write runs, from taking `writerLock` to giving it back: a transaction's
    /// statements, its `COMMIT` (and the `fsync` that waits for the disk) and the hand-over to the
    /// next write happen on this thread, whatever the executors answering requests are busy with.
    /// A trip to NIO's pool per statement or commit cost two thread hops each.
    private let writerThread = ThreadExecutor()
    /// The read-only connections, lent one read at a time: a read takes whichever is free, or
    /// waits for the first to come back. Reads were once dealt to the connections in turn, and
    /// each waited for its own on a thread of NIO's blocking pool (one per core): a short read
    /// dealt to a connection busy with a long one (the console overview's count reads a month of
    /// rows) waited it out, and held a thread that every other connection's statements, the
    /// writer's too, then waited for.
    private let readers: [SQLiteConnectionHandle]
    private let readerLender: Lender
    private let closed = Atomic<Bool>(false)
    /// Whether the writer is at `synchronous = NORMAL` (a counter's write), read and written only
    /// while the writer is held.
    private let unflushed = Atomic<Bool>(false)
    /// Told when the writer is taken and given back (SQLite's one write connection is its pool).
    private let observer: (any PoolObserver)?
    /// Copies the write-ahead log into the file beside the writer (none for `:memory:`).
    let checkpointer: SQLiteCheckpointer?
    /// Reads and writes begun since the file was opened: housekeeping rests between its batches
    /// while others use the database (`pace`).
    private let uses = Atomic<Int>(0)
    let pace: HousekeepingPace

    private init(
        path: String, writer: SQLiteConnectionHandle, readers: [SQLiteConnectionHandle], observer: (any PoolObserver)?,
        checkpointer: SQLiteCheckpointer?
    ) {
        self.path = path
        self.writer = writer
        self.readers = readers
        readerLender = Lender(count: readers.count)
        self.observer = observer
        self.checkpointer = checkpointer
        pace = HousekeepingPace(settings: HousekeepingPace.settings, observer: observer)
    }

    /// Opens (creating when missing) the database file at `path`.
    public static func open(
        path: String, readerCount: Int = 2, logger: Logger, observer: (any PoolObserver)? = nil
    ) async throws(StoreError) -> SQLiteDatabase {
        try await open(path: path, readerCount: readerCount, logger: logger, observer: observer, pool: .singleton)
    }

    /// Opens (creating when missing) the database file at `path`; its libsqlite3 calls run on
    /// `pool` (a test that times its own connections gives them a pool of their own).
    static func open(
        path: String, readerCount: Int = 2, logger: Logger, observer: (any PoolObserver)? = nil, pool: NIOThreadPool
    ) async throws(StoreError) -> SQLiteDatabase {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .unavailable("cannot open SQLite database at \(path): directory \(directory) does not exist")
        }
        // Owner-only before anything is written to it (and its WAL inherits the mode).
        if path != ":memory:" { try OwnerOnlyFile.restrictDatabase(path) }
        // Every connection opened is closed again if a later step fails (a file that is not a
        // database fails at the first pragma).
        var opened: [SQLiteConnectionHandle] = []
        var checkpointer: SQLiteCheckpointer?
        do {
            let writer = try await SQLiteConnectionHandle.open(path: path, pool: pool)
            opened.append(writer)
            for pragma in [
                "PRAGMA busy_timeout = \(SQLiteConnectionHandle.busyTimeoutMilliseconds)",
                // Takes effect in a new file only (before its first table): the retention sweep
                // then gives freed pages back (`reclaimSpace`). An older file keeps reusing them.
                "PRAGMA auto_vacuum = INCREMENTAL",
                "PRAGMA journal_mode = WAL",
                "PRAGMA synchronous = FULL",
                "PRAGMA foreign_keys = ON",
            ] {
                _ = try await writer.run(pragma, [])
            }
            if path != ":memory:" {
                let started = try await SQLiteCheckpointer.start(path: path, logger: logger)
                checkpointer = started
                try writer.reportCommits(to: started.signal)
            }
            var readers: [SQLiteConnectionHandle] = []
            for _ in 0..<max(1, readerCount) {
                let reader = try await SQLiteConnectionHandle.open(path: path, pool: pool)
                opened.append(reader)
                for pragma in ["PRAGMA busy_timeout = \(SQLiteConnectionHandle.busyTimeoutMilliseconds)", "PRAGMA foreign_keys = ON", "PRAGMA query_only = 1"] {
                    _ = try await reader.run(pragma, [])
                }
                readers.append(reader)
            }
            return SQLiteDatabase(path: path, writer: writer, readers: readers, observer: observer, checkpointer: checkpointer)
        } catch {
            await checkpointer?.stop()
            for connection in opened { await connection.close() }
            throw .unavailable("cannot open SQLite database at \(path): \(Self.describe(error))")
        }
    }

    @discardableResult
    public func query(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow] {
        if Self.isRead(sql) {
            if DatabaseUses.counted { uses.add(1, ordering: .relaxed) }
            let index = await readerLender.take()
            defer { readerLender.giveBack(index) }
            return try await Self.run(sql, binds, on: readers[index])
        }
        return try await withWriter { () throws(StoreError) -> [SQLRow] in
            try restoreFlush()
            return try Self.runHere(sql, binds, on: writer)
        }
    }

    /// A counter's write, committed without waiting for the disk (`SQLExecutor.queryUnflushed`):
    /// the writer commits it at `synchronous = NORMAL`, which in WAL mode writes the log and
    /// skips its `fsync`, and is set back to `FULL` before it is given back.
    public func queryUnflushed(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow] {
        try await withWriter { () throws(StoreError) -> [SQLRow] in
            try Self.runHere("PRAGMA synchronous = NORMAL", [], on: writer)
            unflushed.store(true, ordering: .relaxed)
            // Whatever the statement did: a writer left unflushed here is set back by the next
            // flushed write before it runs.
            defer { try? restoreFlush() }
            return try Self.runHere(sql, binds, on: writer)
        }
    }

    /// Sets the writer back to flushing its commits, if a counter's write left it otherwise (the
    /// pragma failed there): every flushed write runs it first while it holds the writer, and does
    /// not run when it fails.
    private func restoreFlush() throws(StoreError) {
        guard unflushed.load(ordering: .relaxed) else { return }
        try Self.runHere("PRAGMA synchronous = FULL", [], on: writer)
        unflushed.store(false, ordering: .relaxed)
    }

    /// Runs `body` on the writer's thread while it holds the writer (told to `observer`): every
    /// write goes through here, one at a time.
    private func withWriter<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        if DatabaseUses.counted { uses.add(1, ordering: .relaxed) }
        return try await withTaskExecutorPreference(writerThread) { () async throws(Failure) -> T in
            let asked = ContinuousClock.now
            _ = await writerLock.take()
            observer?.leased(waited: ContinuousClock.now - asked, inUse: 1)
            defer {
                observer?.released(inUse: 0)
                writerLock.giveBack(0)
            }
            return try await body()
        }
    }

    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        try await withWriter {
            // Each statement runs on this thread, the writer's own, to its end: nothing queued
            // can be dropped by a cancelled task (a `COMMIT` dropped that way once left the writer
            // inside the transaction). `BEGIN IMMEDIATE` waits here, up to the busy timeout, while
            // another process (a `gatehouse` command) writes.
            try restoreFlush()
            try Self.runHere("BEGIN IMMEDIATE", [], on: writer)
            let executor = SQLiteTransaction(connection: writer)
            do {
                let result = try await body(executor)
                try Self.runHere("COMMIT", [], on: writer)
                return result
            } catch {
                _ = try? Self.runHere("ROLLBACK", [], on: writer)
                throw error
            }
        }
    }

    /// Probes the writer, since a database that can be read but not written is not healthy:
    /// answers within two seconds or throws `.unavailable`. A probe stuck behind a writer that
    /// never lets go is abandoned, not awaited (waiting for the writer's lock ignores
    /// cancellation); it only opens and rolls back.
    public func ping() async throws(StoreError) {
        do {
            try await Deadlines.shared.abandoning(.seconds(2), orThrow: { StoreError.unavailable("no answer within 2.0 seconds") }) {
                try await withTaskExecutorPreference(self.writerThread) { () async throws(StoreError) in
                    _ = await self.writerLock.take()
                    defer { self.writerLock.giveBack(0) }
                    // Abandoned while it waited: nothing to probe for anyone now.
                    guard !Task.isCancelled else { return }
                    try Self.runHere("BEGIN IMMEDIATE", [], on: self.writer)
                    try Self.runHere("ROLLBACK", [], on: self.writer)
                }
            }
        } catch let error as StoreError {
            throw .unavailable(error.description)
        } catch {
            throw .unavailable("\(error)")
        }
    }

    /// Keeps `cache` in step with this file until cancelled: this process's own writes drop
    /// their copies as they commit (`SQLStore`), and every
    /// ``SessionCache/Settings/heartbeatInterval`` the writer's `PRAGMA data_version` is read,
    /// which moves only when another connection, so another process (the CLI), has committed:
    /// then every copy goes. Each poll tells the cache that every change committed before it
    /// began has been applied, so copies are served only while polls keep coming (a writer held
    /// by a long transaction delays them, and the cache reads afresh meanwhile).
    public func feedChanges(into cache: SessionCache) async {
        cache.restart()
        var seen: Int64?
        while !Task.isCancelled {
            let began = cache.instant
            _ = await writerLock.take()
            let version = try? await Self.run("PRAGMA data_version", [], on: writer).first?.int("data_version")
            writerLock.giveBack(0)
            if let version {
                if let seen, seen != version { cache.drop(.everything) }
                seen = version
                cache.heard(through: began)
            } else {
                cache.restart()
                seen = nil
            }
            try? await Task.sleep(for: cache.settings.heartbeatInterval)
        }
        cache.restart()
    }

    public func shutdown() async {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        await checkpointer?.stop()
        for connection in readers + [writer] {
            await connection.close()
        }
        await writerThread.shutdown()
    }

    /// Between two batches of housekeeping. While the log holds
    /// ``SQLiteCheckpointer/Settings/housekeepingPages`` the checkpointer has not copied, waits
    /// for it to copy them, at most ``SQLiteCheckpointer/Settings/housekeepingWait``; the next
    /// write then starts the log over. A sweep's batches write faster than the checkpointer copies:
    /// unpaced, the log reached the restart length, and the commits that then checkpointed on the
    /// writer were the sign-ins' as often as the sweep's. Then, while others use the database,
    /// rests as ``HousekeepingPace`` says.
    public func awaitHousekeepingTurn(after batch: Duration) async -> Bool {
        if let signal = checkpointer?.signal, signal.isBehind {
            let started = ContinuousClock.now
            // A cancelled task's sleep returns at once: the wait ends with it, not in a spin.
            while signal.isBehind, !Task.isCancelled, ContinuousClock.now < started + signal.settings.housekeepingWait {
                try? await Task.sleep(for: .milliseconds(2))
            }
            // A wait the task's cancellation ended (a shutdown) did not time out.
            signal.housekeepingWaited(timedOut: signal.isBehind && !Task.isCancelled)
            pace.rested(ContinuousClock.now - started, for: .checkpointer)
        }
        return await pace.turn(after: batch, uses: uses.load(ordering: .relaxed))
    }

    public var housekeepingRests: HousekeepingRests { pace.current.rested }

    public func countCachedRead() { uses.add(1, ordering: .relaxed) }

    /// Statements that only read go to the read-only connections.
    private static func isRead(_ sql: String) -> Bool {
        let head = sql.drop(while: { $0.isWhitespace }).prefix(6).uppercased()
        return head == "SELECT"
    }

    /// Runs `sql` on the calling thread: the writer's, for writes.
    @discardableResult
    private static func runHere(_ sql: String, _ binds: [SQLValue], on connection: SQLiteConnectionHandle) throws(StoreError) -> [SQLRow] {
        do {
            return try connection.runHere(sql, binds)
        } catch {
            throw map(error)
        }
    }

    @discardableResult
    fileprivate static func run(_ sql: String, _ binds: [SQLValue], on connection: SQLiteConnectionHandle) async throws(StoreError) -> [SQLRow] {
        do {
            return try await connection.run(sql, binds)
        } catch {
            throw map(error)
        }
    }

    static func map(_ error: any Error) -> StoreError {
        if error is CancellationError { return .cancelled }
        guard let error = error as? SQLiteConnectionHandle.Failure else { return .database(describe(error)) }
        switch error.code {
        case 2067, 1555:  // SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY
            return .uniqueViolation(error.message)
        default:
            break
        }
        switch error.primary {
        case 5, 6:  // SQLITE_BUSY (with its recovery/snapshot/timeout forms), SQLITE_LOCKED
            return .conflict(error.message)
        case 14, 10, 13, 26, 11, 8:  // CANTOPEN, IOERR, FULL, NOTADB, CORRUPT, READONLY
            return .unavailable(error.message)
        default:
            return .database(error.message)
        }
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? SQLiteConnectionHandle.Failure { return error.message }
        return "\(error)"
    }
}

/// The writer connection while a transaction holds it. Its statements run on the calling
/// thread (`runHere`), the writer's own: the transaction holds SQLite's write lock from its
/// `BEGIN IMMEDIATE`, so they cannot meet `SQLITE_BUSY`, and they write only to SQLite's page
/// cache until `COMMIT`.
private struct SQLiteTransaction: SQLExecutor {
    let connection: SQLiteConnectionHandle
    var dialect: SQLDialect { .sqlite }

    func query(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow] {
        do {
            return try connection.runHere(sql, binds)
        } catch {
            throw SQLiteDatabase.map(error)
        }
    }
}
