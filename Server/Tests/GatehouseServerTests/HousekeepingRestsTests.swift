import Foundation
import GatehouseCore
@testable import GatehouseServer
@testable import GatehouseStore
import GatehouseTestSupport
import HTTPTypes
import Logging
import Testing

/// Issue 65: how long housekeeping rested between its batches, and for what, is seen from outside
/// the process: in the retention sweep's log line and in `gatehouse_housekeeping_rest_seconds`.
/// A first sweep at a million accounts took 39 minutes at PostgreSQL's stock settings, and
/// nothing said how much of it was rests for the log.
@Suite struct HousekeepingRestsTests {
    /// Every reason a rest can have reaches the metrics as its own series, through the pace that
    /// takes the rest (the switch names each reason: a new one must be walked here).
    @Test func everyRestReachesTheMetricsUnderItsReason() async throws {
        let metrics = ServerMetrics(enabled: true)
        let pace = HousekeepingPace(
            settings: .init(restPerBatch: 1, longestRest: .milliseconds(250), logBudget: 4_000), observer: metrics)
        for reason in HousekeepingRest.allCases {
            switch reason {
            case .requests:
                // Others used the database since the turn before: a rest of the batch's length.
                #expect(await pace.turn(after: .milliseconds(3), uses: 100) == false)
                #expect(await pace.turn(after: .milliseconds(3), uses: 110) == true)
            case .log:
                // 1,000 bytes of log at 4,000 a second: 250 ms, less the time between the turns.
                _ = await pace.turn(after: .zero, uses: 110, log: .init(position: 0, budget: 0))
                _ = await pace.turn(after: .zero, uses: 110, log: .init(position: 1_000, budget: 0))
            case .checkpointer:
                pace.rested(.milliseconds(4), for: .checkpointer)
            }
        }
        let samples = MetricsTests.samples(String(decoding: metrics.render(), as: UTF8.self))
        let rested = pace.current.rested
        for reason in HousekeepingRest.allCases {
            #expect(rested[reason].count == 1, "\(reason): \(rested[reason])")
            #expect(samples[#"gatehouse_housekeeping_rest_seconds_count{reason="\#(reason.rawValue)"}"#] == 1, "\(reason)")
            let sum = try #require(samples[#"gatehouse_housekeeping_rest_seconds_sum{reason="\#(reason.rawValue)"}"#])
            #expect(abs(sum - rested[reason].time / .seconds(1)) < 1e-6, "\(reason): \(sum)")
        }
        #expect(rested[.requests].time == .milliseconds(3))
        #expect(rested[.log].time > .zero && rested[.log].time <= .milliseconds(250))
        #expect(rested[.checkpointer].time == .milliseconds(4))
    }

    /// The retention sweep's line says how long it took and how long it rested for what: on
    /// PostgreSQL with a log budget of 200 bytes a second (a rest at most 1 s), thirty audit rows
    /// past the retention go five at a time, and each batch but the first (which only marks the
    /// log's position) is followed by a rest of 1 s for the log, none for the requests (no one
    /// else uses the database).
    @Test func theRetentionSweepsLineSaysHowLongItRestedForTheLog() async throws {
        try await Self.sweepingThirtyOldRows { store, sweep, log in
            let before = store.housekeepingRests
            let counts = await sweep.sweep()
            #expect(counts.auditRows == 30)
            let line = try #require(log.lines.first { $0.hasPrefix("info retention sweep ") }, "\(log.lines)")
            let fields = Self.fields(of: line, after: "info retention sweep")
            #expect(fields["audit_rows_count"] == "30")
            #expect(fields["rested_for_log_count"] == "5", "\(line)")
            #expect(fields["rested_for_log_ms"] == "5000", "\(line)")
            #expect(fields["rested_for_requests_count"] == "0" && fields["rested_for_requests_ms"] == "0", "\(line)")
            #expect(fields["rested_for_checkpointer_count"] == "0" && fields["rested_for_checkpointer_ms"] == "0", "\(line)")
            #expect(Int(fields["duration_ms"] ?? "") ?? 0 >= 5_000, "\(line)")
            #expect(store.housekeepingRests.since(before)[.log] == .init(count: 5, time: .seconds(5)))
        }
    }

    /// A server that shuts down in the middle of a long first sweep (about 40 minutes at a million
    /// accounts) stops it at the next turn between two batches: what the batches so far deleted
    /// stays deleted, and its line says it stopped, with its rests, at info, not that it failed.
    /// Here the sweep's task is cancelled during its first rest for the log, after two batches.
    @Test func aSweepStoppedByAShutdownSaysSoAndKeepsItsBatches() async throws {
        try await Self.sweepingThirtyOldRows { store, sweep, log in
            let before = store.housekeepingRests
            let running = Task { await sweep.sweep() }
            let deadline = ContinuousClock.now + .seconds(30)
            while store.housekeepingRests.since(before)[.log].count == 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            running.cancel()
            #expect(await running.value == PurgeCounts())
            let line = try #require(log.lines.first { $0.contains("retention sweep") }, "\(log.lines)")
            let stopped = "info retention sweep stopped by the shutdown; what its batches deleted stays deleted, and the next start sweeps the rest"
            #expect(line.hasPrefix(stopped + " "), "\(line)")
            let fields = Self.fields(of: line, after: stopped)
            #expect(fields["rested_for_log_count"] == "1", "\(line)")
            #expect(fields["duration_ms"] != nil, "\(line)")
            #expect(!log.lines.contains { $0.contains("failed") }, "\(log.lines)")
            let old = try await store.auditEvents(userID: nil, before: nil, limit: 100).filter { $0.createdAt < Date() - 50 * 86_400 }
            #expect(old.count == 20)
        }
    }

    /// The same rests on a running app's `/metrics`: restarted on thirty audit rows past the
    /// retention, its first sweep rests 1 s for the log after each batch but the first.
    @Test func theAppsSweepRestsForTheLogOnItsMetrics() async throws {
        let (url, cleanup) = try await TestDatabase.make(.postgres)
        do {
            // The first app migrates the database; the rows are arranged beside it.
            try await TestApp.serve(url) { _, config in
                try await TestApp.withStore(config) { store in try await Self.oldAuditRows(30, into: store, daysAgo: 400) }
            }
            try await Self.paced {
                try await TestApp.serve(url, adjust: { $0.metrics = true }) { client, config in
                    let series = #"gatehouse_housekeeping_rest_seconds_count{reason="log"}"#
                    let deadline = ContinuousClock.now + .seconds(60)
                    var samples: [String: Double] = [:]
                    // The sweep starts with the app: its five rests take five seconds. The
                    // fifth begins after the last rows went; the batch after it finds none.
                    while ContinuousClock.now < deadline, (samples[series] ?? 0) < 5 {
                        try await Task.sleep(for: .milliseconds(200))
                        samples = MetricsTests.samples(try await client.execute(uri: "/metrics", method: .get).text)
                    }
                    let old = try await TestApp.withStore(config) { store in
                        try await store.auditEvents(userID: nil, before: nil, limit: 100).filter { $0.createdAt < Date() - 300 * 86_400 }
                    }
                    #expect(old.isEmpty, "\(old.count)")
                    #expect(samples[series] == 5, "\(samples.filter { $0.key.hasPrefix("gatehouse_housekeeping") })")
                    #expect(samples[#"gatehouse_housekeeping_rest_seconds_sum{reason="log"}"#] == 5)
                }
            }
        } catch {
            await cleanup()
            throw error
        }
        await cleanup()
    }

    /// Paced (``paced(_:)``) on PostgreSQL, thirty audit rows 60 days old and a retention sweep
    /// of 30 days, with its log: a line per entry, its level, its message and its `key=value`
    /// fields.
    private static func sweepingThirtyOldRows(_ body: @escaping @Sendable (SQLStore, RetentionSweep, KeptLog) async throws -> Void) async throws {
        try await paced {
            try await TestDatabase.withStore(.postgres) { store in
                try await oldAuditRows(30, into: store, daysAgo: 60)
                let log = KeptLog { event in
                    let fields = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.sorted()
                    return (["\(event.level)", event.message.description] + fields).joined(separator: " ")
                }
                let sweep = RetentionSweep(
                    store: store, days: 30, idleSeconds: 30 * 86_400, unconfirmedFactorTTLSeconds: 86_400, clock: SystemClock(),
                    logger: log.logger(label: "sweep"))
                try await body(store, sweep, log)
            }
        }
    }

    /// A log line's `key=value` fields after its first words, `words`.
    private static func fields(of line: String, after words: String) -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: line.dropFirst(words.count).split(separator: " ").map { field in
                let parts = field.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), String(parts.count > 1 ? parts[1] : ""))
            })
    }

    /// A log budget of 200 bytes a second and rests of at most 1 s for the databases opened in
    /// `body`, with the retention sweep's batches held at five rows.
    private static func paced(_ body: @escaping @Sendable () async throws -> Void) async throws {
        let settings = HousekeepingPace.Settings(restPerBatch: 0, longestLogRest: .seconds(1), logBudget: 200)
        try await HousekeepingPace.$settings.withValue(settings) {
            try await SQLStore.$sweepBatch.withValue(5) {
                try await SQLStore.$sweepBatchTime.withValue(.seconds(3_600)) { try await body() }
            }
        }
    }

    /// `count` audit rows a second apart, the first `daysAgo` days ago.
    private static func oldAuditRows(_ count: Int, into store: SQLStore, daysAgo: Double) async throws {
        let now = Date()
        try await store.transaction { tx in
            for index in 0..<count {
                try await tx.insertAudit(
                    AuditEvent(createdAt: now - daysAgo * 86_400 + Double(index), event: .login, outcome: "success"))
            }
        }
    }
}
