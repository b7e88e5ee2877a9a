import Foundation
@testable import GatehouseStore
import GatehouseTestSupport
import Synchronization
import Testing

/// Issue 61: a PostgreSQL lease's time-outs are entries of one table that a single task checks,
/// gone as soon as the lease is over, not a sleeping task per query that lives until its deadline.
@Suite struct LeaseDeadlineTests {
    @Test func dueTimeOutsFireOnceAndRemovedOnesNever() {
        let deadlines = Deadlines()
        let fired = Mutex<[String]>([])
        let start = ContinuousClock.now
        _ = deadlines.add(at: start + .seconds(1)) { fired.withLock { $0.append("one second") } }
        let removed = deadlines.add(at: start + .seconds(1)) { fired.withLock { $0.append("removed") } }
        _ = deadlines.add(at: start + .seconds(10)) { fired.withLock { $0.append("ten seconds") } }
        deadlines.remove(removed)
        #expect(deadlines.count == 2)

        deadlines.fire(now: start)
        #expect(fired.withLock { $0 }.isEmpty)
        deadlines.fire(now: start + .seconds(2))
        deadlines.fire(now: start + .seconds(3))
        #expect(fired.withLock { $0 } == ["one second"])
        #expect(deadlines.count == 1)
        deadlines.fire(now: start + .seconds(10))
        #expect(fired.withLock { $0 } == ["one second", "ten seconds"])
        #expect(deadlines.count == 0)
    }

    /// The one mechanism's two races, on an instance that ticks itself as ``Deadlines/shared``
    /// does: `within` cancels its work and waits for it; `abandoning` answers at its deadline
    /// although the work ignores cancellation. The ticking task ends with the last time-out.
    @Test func bothRacesHoldTheirDeadlinesAndTheTickingEndsWithThem() async throws {
        struct Late: Error {}
        let deadlines = Deadlines(ticksItself: true)
        #expect(!deadlines.isTicking)
        let started = ContinuousClock.now
        await #expect(throws: Late.self) {
            try await deadlines.within(.milliseconds(300), orThrow: { Late() }) { try await Task.sleep(for: .seconds(30)) }
        }
        #expect(ContinuousClock.now - started < .seconds(5))

        let gate = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let finished = Mutex(false)
        let abandonedAt = ContinuousClock.now
        await #expect(throws: Late.self) {
            try await deadlines.abandoning(.milliseconds(300), orThrow: { Late() }) {
                // Ignores cancellation: waits until the test lets it go.
                await withCheckedContinuation { continuation in gate.withLock { $0 = continuation } }
                finished.withLock { $0 = true }
            }
        }
        #expect(ContinuousClock.now - abandonedAt < .seconds(5))
        let finishedEarly = finished.withLock { $0 }
        #expect(!finishedEarly)
        while gate.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(10)) }
        gate.withLock { $0?.resume() }

        // A race its work wins answers with the work's result and leaves no time-out behind.
        #expect(try await deadlines.abandoning(.seconds(30), orThrow: { Late() }) { 42 } == 42)
        #expect(deadlines.count == 0)
        let stopped = ContinuousClock.now
        while deadlines.isTicking, ContinuousClock.now - stopped < .seconds(5) { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!deadlines.isTicking)
    }

    /// A SQLite probe behind a writer that never lets go answers `.unavailable` at its two
    /// seconds instead of waiting for the writer (it waited before: the lock ignores cancellation).
    @Test func aSQLiteProbeBehindAStuckWriterAnswersInTime() async throws {
        try await TestDatabase.with(.sqlite) { database, _ in
            let gate = Mutex<CheckedContinuation<Void, Never>?>(nil)
            let writer = Task {
                try await database.transaction { tx in
                    _ = try await tx.query("SELECT 1 AS one")
                    await withCheckedContinuation { continuation in gate.withLock { $0 = continuation } }
                }
            }
            while gate.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(10)) }
            let release: @Sendable () -> Void = {
                gate.withLock { continuation in
                    continuation?.resume()
                    continuation = nil
                }
            }
            // A probe that waited for the writer would wait for this.
            let backstop = Task {
                try await Task.sleep(for: .seconds(6))
                release()
            }
            let started = ContinuousClock.now
            await #expect(throws: StoreError.self) { try await database.ping() }
            #expect(ContinuousClock.now - started < .seconds(4))
            release()
            backstop.cancel()
            try await writer.value
            try await database.ping()
        }
    }

    @Test(.enabled(if: Backend.available.contains(.postgres), "PostgreSQL (GATEHOUSE_TEST_POSTGRES_URL)"))
    func noTimeOutOutlivesItsQuery() async throws {
        try await TestDatabase.with(.postgres) { database, _ in
            let postgres = try #require(database as? PostgresDatabase)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        for index in 0..<25 {
                            _ = try await database.query("SELECT ? AS n", [.integer(Int64(worker * 100 + index))])
                            _ = try await database.transaction { tx in try await tx.query("SELECT 1 AS one") }
                        }
                    }
                }
                try await group.waitForAll()
            }
            // 400 leases, each with a time-out of ten seconds: none is left once they answered.
            #expect(postgres.deadlines.count == 0)
            // A failed query's lease is over too.
            await #expect(throws: StoreError.self) { try await database.query("SELECT * FROM no_such_table") }
            #expect(postgres.deadlines.count == 0)
        }
    }
}
