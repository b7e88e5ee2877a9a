import Foundation
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import HummingbirdTesting
import Testing

/// `/health` says 503 while the database does not answer and recovers by itself.
@Suite struct HealthTests {
    /// Polls `/health` until it answers `status` (bounded: about a minute), returning the body.
    func waitForHealth(_ client: any TestClientProtocol, _ status: HTTPResponse.Status) async throws -> HealthResponse {
        for _ in 0..<300 {
            let response = try await client.execute(uri: "/health", method: .get)
            if response.status == status { return try response.json(HealthResponse.self) }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw ProcessError("/health never answered \(status)")
    }

    @Test func sqliteHeldByAnotherWriterIs503ThenRecovers() async throws {
        try await TestApp.run(.sqlite) { client, config in
            #expect(try await waitForHealth(client, .ok).status == "ok")
            guard case .sqlite(let path) = config.database else { return }
            // Another process-like writer takes the database's write lock and keeps it.
            let other = try await HeldSQLiteWriter(path: path)
            let down = try await client.execute(uri: "/health", method: .get)
            #expect(down.status == .serviceUnavailable)
            #expect(try down.json(HealthResponse.self).status == "unavailable")
            #expect(down.headers[.retryAfter] != nil)
            try await other.release()
            #expect(try await waitForHealth(client, .ok).status == "ok")
        }
    }

    /// OKLah's AUTH_UNAVAILABLE (O5-3): a creation the database cannot take answers 503 with the
    /// preset's words and a retry time; the same call succeeds once the database is back. (On
    /// PostgreSQL refusing connections: a SQLite writer held by another would keep a thread of
    /// SQLite's shared pool waiting out the busy time-out, stalling every other test's database.)
    @Test(.requires(TestDatabase.postgresAdminURL != nil, "GATEHOUSE_TEST_POSTGRES_URL"))
    func anAnonymousStartTheDatabaseCannotTakeSaysSoInThePresetsWords() async throws {
        try await TestApp.run(.postgres, preset: "oklah") { client, config in
            try await whilePostgresRefuses(client, config) {
                let down = try await client.execute(uri: "/v1/auth/anonymous", method: .post)
                #expect(down.status == .serviceUnavailable && down.error?.code == .serviceUnavailable, "\(down.text)")
                #expect(down.error?.message == "Unable to create account. Please check your connection and try again.")
                #expect(down.headers[.retryAfter] == "5")
            }
            #expect(try await client.execute(uri: "/v1/auth/anonymous", method: .post).status == .created)
        }
    }

    @Test(.requires(TestDatabase.postgresAdminURL != nil, "GATEHOUSE_TEST_POSTGRES_URL"))
    func postgresRefusingConnectionsIs503ThenRecovers() async throws {
        try await TestApp.run(.postgres) { client, config in
            try await whilePostgresRefuses(client, config) {}
        }
    }

    /// Runs `body` while the app's PostgreSQL database stops answering it (no new connections,
    /// existing ones cut): `/health` answers 503 before `body` runs and 200 again after.
    func whilePostgresRefuses(
        _ client: any TestClientProtocol, _ config: GatehouseConfig, _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        #expect(try await waitForHealth(client, .ok).status == "ok")
        guard case .postgres(let url) = config.database else { throw ProcessError("not a PostgreSQL app") }
        let admin = try #require(TestDatabase.postgresAdminURL)
        let name = String(URLComponents(string: url)!.path.dropFirst())
        let maintenance = try PostgresDatabase(url: admin, maximumConnections: 2, logger: TestDatabase.logger)
        try await maintenance.withRunning {
            try await maintenance.query("ALTER DATABASE \(name) ALLOW_CONNECTIONS false")
            try await maintenance.query(
                "SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE datname = ?", [.text(name)])
            #expect(try await waitForHealth(client, .serviceUnavailable).status == "unavailable")
            try await body()
            try await maintenance.query("ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
        }
        #expect(try await waitForHealth(client, .ok).status == "ok")
    }
}

/// A second writer on a SQLite file that takes the write lock and keeps it until `release()`:
/// the server's writes then wait out SQLite's busy time-out and answer 503.
final class HeldSQLiteWriter: Sendable {
    private let database: SQLiteDatabase
    private let holder: Task<Void, any Error>
    private let releaseNow: AsyncStream<Void>.Continuation

    init(path: String) async throws {
        database = try await SQLiteDatabase.open(path: path, readerCount: 1, logger: TestDatabase.logger)
        let (release, releaseNow) = AsyncStream.makeStream(of: Void.self)
        let (held, isHeld) = AsyncStream.makeStream(of: Void.self)
        self.releaseNow = releaseNow
        holder = Task { [database] in
            // The stream ends however this goes, so `init` never waits on a lock never taken.
            defer { isHeld.finish() }
            var attempts = 0
            while true {
                do {
                    try await database.transaction { _ in
                        isHeld.yield()
                        for await _ in release { break }
                    }
                    return
                } catch StoreError.conflict where attempts < 5 {
                    // The server's own writer held the lock past the busy time-out (a loaded
                    // machine): ask again.
                    attempts += 1
                }
            }
        }
        var taken = false
        for await _ in held {
            taken = true
            break
        }
        if !taken {
            try await holder.value
            throw ProcessError("the SQLite write lock was never taken")
        }
    }

    func release() async throws {
        releaseNow.yield()
        releaseNow.finish()
        try await holder.value
        await database.shutdown()
    }
}
