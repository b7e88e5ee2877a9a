import Foundation
@testable import GatehouseStore
import Logging
import Testing

/// Issue 61: every write runs on the writer's own thread, from `BEGIN IMMEDIATE` to `COMMIT`.
/// When another process holds SQLite's write lock (a `gatehouse` command writing to the file
/// while the server runs), the transaction waits for it there, instead of failing at once.
@Suite struct SQLiteWriterTests {
    /// Transactions and single writes started from many tasks at once run their statements on one
    /// thread, the writer's, which runs nothing of the callers' before or after: a write never
    /// holds the writer while it waits for a busy executor, and the rest of a request never
    /// holds up the writer's thread.
    @Test func everyWriteRunsOnTheWritersThreadAndNothingElseDoes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-writer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try await SQLiteDatabase.open(path: directory.appendingPathComponent("db.sqlite").path, logger: Logger(label: "test"))
        try await database.query("CREATE TABLE t (x INTEGER)")
        let seen = try await withThrowingTaskGroup(of: (writer: [UInt], callers: [UInt]).self) { group in
            for index in 0..<32 {
                group.addTask {
                    let before = UInt(bitPattern: Int(bitPattern: pthread_self()))
                    let inside = try await database.transaction { tx in
                        let first = UInt(bitPattern: Int(bitPattern: pthread_self()))
                        try await tx.query("INSERT INTO t (x) VALUES (?)", [.integer(Int64(index))])
                        // Suspended inside the transaction (a read on another connection), it comes back here.
                        _ = try await database.query("SELECT COUNT(*) AS n FROM t")
                        return [first, UInt(bitPattern: Int(bitPattern: pthread_self()))]
                    }
                    let between = UInt(bitPattern: Int(bitPattern: pthread_self()))
                    try await database.query("INSERT INTO t (x) VALUES (?)", [.integer(Int64(-index))])
                    let after = UInt(bitPattern: Int(bitPattern: pthread_self()))
                    return (inside, [before, between, after])
                }
            }
            return try await group.reduce(into: (writer: Set<UInt>(), callers: Set<UInt>())) {
                $0.writer.formUnion($1.writer)
                $0.callers.formUnion($1.callers)
            }
        }
        #expect(seen.writer.count == 1)
        #expect(seen.writer.isDisjoint(with: seen.callers))
        #expect(try await database.query("SELECT COUNT(*) AS n FROM t").first?.int("n") == 64)
        await database.shutdown()
    }

    @Test func aTransactionWaitsForAnotherProcesssWriteLock() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-writer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite").path
        let database = try await SQLiteDatabase.open(path: path, logger: Logger(label: "test"))
        try await database.query("CREATE TABLE t (x INTEGER)")
        // Another connection, as another process would hold it: the write lock taken.
        let other = try await SQLiteConnectionHandle.open(path: path)
        _ = try await other.run("BEGIN IMMEDIATE", [])
        _ = try await other.run("INSERT INTO t (x) VALUES (1)", [])
        let released = Task {
            try await Task.sleep(for: .milliseconds(300))
            _ = try await other.run("COMMIT", [])
        }
        let started = ContinuousClock.now
        let count = try await database.transaction { tx in
            try await tx.query("INSERT INTO t (x) VALUES (2)")
            return try await tx.query("SELECT COUNT(*) AS n FROM t").first?.int("n")
        }
        // It waited for the other's commit and saw its row.
        #expect(count == 2)
        #expect(ContinuousClock.now - started >= .milliseconds(250))
        try await released.value
        // Uncontended, the transaction begins at once.
        let alone = try await database.transaction { tx in try await tx.query("SELECT COUNT(*) AS n FROM t").first?.int("n") }
        #expect(alone == 2)
        await other.close()
        await database.shutdown()
    }

    /// A counter's write (`queryUnflushed`: a lockout's or a rate limit's count) commits at
    /// `synchronous = NORMAL`, so WAL mode writes its log without `fsync`; every other write, before
    /// and after it and whether it failed, commits at `FULL`. Each statement records the level it
    /// ran under (`pragma_synchronous`: 1 is NORMAL, 2 FULL).
    @Test func aCountersWriteSkipsTheFlushAndTheNextWriteFlushes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-writer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try await SQLiteDatabase.open(path: directory.appendingPathComponent("db.sqlite").path, logger: Logger(label: "test"))
        try await database.query("CREATE TABLE t (id INTEGER PRIMARY KEY, level INTEGER)")
        let record = "INSERT INTO t (id, level) SELECT ?, synchronous FROM pragma_synchronous RETURNING level"
        func level(_ rows: [SQLRow]) throws -> Int64? { try rows.first?.int("level") }
        #expect(try level(try await database.query(record, [.integer(1)])) == 2)
        #expect(try level(try await database.queryUnflushed(record, [.integer(2)])) == 1)
        #expect(try level(try await database.query(record, [.integer(3)])) == 2)
        // A counter's write that fails (the same id again) leaves the writer flushing too.
        await #expect(throws: StoreError.self) { try await database.queryUnflushed(record, [.integer(2)]) }
        #expect(try level(try await database.transaction { try await $0.query(record, [.integer(4)]) }) == 2)
        // Inside a transaction it is the transaction's write, flushed with its commit.
        #expect(try level(try await database.transaction { try await $0.queryUnflushed(record, [.integer(5)]) }) == 2)
        #expect(try await database.query("SELECT COUNT(*) AS n FROM t").first?.int("n") == 5)
        await database.shutdown()
    }
}
