import Foundation
@testable import GatehouseStore
import Logging
import Testing

/// Issue 65: the write-ahead log is copied into the file by the checkpointer, beside the writer;
/// the writer's commits copy it only once it is past the restart length.
@Suite struct SQLiteCheckpointerTests {
    /// A database in a directory of its own, opened with `settings`, and the file's path.
    static func withDatabase(
        _ settings: SQLiteCheckpointer.Settings, _ body: (SQLiteDatabase, WALSignal, String) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-checkpoint-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite").path
        let database = try await SQLiteCheckpointer.$settings.withValue(settings) {
            try await SQLiteDatabase.open(path: path, logger: Logger(label: "test"))
        }
        do {
            let signal = try #require(database.checkpointer?.signal)
            try await database.query("CREATE TABLE t (x BLOB)")
            try await body(database, signal, path)
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }

    /// One row of 10 KB: a leaf page and two overflow pages, committed on its own.
    private static func write(_ database: SQLiteDatabase) async throws {
        try await database.query("INSERT INTO t (x) VALUES (?)", [.blob(Array(repeating: 7, count: 10_000))])
    }

    private static func fileSize(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
    }

    @Test func theCheckpointerCopiesTheLogAndTheNextWriteStartsItOver() async throws {
        try await Self.withDatabase(.init(pages: 16, restartPages: 1_000_000)) { database, signal, path in
            let before = try Self.fileSize(path)
            for _ in 0..<100 where signal.current.pages < 16 { try await Self.write(database) }
            let deadline = ContinuousClock.now + .seconds(10)
            while signal.current.copies == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(signal.current.copies >= 1)
            #expect(signal.current.writerCheckpoints == 0)
            // The rows' pages are in the file now, not only in the log.
            #expect(try Self.fileSize(path) > before + 8 * 4_096)
            // Copied to its end, the log starts over at the next write.
            let copied = signal.current.pages
            try await Self.write(database)
            #expect(signal.current.pages < copied, "\(signal.current)")
        }
    }

    @Test func theWriterLeavesTheLogToTheCheckpointer() async throws {
        // The checkpointer copies nothing here: the log only grows, past SQLite's own
        // automatic checkpoint's 1,000 pages too, and the file does not.
        try await Self.withDatabase(.init(pages: 16, restartPages: 1_000_000, copies: false)) { database, signal, path in
            let before = try Self.fileSize(path)
            var last = signal.current.pages
            for _ in 0..<1_000 where last < 1_200 {
                try await Self.write(database)
                try #require(signal.current.pages > last)
                last = signal.current.pages
            }
            #expect(last >= 1_200)
            #expect(try Self.fileSize(path) == before)
            #expect(signal.current.copies == 0)
            #expect(signal.current.writerCheckpoints == 0)
        }
    }

    /// A sweep's next batch waits while the log holds more uncopied pages than the housekeeping
    /// length (here the checkpointer copies nothing, so each wait lasts its longest), and not
    /// while it holds fewer.
    @Test(arguments: [(32, true), (1_000_000, false)])
    func housekeepingWaitsWhileTheLogIsLong(_ housekeepingPages: Int, _ waits: Bool) async throws {
        let settings = SQLiteCheckpointer.Settings(
            pages: 16, restartPages: 1_000_000, copies: false, housekeepingPages: housekeepingPages, housekeepingWait: .milliseconds(20))
        try await Self.withDatabase(settings) { database, signal, _ in
            for _ in 0..<30 { try await Self.write(database) }
            try #require(signal.current.pages > 32)
            let store = SQLStore(database: database)
            let swept = try await SQLStore.$sweepBatch.withValue(5) {
                try await store.sweep(Sweep(table: "t", key: "rowid", condition: "x IS NOT NULL", order: "rowid", reach: .ownRow, binds: []))
            }
            #expect(swept == 30)
            // Six full batches (or more, halved when one is slow), each followed by a wait.
            if waits {
                #expect(signal.current.housekeepingWaits >= 6, "\(signal.current)")
                #expect(signal.current.housekeepingWaitsTimedOut == signal.current.housekeepingWaits)
                // Each wait is one of housekeeping's rests, counted for the checkpointer.
                let rests = database.housekeepingRests[.checkpointer]
                #expect(rests.count == signal.current.housekeepingWaits, "\(rests)")
                #expect(rests.time >= .milliseconds(20) * rests.count, "\(rests)")
            } else {
                #expect(signal.current.housekeepingWaits == 0, "\(signal.current)")
                #expect(database.housekeepingRests[.checkpointer] == .init())
            }
        }
    }

    /// A wait for the checkpointer that the task's cancellation ends (a shutdown) ends at once, is
    /// not counted as timed out, and counts as a rest for the time it lasted.
    @Test func aWaitCutShortIsNeitherATimeOutNorItsWholeLength() async throws {
        let settings = SQLiteCheckpointer.Settings(
            pages: 16, restartPages: 1_000_000, copies: false, housekeepingPages: 32, housekeepingWait: .seconds(60))
        try await Self.withDatabase(settings) { database, signal, _ in
            for _ in 0..<30 { try await Self.write(database) }
            try #require(signal.current.pages > 32)
            let started = ContinuousClock.now
            let waiting = Task { await database.awaitHousekeepingTurn(after: .zero) }
            try await Task.sleep(for: .milliseconds(50))
            waiting.cancel()
            _ = await waiting.value
            #expect(ContinuousClock.now - started < .seconds(10))
            #expect(signal.current.housekeepingWaits == 1 && signal.current.housekeepingWaitsTimedOut == 0, "\(signal.current)")
            let rests = database.housekeepingRests[.checkpointer]
            #expect(rests.count == 1 && rests.time < .seconds(10), "\(rests)")
        }
    }

    /// With the checkpointer copying, a sweep's wait ends when the log is copied, not at its
    /// longest, though no other write comes to start the log over: the sweep's next batch does.
    @Test func aSweepWaitsForTheCopyNotForAnotherWrite() async throws {
        // Asked after every commit, and every page it has not copied makes the sweep wait.
        let settings = SQLiteCheckpointer.Settings(pages: 1, restartPages: 1_000_000, housekeepingPages: 1, housekeepingWait: .seconds(5))
        try await Self.withDatabase(settings) { database, signal, _ in
            for _ in 0..<30 { try await Self.write(database) }
            let store = SQLStore(database: database)
            let swept = try await SQLStore.$sweepBatch.withValue(5) {
                try await store.sweep(Sweep(table: "t", key: "rowid", condition: "x IS NOT NULL", order: "rowid", reach: .ownRow, binds: []))
            }
            #expect(swept == 30)
            #expect(signal.current.housekeepingWaits >= 1, "\(signal.current)")
            #expect(signal.current.housekeepingWaitsTimedOut == 0, "\(signal.current)")
        }
    }

    @Test func pastTheRestartLengthTheWriterCheckpointsItself() async throws {
        try await Self.withDatabase(.init(pages: 16, restartPages: 64, copies: false, housekeepingPages: 32)) { database, signal, path in
            let before = try Self.fileSize(path)
            var longest = 0
            for _ in 0..<60 {
                let checkpoints = signal.current.writerCheckpoints
                try await Self.write(database)
                longest = max(longest, signal.current.pages)
                // The writer's copy counts for housekeeping as the checkpointer's does.
                if signal.current.writerCheckpoints > checkpoints { #expect(!signal.isBehind, "\(signal.current)") }
            }
            // 60 rows of three pages and more: the log went past 64 pages and started over.
            #expect(signal.current.writerCheckpoints >= 1)
            #expect(longest < 64 + 8, "\(longest)")
            #expect(try Self.fileSize(path) > before + 32 * 4_096)
            #expect(signal.current.copies == 0)
        }
    }
}
