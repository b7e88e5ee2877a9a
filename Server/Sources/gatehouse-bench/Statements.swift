import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import Logging

/// `gatehouse-bench statements DATABASE_URL` (issue 61): what a statement costs this process
/// through the store's own path (`SQLDatabase`: the pool's lease, the prepared statement, the
/// rows made into `SQLRow`s), one statement at a time, so the cost of a request can be read as
/// statements and round trips. Prints one JSON line of microseconds per operation, of the
/// process's CPU (`getrusage`, user and system) and of the wall clock, the median of 7 batches:
/// - `read`: a one-row read by primary key outside a transaction (its own lease);
/// - `write`: a one-row update outside a transaction;
/// - `transaction_N`: a transaction of N such reads (0, 1, 4, 8); the slope is a statement inside
///   a transaction, `transaction_0` the lease, `BEGIN` and `COMMIT`.
///
/// It makes and drops the table `bench_statements`. As the `gatehouse` command does, it runs
/// Swift's tasks on SwiftNIO's event loops unless `GATEHOUSE_EVENT_LOOP_EXECUTOR=off`.
extension Bench {
    static let statementsInTransactions = [0, 1, 4, 8]

    static func statements(url text: String, count: Int, onEventLoops: Bool) async throws {
        guard case .success(let url) = DatabaseURL.parse(text) else { throw BenchError("not a database URL: \(text)") }
        var logger = Logger(label: "gatehouse-bench.statements")
        logger.logLevel = .warning
        // The server's pool keeps all its connections open (`databasePoolKept`): so does this one.
        let (figures, dialect) = try await Operator.withDatabase(url, logger: logger, poolSize: 2, poolMinimum: 2) { database in
            try await database.query("DROP TABLE IF EXISTS bench_statements")
            try await database.query("CREATE TABLE bench_statements (id BIGINT PRIMARY KEY, value TEXT NOT NULL)")
            try await database.query("INSERT INTO bench_statements (id, value) VALUES (?, ?)", [.integer(1), .text("one")])
            let read = "SELECT id, value FROM bench_statements WHERE id = ?"
            var figures: [String: [String: Double]] = [:]
            figures["read"] = try await perStatement(count) {
                guard try await database.query(read, [.integer(1)]).count == 1 else { throw BenchError("the row is missing") }
            }
            figures["write"] = try await perStatement(count) {
                try await database.query("UPDATE bench_statements SET value = ? WHERE id = ?", [.text("one"), .integer(1)])
            }
            for statements in statementsInTransactions {
                figures["transaction_\(statements)"] = try await perStatement(count) {
                    try await database.transaction { executor in
                        for _ in 0..<statements {
                            guard try await executor.query(read, [.integer(1)]).count == 1 else { throw BenchError("the row is missing") }
                        }
                    }
                }
            }
            try await database.query("DROP TABLE bench_statements")
            return (figures, database.dialect)
        }
        let (first, last) = (statementsInTransactions[0], statementsInTransactions[statementsInTransactions.count - 1])
        let slope = { (key: String) in
            ((figures["transaction_\(last)"]![key]! - figures["transaction_\(first)"]![key]!) / Double(last - first) * 10).rounded() / 10
        }
        print(json([
            "benchmark": "statements", "database": dialect == .postgres ? "postgres" : "sqlite", "count": count,
            "executor": onEventLoops ? "event loops" : "swift pool",
            "cpu_us": figures.mapValues { $0["cpu"]! }, "wall_us": figures.mapValues { $0["wall"]! },
            "in_transaction_cpu_us": slope("cpu"), "in_transaction_wall_us": slope("wall"),
        ]))
    }

    /// The median of 7 batches of `count` runs of `body`, after one batch of warm-up: the
    /// process's CPU and the wall clock in microseconds per run.
    static func perStatement(_ count: Int, _ body: () async throws -> Void) async throws -> [String: Double] {
        for _ in 0..<count { try await body() }
        var (cpu, wall) = ([Double](), [Double]())
        for _ in 0..<7 {
            let (cpuBefore, wallBefore) = (processCPUSeconds(), ContinuousClock.now)
            for _ in 0..<count { try await body() }
            cpu.append((processCPUSeconds() - cpuBefore) * 1e6 / Double(count))
            wall.append(milliseconds(ContinuousClock.now - wallBefore) * 1000 / Double(count))
        }
        return ["cpu": percentile(cpu, 50), "wall": percentile(wall, 50)]
    }

    /// The user and system CPU this process has spent, in seconds.
    static func processCPUSeconds() -> Double {
        let usage = ownUsage()
        let seconds = { (time: timeval) in Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
