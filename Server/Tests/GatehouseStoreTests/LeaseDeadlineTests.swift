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
