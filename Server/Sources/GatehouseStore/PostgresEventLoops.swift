import Dispatch
import NIOCore
import PostgresNIO

/// The event loops the pool opens its connections on: each new connection on the group's next
/// loop in turn.
///
/// postgres-nio opens a connection on the group's `any()` loop, which is the calling thread's own
/// loop when it is one of the group's. The `gatehouse` command runs Swift's tasks on those loops
/// (`runConcurrencyOnEventLoops`), so the pool, opening its connections from its own task, put
/// them all on one loop; a request's task resumes on its connection's loop, so every request that
/// used the database went on there, one core's worth of a node (BENCHMARKS.md, issue 61 step 27:
/// 82–86 % of a PostgreSQL login's work beyond the hash on one of two loops).
final class PostgresEventLoops: EventLoopGroup {
    let base: any EventLoopGroup

    init(_ base: any EventLoopGroup = PostgresClient.defaultEventLoopGroup) {
        self.base = base
    }

    func next() -> any EventLoop { base.next() }

    func any() -> any EventLoop { base.next() }

    func makeIterator() -> EventLoopIterator { base.makeIterator() }

    func shutdownGracefully(queue: DispatchQueue, _ callback: @escaping @Sendable ((any Error)?) -> Void) {
        base.shutdownGracefully(queue: queue, callback)
    }

    func _preconditionSafeToSyncShutdown(file: StaticString, line: UInt) {
        base._preconditionSafeToSyncShutdown(file: file, line: line)
    }
}
