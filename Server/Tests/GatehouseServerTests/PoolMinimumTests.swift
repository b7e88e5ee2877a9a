import Foundation
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import Testing

/// A server keeps its PostgreSQL pool open (`GATEHOUSE_DATABASE_POOL_MINIMUM`, by default the
/// whole pool): its connections are opened at start, with no request asking for them, so that no
/// connection gets an idle timer each time it goes back to the pool (BENCHMARKS.md, issue 61,
/// step 8). The pool is larger than the connections the app's start-up work asks for at once
/// (seven at most, seen here), so only the minimum opens them all.
@Suite struct PoolMinimumTests {
    @Test(.requires(TestDatabase.postgresAdminURL != nil, "GATEHOUSE_TEST_POSTGRES_URL"))
    func aServerOpensItsWholePoolWithNoRequestAskingForIt() async throws {
        try await TestApp.run(.postgres, adjust: { $0.databasePoolSize = 12; $0.databasePoolMinimum = nil }) { _, config in
            let open = try await Self.connections(settlingAt: 12, config)
            #expect(open == 12)
        }
    }

    /// The app's connections to its database once they reach `expected` or stop changing for a
    /// second (within 10 s), counted from a connection of PostgreSQL's own.
    static func connections(settlingAt expected: Int, _ config: GatehouseConfig) async throws -> Int {
        guard case .postgres(let url) = config.database else { throw ProcessError("not a PostgreSQL app") }
        let name = String(URLComponents(string: url)!.path.dropFirst())
        let admin = try PostgresDatabase(url: try #require(TestDatabase.postgresAdminURL), maximumConnections: 2, logger: TestDatabase.logger)
        defer { Task { await admin.shutdown() } }
        return try await admin.withRunning {
            var (count, steady) = (0, 0)
            for _ in 0..<100 {
                let rows = try await admin.query(
                    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ?", [.text(name)])
                let now = Int(try rows.first?.int("n") ?? 0)
                (steady, count) = now == count ? (steady + 1, now) : (0, now)
                if count == expected && steady >= 10 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            return count
        }
    }
}
