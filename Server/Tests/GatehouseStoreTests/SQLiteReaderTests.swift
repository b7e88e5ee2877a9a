import Foundation
@testable import GatehouseStore
import Logging
import NIOPosix
import Testing

/// A long read holds one read-only connection and nothing else: short reads take the other one,
/// and the writer commits, while it runs. Reads were once dealt to the connections in turn and
/// waited for their own on a thread of NIO's blocking pool (one per core), so half the short
/// reads waited for the long one, and the threads they held stalled the writer's commit too.
@Suite struct SQLiteReaderTests {
    /// A read that counts to `n` in SQLite's own loop.
    static func counting(_ n: Int) -> String {
        "SELECT COUNT(*) AS n FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < \(n)) SELECT x FROM c)"
    }

    @Test func aLongReadLeavesTheOtherReaderAndTheWriterFree() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-readers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Two threads of its own, as a two-core machine's shared pool has: the other tests' SQLite
        // work, run in parallel with this one, does not queue with its statements.
        let pool = NIOThreadPool(numberOfThreads: 2)
        pool.start()
        let database = try await SQLiteDatabase.open(
            path: directory.appendingPathComponent("db.sqlite").path, readerCount: 2, logger: Logger(label: "test"), pool: pool)
        try await database.query("CREATE TABLE t (x INTEGER)")
        // A long read of about three seconds on this machine, whatever its speed.
        let probe = ContinuousClock.now
        #expect(try await database.query(Self.counting(1_000_000)).first?.int("n") == 1_000_000)
        let perMillion = ContinuousClock.now - probe
        let millions = max(2, Int((Duration.seconds(3) / perMillion).rounded(.up)))
        let longStarted = ContinuousClock.now
        let long = Task { (try await database.query(Self.counting(millions * 1_000_000)).first?.int("n"), ContinuousClock.now) }
        // The long read has a connection by now.
        try await Task.sleep(for: .milliseconds(200))
        let shortsStarted = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<16 {
                group.addTask { _ = try await database.query("SELECT COUNT(*) AS n FROM t") }
            }
            try await group.waitForAll()
        }
        let shortsTook = ContinuousClock.now - shortsStarted
        let writeStarted = ContinuousClock.now
        _ = try await database.transaction { tx in try await tx.query("INSERT INTO t (x) VALUES (1)") }
        let writeTook = ContinuousClock.now - writeStarted
        let (counted, longEnded) = try await long.value
        let longTook = longEnded - longStarted
        #expect(counted == Int64(millions * 1_000_000))
        // Milliseconds each, against the long read's seconds; waiting for it took nearly all of them.
        #expect(shortsTook < longTook / 2, "the short reads took \(shortsTook), the long one \(longTook)")
        #expect(writeTook < longTook / 2, "the write took \(writeTook), the long read \(longTook)")
        #expect(try await database.query("SELECT COUNT(*) AS n FROM t").first?.int("n") == 1)
        await database.shutdown()
        try await pool.shutdownGracefully()
    }
}
