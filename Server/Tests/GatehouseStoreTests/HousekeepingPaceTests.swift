import Foundation
import GatehouseCore
@testable import GatehouseStore
import GatehouseTestSupport
import Synchronization
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
        #expect(pace.next(after: batch, uses: 15) == .init(busy: true, rest: .milliseconds(40), for: .requests))
        #expect(pace.next(after: .milliseconds(100), uses: 30) == .init(busy: true, rest: .milliseconds(250), for: .requests))
        #expect(pace.next(after: batch, uses: 31) == .init(busy: false, rest: .zero))
        // Planned, not taken: a rest is counted when `turn` has taken it.
        #expect(pace.current.rested == .init())
        // Others used it, and no rest is asked for: busy all the same (batches stay small).
        let unrested = HousekeepingPace(settings: .init(restPerBatch: 0))
        #expect(unrested.next(after: batch, uses: 1) == .init(busy: false, rest: .zero))
        #expect(unrested.next(after: batch, uses: 10) == .init(busy: true, rest: .zero))
    }

    /// A rest is counted once taken, for the time it lasted: one the task's cancellation cuts short
    /// (a shutdown) counts its few milliseconds, not the 60 s it was to last; one taken whole
    /// counts its length.
    @Test func aRestCutShortCountsTheTimeItLasted() async throws {
        let pace = HousekeepingPace(settings: .init(restPerBatch: 1, longestRest: .seconds(60), ownUses: 0))
        #expect(await pace.turn(after: .milliseconds(5), uses: 1) == false)
        #expect(await pace.turn(after: .milliseconds(5), uses: 2) == true)
        #expect(pace.current.rested[.requests] == .init(count: 1, time: .milliseconds(5)))
        let resting = Task { await pace.turn(after: .seconds(60), uses: 3) }
        try await Task.sleep(for: .milliseconds(50))
        resting.cancel()
        #expect(await resting.value == true)
        let rested = pace.current.rested[.requests]
        #expect(rested.count == 2 && rested.time < .seconds(10), "\(rested)")
    }

    /// The log's rest: the log written since the last turn's reading takes no less than the
    /// budget allows, busy or not. The mark keeps that reading and the time the turn's rest
    /// ends, so the log written during a rest (autovacuum's, others') counts at the next turn,
    /// over its batch's time alone; a turn long after the mark begins a new one. A rest is counted
    /// for what set its length.
    @Test func aTurnKeepsTheLogSinceTheLastReadingToTheBudget() {
        let pace = HousekeepingPace(settings: .init(restPerBatch: 4, longestRest: .milliseconds(250), ownUses: 2, longestLogRest: .seconds(10)))
        let start = ContinuousClock.now
        let budget = 1_000.0
        func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }
        func log(_ position: Int64) -> HousekeepingPace.LogReading { .init(position: position, budget: budget) }
        // The first turn only marks.
        #expect(pace.next(after: .milliseconds(10), uses: 2, log: log(5_000), now: at(0)) == .init(busy: false, rest: .zero))
        // 500 bytes in 100 ms: half a second at 1,000 a second, so 400 ms more.
        #expect(pace.next(after: .milliseconds(100), uses: 4, log: log(5_500), now: at(100)) == .init(busy: false, rest: .milliseconds(400), for: .log))
        // Marked at 500 ms: 2,000 bytes more by 600 ms is two seconds' worth.
        #expect(pace.next(after: .milliseconds(100), uses: 6, log: log(7_500), now: at(600)) == .init(busy: false, rest: .milliseconds(1_900), for: .log))
        // Busy, the longer rest stands: 40 ms for the requests, 150 ms for 250 bytes in 100 ms.
        #expect(pace.next(after: .milliseconds(10), uses: 20, log: log(7_750), now: at(2_600)) == .init(busy: true, rest: .milliseconds(150), for: .log))
        // Within the budget: no rest.
        #expect(pace.next(after: .milliseconds(10), uses: 22, log: log(7_800), now: at(2_850)) == .init(busy: false, rest: .zero))
        // At most the longest log rest, however much was written.
        #expect(pace.next(after: .milliseconds(10), uses: 24, log: log(107_800), now: at(2_860)) == .init(busy: false, rest: .seconds(10), for: .log))
        // Past the longest rest since the mark (a sweep begun later): a new mark, no rest.
        #expect(pace.next(after: .milliseconds(10), uses: 26, log: log(9_000_000), now: at(60_000)) == .init(busy: false, rest: .zero))
        #expect(pace.current.logCounted == 500 + 2_000 + 250 + 50 + 100_000)
        // Planned, not taken: `turn` counts each rest once taken (the busy turn's 40 ms for the
        // requests gave way to the log's 150, as its turn says).
        #expect(pace.current.rested == .init())
        // Without a reading (SQLite) the log plays no part.
        let unread = HousekeepingPace(settings: .init())
        #expect(unread.next(after: .milliseconds(10), uses: 1, now: at(0)) == .init(busy: false, rest: .zero))
        #expect(unread.next(after: .milliseconds(10), uses: 2, now: at(10)) == .init(busy: false, rest: .zero))
        #expect(unread.current.logMark == nil)
    }

    /// PostgreSQL's defaults (1 GB, 5 min, 0.9): the rate at which the log since a checkpoint
    /// reaches `max_wal_size / 1.9` as the five minutes end.
    @Test func theLogsBudgetIsTheRateAtWhichCheckpointsComeByTheClock() {
        let budget = HousekeepingPace.logBudget(maxWALSize: 1 << 30, checkpointTimeout: .seconds(300), completionTarget: 0.9)
        #expect(abs(budget - 1_073_741_824 / 1.9 / 300) < 0.001)
        #expect(Int(budget) == 1_883_757)
        #expect(HousekeepingPace.logBudget(maxWALSize: 4 << 30, checkpointTimeout: .milliseconds(30_000), completionTarget: 0.5) == Double(4 << 30) / 1.5 / 30)
        #expect(HousekeepingPace.logBudget(maxWALSize: 1 << 30, checkpointTimeout: .zero, completionTarget: 0.9) == 0)
    }

    /// The reading of a real cluster: its position moves with what is written, and its budget is
    /// the one its own settings give (read here through `SHOW`).
    @Test func postgresReadsItsLogsPositionAndBudgetFromTheCluster() async throws {
        try await TestDatabase.with(.postgres) { database, _ in
            let postgres = try #require(database as? PostgresDatabase)
            let before = try await postgres.logReading()
            try await database.query("CREATE TABLE t (id BIGSERIAL PRIMARY KEY, x BYTEA)")
            // 100 rows of 1,024 random bytes (nothing to compress): over 100 KB of log.
            try await database.query(
                "INSERT INTO t (x) SELECT decode((SELECT string_agg(md5(random()::text || i || j), '') FROM generate_series(1, 64) j), 'hex') FROM generate_series(1, 100) i"
            )
            let after = try await postgres.logReading()
            #expect(after.position - before.position > 100_000)
            let settings = try await database.query(
                """
                SELECT pg_size_bytes(current_setting('max_wal_size')) AS size, setting AS seconds,
                (SELECT setting FROM pg_settings WHERE name = 'checkpoint_completion_target') AS target
                FROM pg_settings WHERE name = 'checkpoint_timeout'
                """)
            let row = try #require(settings.first)
            let expected = Double(try row.int("size")) / (1 + (Double(try row.string("target")) ?? -1)) / Double(try row.int("seconds"))
            #expect(after.budget == expected, "\(after.budget) against \(expected)")
            #expect(after.budget > 0)
        }
    }

    /// A sweep on PostgreSQL with a budget of 200 bytes of log a second, alone (no rest for the
    /// requests): each batch deletes five rows, some 300 bytes of log, so it rests after every
    /// batch but the first (which only marks), each time the longest log rest of the test (1 s),
    /// and the sweep takes at least those rests. The log counted is the cluster's own: no more
    /// than its position moved. (The other tests write to the same cluster meanwhile, so the
    /// count is a bound, not a figure; `aTurnKeepsTheLogSinceTheLastReadingToTheBudget` checks
    /// the arithmetic.)
    @Test func aSweepOnPostgresKeepsTheLogItWritesToTheBudget() async throws {
        let settings = HousekeepingPace.Settings(restPerBatch: 0, longestLogRest: .seconds(1), logBudget: 200)
        try await HousekeepingPace.$settings.withValue(settings) {
            try await TestDatabase.with(.postgres) { database, _ in
                let postgres = try #require(database as? PostgresDatabase)
                try await database.query("CREATE TABLE t (id BIGSERIAL PRIMARY KEY, x BYTEA)")
                for _ in 0..<30 { try await database.query("INSERT INTO t (x) VALUES (?)", [.blob([1])]) }
                let store = SQLStore(database: database)
                let before = try await postgres.logReading()
                let started = ContinuousClock.now
                let swept = try await SweepTable.sweepFiveAtATime(store)
                let took = ContinuousClock.now - started
                let after = try await postgres.logReading()
                let pace = postgres.pace.current
                #expect(swept == 30)
                #expect(pace.rested[.requests] == .init())
                #expect(pace.rested[.log] == .init(count: 5, time: .seconds(5)), "\(pace)")
                #expect(took >= .seconds(5), "\(took)")
                #expect(pace.logCounted >= 5 * 200 && pace.logCounted <= after.position - before.position, "\(pace)")
            }
        }
    }

    /// Thirty rows swept five at a time, with `reads` statements of others' run at each of the
    /// sweep's turns: alone, or beside one read (two uses with the batch's own), it never rests;
    /// beside three it rests after every batch but the first (the first turn has nothing to
    /// compare with), here forty batches' lengths each, and the sweep takes at least that long.
    /// On both databases: PostgreSQL runs the batches on the cores the requests need too. The
    /// log's budget is out of reach here: a rest is counted for what set its length, and the
    /// suite's other tests write to the same cluster (a longer rest for the log would stand).
    @Test(arguments: Backend.available, [(0, 0), (1, 0), (3, 5)])
    func aSweepRestsBesideRequestsAndNotAlone(_ backend: Backend, _ counts: (reads: Int, rests: Int)) async throws {
        let settings = HousekeepingPace.Settings(restPerBatch: 40, longestRest: .seconds(1), logBudget: 1e15)
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

    /// The reads this node's session cache answers instead of the database.
    enum CachedRead: CaseIterable, Sendable {
        case sessionAndUser
        case accountFact
    }

    /// Reads the session cache answers in the database's place are uses of it all the same: a
    /// sweep rests beside the requests the cache serves (`/v1/me`, `check`) as beside any. Before,
    /// at 1M accounts on PostgreSQL, a sweep beside 25,600 `/v1/me` a second saw an idle database,
    /// grew its batches to 400 rows, and one took 603 ms (BENCHMARKS.md, issue 65 step 37). Each
    /// kind of read the cache answers, on both databases: three between each two turns make a
    /// rest at each turn but the first, five for thirty rows at five a batch.
    @Test(arguments: Backend.available, CachedRead.allCases)
    func aSweepRestsBesideReadsTheSessionCacheAnswers(_ backend: Backend, _ read: CachedRead) async throws {
        let settings = HousekeepingPace.Settings(restPerBatch: 40, longestRest: .seconds(1), logBudget: 1e15)
        try await HousekeepingPace.$settings.withValue(settings) {
            try await TestDatabase.with(backend) { database, _ in
                try await SweepTable.thirtyRows(in: database)
                let cache = SessionCache(settings: .init(timeToLive: .seconds(3_600), stalenessBound: .seconds(3_600)))
                cache.apply(cache.heartbeat())
                let user = User(id: .random(), createdAt: Date())
                let session = Session(userID: user.id, provider: "email", createdAt: Date())
                cache.keep(session, user, ticket: cache.ticket())
                cache.keepFact(of: user.id, ticket: cache.ticket()) { $0.identities = [] }
                let requests = SQLStore(database: database, sessionCache: cache)
                let answered = Mutex(0)
                let store = SQLStore(
                    database: SweepTests.Noting(database) { _ in
                        for _ in 0..<3 {
                            let found: Bool
                            switch read {
                            case .sessionAndUser: found = requests.cachedSessionAndUser(id: session.id) != nil
                            case .accountFact: found = (try? await requests.identities(of: user.id))?.isEmpty == true
                            }
                            if found { answered.withLock { $0 += 1 } }
                        }
                    })
                let before = database.housekeepingRests
                let swept = try await SweepTable.sweepFiveAtATime(store)
                #expect(swept == 30)
                // Six turns (a batch of five rows before each), three reads the cache answered at each.
                #expect(answered.withLock { $0 } == 18)
                #expect(database.housekeepingRests.since(before)[.requests].count == 5, "\(database.housekeepingRests)")
            }
        }
    }

    /// A sweep whose task is cancelled (the server shuts down) stops at its next turn: the
    /// batches before it stay committed, the rest is left for the next sweep, and it throws
    /// `.cancelled`. On SQLite a cancelled task's rests end at once, and before this the sweep went
    /// on to its end at full speed; on PostgreSQL its next lease was refused with an error that
    /// read as a failure (`database error: CancellationError()`). Here the task cancels itself at
    /// its second turn, after two batches of five rows.
    @Test(arguments: Backend.available)
    func aCancelledSweepStopsAtItsNextTurn(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { database, _ in
            try await SweepTable.thirtyRows(in: database)
            let turns = Mutex(0)
            let store = SQLStore(
                database: SweepTests.Noting(database) { _ in
                    let turn = turns.withLock { turns in
                        turns += 1
                        return turns
                    }
                    if turn == 2 { withUnsafeCurrentTask { $0?.cancel() } }
                })
            let sweeping = Task {
                try await SweepTable.sweepFiveAtATime(store)
            }
            await #expect(throws: StoreError.cancelled) { try await sweeping.value }
            #expect(turns.withLock { $0 } == 2)
            let left = try await database.query("SELECT COUNT(*) AS n, MIN(id) AS lowest FROM t")
            #expect(try left.first?.int("n") == 20)
            #expect(try left.first?.int("lowest") == 11)
        }
    }

    /// A statement abandoned by its cancelled task reads as `.cancelled` on both databases, not as
    /// a database's error: the retention sweep's line says it stopped, not that it failed.
    @Test func aCancelledTasksErrorIsCancelledOnBothDatabases() {
        #expect(PostgresDatabase.map(CancellationError()) == .cancelled)
        #expect(SQLiteDatabase.map(CancellationError()) == .cancelled)
    }

    private static func sweep(_ database: any SQLDatabase, pace: HousekeepingPace, key: String, besides reads: Int, rests: Int) async throws {
        for _ in 0..<30 { try await database.query("INSERT INTO t (x) VALUES (?)", [.blob([1])]) }
        let store = SQLStore(
            database: SweepTests.Noting(database) { inner in
                for _ in 0..<reads { _ = try? await inner.query("SELECT count(*) AS n FROM t", []) }
            })
        // Batches held at five whatever they take.
        let started = ContinuousClock.now
        let swept = try await SweepTable.sweepFiveAtATime(store, key: key)
        #expect(swept == 30)
        #expect(pace.current.rested[.requests].count == rests, "\(pace.current)")
        #expect(ContinuousClock.now - started >= pace.current.rested[.requests].time, "\(pace.current)")
    }
}
