import Foundation
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The contract's "Upgrades" (issue 62's first steps): `GET /health` names the schema version
/// the database is at, and a node refuses to start on a schema newer than it knows: exit 3 and
/// `schema_newer_than_binary`, on both databases.
@Suite struct SchemaVersionTests {
    @Test(arguments: Backend.available)
    func healthNamesTheSchemaVersion(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, _ in
            let health = try await client.execute(uri: "/health", method: .get)
            #expect(health.status == .ok)
            let body = try health.json(HealthResponse.self)
            let dialect: SQLDialect = backend == .sqlite ? .sqlite : .postgres
            #expect(body.status == "ok" && body.schemaVersion == Migrations.all(for: dialect).map(\.version).max(), "\(health.text)")
        }
    }

    @Test(arguments: Backend.available)
    func aSchemaNewerThanTheBinaryIsRefused(_ backend: Backend) async throws {
        let (url, cleanup) = try await TestDatabase.make(backend)
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = ["GATEHOUSE_DATABASE_URL": url.environmentValue]
        let migrated = try ServerProcess(["migrate"], environment: environment, directory: directory)
        #expect(try await migrated.exitStatus() == 0, "\(migrated.standardError)")
        let known = Migrations.all(for: backend == .sqlite ? .sqlite : .postgres).map(\.version).max() ?? 0
        // A newer release migrated the database one step further.
        let database = try await url.open(logger: TestDatabase.logger)
        let insert = "INSERT INTO gatehouse_migrations (version, name, checksum, applied_at) VALUES (\(known + 1), 'from_the_future', 'x', 1)"
        if let postgres = database as? PostgresDatabase {
            try await postgres.withRunning { try await postgres.query(insert) }
        } else {
            try await database.query(insert)
        }
        await database.shutdown()
        for command in [["serve"], ["migrate"]] {
            let refused = try ServerProcess(command, environment: environment, directory: directory)
            #expect(try await refused.exitStatus() == 3, "\(command): \(refused.standardError)")
            #expect(refused.standardError.contains("schema_newer_than_binary"), "\(command): \(refused.standardError)")
            #expect(refused.standardError.contains("schema version \(known + 1)") && refused.standardError.contains("up to \(known)"), "\(refused.standardError)")
        }
        await cleanup()
    }
}
