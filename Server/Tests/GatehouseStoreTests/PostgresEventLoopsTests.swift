import Foundation
import GatehouseTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import GatehouseStore

/// The pool opens its connections on the event loops in turn (`PostgresEventLoops`), also when
/// the pool's own task runs on an event loop, as it does in the `gatehouse` command (Swift's tasks
/// on SwiftNIO's loops). postgres-nio asks the group for `any()` loop, which is then the calling
/// one: every connection went on one loop, and with it every request that used the database
/// (BENCHMARKS.md, issue 61 step 27).
@Suite struct PostgresEventLoopsTests {
    /// A task executor that runs its jobs on one event loop.
    final class LoopExecutor: TaskExecutor {
        let loop: any EventLoop
        init(_ loop: any EventLoop) { self.loop = loop }
        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    @Test func askedFromAnEventLoopTheGroupGivesItsLoopsInTurn() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 3)
        let spread = PostgresEventLoops(group)
        let asked = group.next().submit {
            ((0..<6).map { _ in ObjectIdentifier(group.any()) }, (0..<6).map { _ in ObjectIdentifier(spread.any()) })
        }
        let (plain, given) = try await asked.get()
        try await group.shutdownGracefully()
        // The group itself answers the asking loop every time; the pool's group each loop in turn.
        #expect(Set(plain).count == 1)
        #expect(Set(given).count == 3)
    }

    @Test(.enabled(if: Backend.available.contains(.postgres), "PostgreSQL (GATEHOUSE_TEST_POSTGRES_URL)"))
    func aPoolRunFromAnEventLoopOpensItsConnectionsOnEveryLoop() async throws {
        // A group of the test's own, so that no other test's pool or client takes a turn of it.
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let used: Result<Set<ObjectIdentifier>, any Error>
        do {
            used = .success(try await TestDatabase.with(.postgres) { _, url in
                guard case .postgres(let address) = url else { throw StoreError.unavailable("not PostgreSQL: \(url)") }
                let database = try PostgresDatabase(
                    url: address, maximumConnections: 4, minimumConnections: 4, preparedStatements: true, logger: TestDatabase.logger,
                    observer: nil, eventLoops: PostgresEventLoops(loops))
                return try await withTaskExecutorPreference(LoopExecutor(loops.next())) {
                    try await database.withRunning {
                        // Eight transactions at once hold each of the four connections in turn.
                        try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
                            for _ in 0..<8 {
                                group.addTask {
                                    try await database.transaction { executor in
                                        try await executor.query("SELECT pg_sleep(0.05)")
                                        return ObjectIdentifier(try #require(executor as? PostgresTransaction).connection.eventLoop)
                                    }
                                }
                            }
                            return try await group.reduce(into: Set<ObjectIdentifier>()) { $0.insert($1) }
                        }
                    }
                }
            })
        } catch {
            used = .failure(error)
        }
        try await loops.shutdownGracefully()
        #expect(try used.get().count == 2)
    }
}
