import Foundation
@testable import GatehouseStore
import GatehouseTestSupport
import Testing

/// Issue 65: housekeeping rests between its batches while requests use the database, and sweeps
/// a backlog at full speed when nothing else does, on SQLite and on PostgreSQL.
@Suite struct HousekeepingPaceTests {
    @Test func aTurnRestsOnlyWhenOthersUsedTheDatabaseSinceTheLast() {
        let pace = HousekeepingPace(settings: .init(restPerBatch: 4, longestRest: .milliseconds(250), ownUses: 2))
        let batch = Duration.milliseconds(10)
        // The first turn has nothing to compare with.
        #expect(pace.next(after: batch, uses: 10) == .init(busy: false, rest: .zero))
        // Two uses are the batch's own.
        #expect(pace.next(after: batch, uses: 12) == .init(busy: false, rest: .zero))
        #expect(pace.next(after: batch, uses: 15) == .init(busy: true, rest: .milliseconds(40)))
        #expect(pace.next(after: .milliseconds(100), uses: 30) == .init(busy: true, rest: .milliseconds(250)))
        #expect(pace.next(after: batch, uses: 31) == .init(busy: false, rest: .zero))
        #expect(pace.current.rests == 2)
        #expect(pace.current.rested == .milliseconds(290))
        // Others used it, and no rest is asked for: busy all the same (batches stay small).
        let unrested = HousekeepingPace(settings: .init(restPerBatch: 0))
        #expect(unrested.next(after: batch, uses: 1) == .init(busy: false, rest: .zero))
        #expect(unrested.next(after: batch, uses: 10) == .init(busy: true, rest: .zero))
    }

    /// Thirty rows swept five at a time, with `reads` statements of others' run at each of the
    /// sweep's turns: alone, or beside one read (two uses with the batch's own), it never rests;
    /// beside three it rests after every batch but the first (the first turn has nothing to
    /// compare with), here forty batches' lengths each, and the sweep takes at least that long.
    /// On both databases: PostgreSQL runs the batches on the cores the requests need too.
    @Test(arguments: Backend.available, [(0, 0), (1, 0), (3, 5)])
    func aSweepRestsBesideRequestsAndNotAlone(_ backend: Backend, _ counts: (reads: Int, rests: Int)) async throws {
        let settings = HousekeepingPace.Settings(restPerBatch: 40, longestRest: .seconds(1))
        try await HousekeepingPace.$settings.withValue(settings) {
            switch backend {
            case .sqlite:
                try await SQLiteCheckpointerTests.withDatabase(SQLiteCheckpointer.Settings()) { database, _, _ in
                    try await Self.sweep(database, pace: database.pace, key: "rowid", besides: counts.reads, rests: counts.rests)
                }
            case .postgres:
                try await TestDatabase.with(.postgres) { database, _ in
                    let postgres = try #require(database as? PostgresDatabase)
                    try await database.query("CREATE TABLE t (id BIGSERIAL PRIMARY KEY, x BYTEA)")
                    try await Self.sweep(database, pace: postgres.pace, key: "id", besides: counts.reads, rests: counts.rests)
                }
            }
        }
    }

    private static func sweep(_ database: any SQLDatabase, pace: HousekeepingPace, key: String, besides reads: Int, rests: Int) async throws {
        for _ in 0..<30 { try await database.query("INSERT INTO t (x) VALUES (?)", [.blob([1])]) }
        let store = SQLStore(
            database: SweepTests.Noting(database) { inner in
                for _ in 0..<reads { _ = try? await inner.query("SELECT count(*) AS n FROM t", []) }
            })
        // Batches held at five whatever they take.
        let started = ContinuousClock.now
        let swept = try await SQLStore.$sweepBatch.withValue(5) {
            try await SQLStore.$sweepBatchTime.withValue(.seconds(3_600)) {
                try await store.sweep(Sweep(table: "t", key: key, condition: "x IS NOT NULL", order: key, reach: .ownRow, binds: []))
            }
        }
        #expect(swept == 30)
        #expect(pace.current.rests == rests, "\(pace.current)")
        #expect(ContinuousClock.now - started >= pace.current.rested, "\(pace.current)")
    }
}
