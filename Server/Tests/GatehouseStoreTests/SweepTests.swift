import Foundation
import GatehouseCore
@testable import GatehouseStore
import GatehouseTestSupport
import Synchronization
import Testing

/// Issue 65: every sweep of expired or aged rows goes a bounded batch at a time, each batch its
/// own statement (its own short transaction), until none is left, on both databases.
@Suite struct SweepTests {
    /// The real database with its statements noted (`NotingDatabase`, in the test support).
    typealias Noting = NotingDatabase

    static let day: TimeInterval = 86_400
    static let now = Date(unixSeconds: 1_800_000_000)

    /// The 30-day purge every sweep test here runs: batches of at most `most` rows, the careful
    /// ones (the first, and each while others use the database) `careful` rows, each given `time`.
    static func purge(_ store: SQLStore, most: Int = 40, careful: Int = 40, time: Duration = .seconds(3_600)) async throws -> PurgeCounts {
        let (day, now) = (Self.day, Self.now)
        return try await SQLStore.$sweepBatch.withValue(most) {
            try await SQLStore.$sweepCarefulBatch.withValue(careful) {
                try await SQLStore.$sweepBatchTime.withValue(time) {
                    try await store.purge(cutoff: now - 30 * day, idleBefore: now - 30 * day, windowsBefore: now - 2 * day, notificationsBefore: now - 30 * day)
                }
            }
        }
    }

    /// The migrated database seen through `Noting`, and an account with an audit row at each of
    /// `ages` days before `now`.
    static func auditTrail(
        _ database: any SQLDatabase, ages: [Int], beforeTurn: @escaping @Sendable (any SQLDatabase) async -> Void = { _ in }
    ) async throws -> (Noting, SQLStore, User) {
        try await Migrator(database: database).migrate(now: 1_800_000_000)
        let noting = Noting(database, beforeTurn: beforeTurn)
        let store = SQLStore(database: noting)
        let owner = User(id: .random(), createdAt: now - 400 * day)
        try await store.insertUser(owner)
        for age in ages {
            try await store.insertAudit(AuditEvent(createdAt: now - Double(age) * day, event: .login, outcome: "success", userID: owner.id))
        }
        return (noting, store, owner)
    }

    @Test(arguments: Backend.available)
    func theRetentionPurgeGoesABatchAtATimeUntilNothingIsLeft(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { database, _ in
            let (day, now) = (Self.day, Self.now)
            // A year of audit rows, one a day, and the last month's that stay.
            let (noting, store, owner) = try await Self.auditTrail(database, ages: Array(31...365) + Array(1...5))
            // Throttle windows (a two-column key): 9 old, 1 current.
            for hour in 0..<9 { _ = try await store.hitRateLimit(key: "login:10.0.0.\(hour)", windowStart: (now - 3 * day).unixSeconds + Int64(hour)) }
            _ = try await store.hitRateLimit(key: "login:10.0.0.1", windowStart: (now - 60).unixSeconds)
            // Old sessions still in use: their addresses are cleared, the sessions kept.
            for index in 0..<6 {
                let session = Session(userID: owner.id, provider: "email", createdAt: now - 45 * day, userAgent: "UA\(index)", ipAddress: "10.1.0.\(index)")
                try await store.insertSession(session)
                try await store.touchSession(session.id, at: now - day)
            }

            // Batches held at their size whatever they take (the test below walks the sizing).
            let counts = try await Self.purge(store)
            #expect(counts.auditRows == 335)
            #expect(counts.rateLimitWindows == 9)
            #expect(counts.sessionsCleared == 6)
            // 335 rows in batches of 40: eight full ones and the 15 left, never more in one statement.
            #expect(noting.sweeps(of: "audit_log") == [40, 40, 40, 40, 40, 40, 40, 40, 15])
            #expect(noting.sweeps(of: "rate_limits") == [9])
            #expect(try await store.auditEvents(userID: owner.id, before: nil, limit: 50).count == 5)
            #expect(try await store.rateLimitCount(key: "login:10.0.0.1", windowStart: (now - 60).unixSeconds) == 1)
            #expect(try await store.sessions(of: owner.id).allSatisfy { $0.ipAddress == nil && $0.userAgent == nil })

            // A batch that comes back exactly full is followed by one that finds nothing.
            for age in 31..<71 {
                try await store.insertAudit(AuditEvent(createdAt: now - Double(age) * day, event: .login, outcome: "success", userID: owner.id))
            }
            noting.noted.withLock { $0 = [] }
            let again = try await Self.purge(store)
            #expect(again.auditRows == 40)
            #expect(noting.sweeps(of: "audit_log") == [40, 0])
        }
    }

    /// A sweep's first batch is small, whatever the most a batch may take: nothing is known yet of
    /// what a row of the table costs. The batches after it double while each is well within its time.
    @Test(arguments: Backend.available)
    func aSweepStartsWithASmallBatch(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { database, _ in
            let (noting, store, _) = try await Self.auditTrail(database, ages: Array(31...130))
            let counts = try await Self.purge(store, careful: 5)
            #expect(counts.auditRows == 100)
            // 5, 10 and 20, then the most (40) take 75 rows; the 25 left go in the last batch.
            #expect(noting.sweeps(of: "audit_log") == [5, 10, 20, 40, 25])
        }
    }

    /// How far a sweep's rows reach (`Sweep.Reach`) bounds its batches: rows that share their
    /// pages grow to the most a batch may take, rows that reach pages anywhere never past the
    /// careful size, however quick each batch was. A hundred rows each time.
    @Test(arguments: Backend.available)
    func aSweepWhoseRowsReachPagesAnywhereNeverGrowsPastTheCarefulSize(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { database, _ in
            let (day, now) = (Self.day, Self.now)
            let (noting, store, owner) = try await Self.auditTrail(database, ages: [])
            for reach in [Sweep.Reach.ownRow, .scattered] {
                for age in 31...130 {
                    try await store.insertAudit(AuditEvent(createdAt: now - Double(age) * day, event: .login, outcome: "success", userID: owner.id))
                }
                noting.noted.withLock { $0 = [] }
                let sweep = Sweep(
                    table: "audit_log", key: "seq", condition: "created_at < ?", order: "created_at", reach: reach,
                    binds: [.integer((now - 30 * day).unixSeconds)])
                let swept = try await SQLStore.$sweepBatch.withValue(40) {
                    try await SQLStore.$sweepCarefulBatch.withValue(5) {
                        try await SQLStore.$sweepBatchTime.withValue(.seconds(3_600)) { try await store.sweep(sweep) }
                    }
                }
                #expect(swept == 100)
                let expected: [Int] =
                    switch reach {
                    // 5, 10 and 20, then the most (40) take 75 rows; the 25 left go in the last batch.
                    case .ownRow: [5, 10, 20, 40, 25]
                    // Twenty of 5, and a last batch that finds none.
                    case .scattered: Array(repeating: 5, count: 20) + [0]
                    }
                #expect(noting.sweeps(of: "audit_log") == expected, "\(reach)")
            }
        }
    }

    /// The retention purge's sweeps of `sessions` reach pages anywhere (an ended session deletes
    /// its refresh tokens; a cleared address is a new entry in every index): their batches stay
    /// careful while the audit rows' grow.
    @Test(arguments: Backend.available)
    func theRetentionPurgesSessionBatchesStayCareful(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { database, _ in
            let (day, now) = (Self.day, Self.now)
            let (noting, store, owner) = try await Self.auditTrail(database, ages: Array(31...130))
            for index in 0..<12 {
                // Ended: idle since it began, 45 days ago.
                try await store.insertSession(Session(userID: owner.id, provider: "email", createdAt: now - 45 * day))
                // In use, begun as long ago: its address is cleared, the session kept.
                let live = Session(userID: owner.id, provider: "email", createdAt: now - 45 * day, userAgent: "UA", ipAddress: "10.2.0.\(index)")
                try await store.insertSession(live)
                try await store.touchSession(live.id, at: now - day)
            }
            noting.noted.withLock { $0 = [] }
            let counts = try await Self.purge(store, careful: 5)
            #expect(counts.auditRows == 100)
            #expect(counts.sessions == 12)
            #expect(counts.sessionsCleared == 12)
            #expect(noting.sweeps(of: "audit_log") == [5, 10, 20, 40, 25])
            // The ended sessions' deletes, then the addresses' clearing: 5, 5 and 2 each, every
            // batch asking for 5 at most (its last value).
            #expect(noting.sweeps(of: "sessions") == [5, 5, 2, 5, 5, 2])
            #expect(noting.batches(of: "sessions").map(\.binds.last) == Array(repeating: .integer(5), count: 6))
            #expect(try await store.sessions(of: owner.id).count == 12)
        }
    }

    /// While others use the database (their statements found at each turn), a sweep's batches
    /// stay at the careful size, however quick each was; alone they grow. Sixty rows.
    @Test(arguments: Backend.available, [(0, [5, 10, 20, 25]), (3, Array(repeating: 5, count: 12) + [0])])
    func aSweepBesideOthersKeepsItsBatchesSmall(_ backend: Backend, _ expected: (reads: Int, batches: [Int])) async throws {
        try await HousekeepingPace.$settings.withValue(.init(restPerBatch: 0)) {
            try await TestDatabase.with(backend) { database, _ in
                let (noting, store, _) = try await Self.auditTrail(database, ages: Array(31...90)) { inner in
                    for _ in 0..<expected.reads { _ = try? await inner.query("SELECT 1 AS n", []) }
                }
                // A turn first, so that the sweep's first counts only what came after it.
                _ = await database.awaitHousekeepingTurn(after: .zero)
                let counts = try await Self.purge(store, careful: 5)
                #expect(counts.auditRows == 60)
                #expect(noting.sweeps(of: "audit_log") == expected.batches)
            }
        }
    }

    /// A batch that holds the writer past `sweepBatchTime` is followed by one half its size, down
    /// to a row at a time: with no time allowed, every batch is over it.
    @Test(arguments: Backend.available)
    func aBatchOverItsTimeHalvesTheNext(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { database, _ in
            let (noting, store, _) = try await Self.auditTrail(database, ages: Array(31...130))
            let counts = try await Self.purge(store, time: .zero)
            #expect(counts.auditRows == 100)
            // 40, 20, 10, 5 and 2 take 77 rows; the 23 left go one at a time, and a last batch finds none.
            #expect(noting.sweeps(of: "audit_log") == [40, 20, 10, 5, 2] + Array(repeating: 1, count: 23) + [0])
        }
    }

    /// Each batch takes the oldest rows left, in the order of the index on their age, not the
    /// first ones the table gives: the rows here are written newest first, so a batch that took
    /// rows in the table's order (a scan from its start until the batch is full, which PostgreSQL
    /// may plan for a condition most rows match) would take the newest of the old ones. And each
    /// batch after the first resumes at the newest age the one before took.
    @Test(arguments: Backend.available)
    func eachBatchTakesTheOldestRowsLeft(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { database, _ in
            let (day, now) = (Self.day, Self.now)
            // The oldest audit row left at each turn between two batches.
            let oldestLeft = Mutex<[Int64]>([])
            let (noting, store, _) = try await Self.auditTrail(database, ages: Array(1...130)) { inner in
                let oldest = try? await inner.query("SELECT MIN(created_at) AS oldest FROM audit_log", []).first?.int("oldest")
                oldestLeft.withLock { $0.append(oldest ?? 0) }
            }
            let counts = try await Self.purge(store)
            #expect(counts.auditRows == 100)
            #expect(noting.sweeps(of: "audit_log") == [40, 40, 20])
            // Days 130 to 91 went first, then 90 to 51; the 20 left (50 to 31) in the last batch.
            #expect(oldestLeft.withLock { $0 } == [(now - 90 * day).unixSeconds, (now - 50 * day).unixSeconds])
            // Each batch after the first starts at the newest age the one before took (day 91,
            // then day 51): an index scan starts there, past the entries of the rows deleted before.
            let cutoff = SQLValue.integer((now - 30 * day).unixSeconds)
            #expect(noting.batches(of: "audit_log").map(\.binds) == [
                [cutoff, .integer(40)],
                [cutoff, .integer((now - 91 * day).unixSeconds), .integer(40)],
                [cutoff, .integer((now - 51 * day).unixSeconds), .integer(40)],
            ])
        }
    }

    /// Freed pages go back to the file system in steps sized the same way: with no time allowed,
    /// each `incremental_vacuum` gives back half of what the one before did.
    @Test func reclaimingSpaceStepsAsTheSweepsBatchesDo() async throws {
        let steps = try await SQLStore.$vacuumCarefulStep.withValue(1_000) {
            try await SQLStore.$sweepBatchTime.withValue(.zero) { try await Self.reclaimSteps() }
        }
        #expect(steps == [1_000, 500, 250, 125, 62, 31, 15, 7])
    }

    /// As a sweep's batches do, reclaiming starts with a careful step and doubles it while each
    /// is well within its time; while others use the database it stays careful. Alone, the first
    /// turn counts the check of `PRAGMA auto_vacuum` too, one use more than a step's own two,
    /// so the second step is careful as well.
    @Test(arguments: [(0, [100, 100, 200, 400, 800, 390]), (3, Array(repeating: 100, count: 19) + [90])])
    func reclaimingSpaceStartsCarefulAndStaysSoBesideOthers(_ reads: Int, _ expected: [Int]) async throws {
        let steps = try await HousekeepingPace.$settings.withValue(.init(restPerBatch: 0)) {
            try await SQLStore.$vacuumCarefulStep.withValue(100) {
                try await SQLStore.$sweepBatchTime.withValue(.seconds(3_600)) { try await Self.reclaimSteps(besides: reads) }
            }
        }
        #expect(steps == expected)
    }

    /// The steps of `incremental_vacuum` that give 1,990 pages back from a SQLite file with 1,500
    /// purged rows of 8 KB, with `reads` statements of others' at each of housekeeping's turns.
    static func reclaimSteps(besides reads: Int = 0) async throws -> [Int] {
        try await TestDatabase.with(.sqlite) { database, _ in
            let (day, now) = (Self.day, Self.now)
            let (noting, store, owner) = try await Self.auditTrail(database, ages: []) { inner in
                for _ in 0..<reads { _ = try? await inner.query("SELECT 1 AS n", []) }
            }
            // 1,500 rows of 8 KB (two pages and more each), all past the retention.
            let details = ["note": String(repeating: "x", count: 8_000)]
            for batch in stride(from: 0, to: 1_500, by: 250) {
                try await store.transaction { tx in
                    for index in batch..<(batch + 250) {
                        try await tx.insertAudit(
                            AuditEvent(createdAt: now - 400 * day + Double(index), event: .login, outcome: "success", userID: owner.id, details: details))
                    }
                }
            }
            // The purge's batches held whatever they take: only the reclaim's steps are walked.
            _ = try await SQLStore.$sweepBatchTime.withValue(.seconds(3_600)) {
                try await store.purge(cutoff: now - 30 * day, idleBefore: now, windowsBefore: now, notificationsBefore: now)
            }
            noting.noted.withLock { $0 = [] }
            // A turn first, so that reclaiming's first counts only what came after it.
            _ = await database.awaitHousekeepingTurn(after: .zero)
            let released = try await store.reclaimSpace(pages: 1_990)
            #expect(released == 1_990)
            return noting.noted.withLock { $0 }.compactMap { noted -> Int? in
                guard noted.sql.hasPrefix("PRAGMA incremental_vacuum(") else { return nil }
                return Int(noted.sql.dropFirst("PRAGMA incremental_vacuum(".count).dropLast())
            }
        }
    }

    /// A batch well within its time is followed by one twice its size, up to the most a batch may take.
    @Test func aBatchWellWithinItsTimeDoublesTheNext() {
        let target = Duration.milliseconds(20)
        #expect(SQLStore.nextBatch(after: 40, took: .milliseconds(30), target: target, most: 500) == 20)
        #expect(SQLStore.nextBatch(after: 1, took: .milliseconds(30), target: target, most: 500) == 1)
        #expect(SQLStore.nextBatch(after: 40, took: .milliseconds(15), target: target, most: 500) == 40)
        #expect(SQLStore.nextBatch(after: 40, took: .milliseconds(5), target: target, most: 500) == 80)
        #expect(SQLStore.nextBatch(after: 300, took: .milliseconds(5), target: target, most: 500) == 500)
    }
}
