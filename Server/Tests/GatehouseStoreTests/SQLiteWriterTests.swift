import Foundation
@testable import GatehouseStore
import Logging
import Testing

/// Issue 61: a transaction's statements run on the calling thread, and its `BEGIN IMMEDIATE`
/// too when no other process holds SQLite's write lock. When one does (a `gatehouse` command
/// writing to the file while the server runs), the transaction begins on the pool and waits
/// for the lock as before, instead of failing at once.
@Suite struct SQLiteWriterTests {
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
}
