import Foundation
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import Testing

/// Issue 62's safety around a migration: one that fails half-way leaves the database at the
/// version before it (both databases); on SQLite `gatehouse migrate` and a start keep a copy of
/// the file from before, owner-only, which a start removes once it listens unless asked to keep
/// it; `gatehouse migrate --check` tells expand steps from contract steps without writing.
@Suite struct UpgradeSafetyTests {
    static func migrations(_ backend: Backend) -> [Migration] { Migrations.all(for: backend == .sqlite ? .sqlite : .postgres) }

    /// Runs `body` on the open database at `url`, PostgreSQL's pool running.
    @discardableResult
    static func withDatabase<T: Sendable>(_ url: DatabaseURL, _ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        let database = try await url.open(logger: TestDatabase.logger)
        do {
            let result: T
            if let postgres = database as? PostgresDatabase {
                result = try await postgres.withRunning { try await body(database) }
            } else {
                result = try await body(database)
            }
            await database.shutdown()
            return result
        } catch {
            await database.shutdown()
            throw error
        }
    }

    @Test(arguments: Backend.available)
    func aMigrationThatFailsHalfWayLeavesTheVersionBeforeIt(_ backend: Backend) async throws {
        let (url, cleanup) = try await TestDatabase.make(backend)
        let shipped = Self.migrations(backend)
        let head = shipped.count
        let failing = Migration(
            version: head + 1, name: "fails_half_way",
            statements: [
                "CREATE TABLE upgrade_probe (x TEXT)", "INSERT INTO upgrade_probe (x) VALUES ('half')",
                "UPDATE users SET email = NULL", "INSERT INTO no_such_table (x) VALUES (1)",
            ])
        try await Self.withDatabase(url) { database in
            try await Migrator(database: database).migrate(now: 1)
            try await database.query(
                "INSERT INTO users (id, email, email_normalized, created_at, updated_at) VALUES ('u1', 'kept@example.com', 'kept@example.com', 1, 1)")
            await #expect(throws: (any Error).self) { try await Migrator(database: database, migrations: shipped + [failing]).migrate(now: 2) }
            #expect(try await Migrator(database: database).applied().max() == head)
            // Nothing of the failed migration stayed: not its table, not its half-done update.
            await #expect(throws: (any Error).self) { try await database.query("SELECT x FROM upgrade_probe") }
            let email = try await database.query("SELECT email FROM users WHERE id = 'u1'").first?.optionalString("email")
            #expect(email == "kept@example.com")
        }
        await cleanup()
    }

    @Test func migrateKeepsAnOwnerOnlyCopyFromBeforeAndAStartRemovesIt() async throws {
        let (url, cleanup) = try await TestDatabase.make(.sqlite)
        guard case .sqlite(let path) = url else { return }
        let shipped = Self.migrations(.sqlite)
        let previous = shipped.count - 1
        // A database as the previous release left it, with an account in it.
        try await Self.withDatabase(url) { database in
            try await Migrator(database: database, migrations: Array(shipped.prefix(previous))).migrate(now: 1)
            try await database.query(
                "INSERT INTO users (id, email, email_normalized, created_at, updated_at) VALUES ('u1', 'kept@example.com', 'kept@example.com', 1, 1)")
        }
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = ServerProcess.environment(database: url.environmentValue)
        let migrate = try ServerProcess(["migrate"], environment: environment, directory: directory)
        #expect(try await migrate.exitStatus() == 0, "\(migrate.standardError)")
        let copy = "\(path).schema-\(previous).bak"
        #expect(migrate.standardOutput.contains("A copy of the database before migrating is at \(copy) (mode 0600)"), "\(migrate.standardOutput)")
        #expect(migrate.standardOutput.contains("Applied migrations: \(shipped.count)."))
        #expect(OwnerOnlyFile.permissions(of: copy) == 0o600)
        // The copy is the database as it was: the previous version, the account in it.
        let (copyVersion, copyEmail) = try await Self.withDatabase(.sqlite(path: copy)) { database in
            (try await Migrator(database: database).applied().max(), try await database.query("SELECT email FROM users").first?.optionalString("email"))
        }
        #expect(copyVersion == previous && copyEmail == "kept@example.com")
        try FileManager.default.removeItem(atPath: copy)

        // A start that migrates removes its copy once it listens, or keeps it when asked.
        for keep in [false, true] {
            try FileManager.default.removeItem(atPath: path)
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            try await Self.withDatabase(url) { database in
                try await Migrator(database: database, migrations: Array(shipped.prefix(previous))).migrate(now: 1)
            }
            let server = try ServerProcess(
                environment: environment.merging(["GATEHOUSE_KEEP_MIGRATION_BACKUP": keep ? "on" : "off"]) { $1 }, directory: directory)
            _ = try await server.baseURL()
            #expect(FileManager.default.fileExists(atPath: copy) == keep, "keep \(keep): \(server.standardError)")
            server.signal(SIGTERM)
            _ = try await server.exitStatus()
            try? FileManager.default.removeItem(atPath: copy)
        }
        await cleanup()
    }

    /// An operator command on a database a version behind migrates it the way a start does:
    /// the copy first, kept and named.
    @Test func operatorCommandsCopyBeforeMigratingToo() async throws {
        let (url, cleanup) = try await TestDatabase.make(.sqlite)
        defer { Task { await cleanup() } }
        guard case .sqlite(let path) = url else { return }
        let shipped = Self.migrations(.sqlite)
        try await Self.withDatabase(url) { database in
            try await Migrator(database: database, migrations: Array(shipped.prefix(shipped.count - 1))).migrate(now: 1)
        }
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let list = try ServerProcess(["keys", "list"], environment: ServerProcess.environment(database: url.environmentValue), directory: directory)
        #expect(try await list.exitStatus() == 0, "\(list.standardError)")
        let copy = "\(path).schema-\(shipped.count - 1).bak"
        #expect(list.standardError.contains("A copy of the database before migrating is at \(copy) (mode 0600)."), "\(list.standardError)")
        #expect(OwnerOnlyFile.permissions(of: copy) == 0o600)
        let version = try await Self.withDatabase(url) { try await Migrator(database: $0).applied().max() }
        #expect(version == shipped.count)
    }

    /// `migrate --check` on a database two versions behind (a contract step pending), one behind
    /// (an expand step) and up to date; it applies nothing.
    @Test(arguments: Backend.available)
    func migrateCheckTellsExpandFromContract(_ backend: Backend) async throws {
        let (url, cleanup) = try await TestDatabase.make(backend)
        let shipped = Self.migrations(backend)
        try await Self.withDatabase(url) { database in
            try await Migrator(database: database, migrations: Array(shipped.prefix(29))).migrate(now: 1)
        }
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = ServerProcess.environment(database: url.environmentValue)
        func check() async throws -> (Int32, String) {
            let process = try ServerProcess(["migrate", "--check"], environment: environment, directory: directory)
            return (try await process.exitStatus(), process.standardOutput + process.standardError)
        }
        let (behindTwo, twoText) = try await check()
        #expect(behindTwo == 1, "\(twoText)")
        #expect(twoText.contains("The database is at schema version 29; this release knows up to \(shipped.count)."), "\(twoText)")
        #expect(twoText.contains("0030 ledger_events_and_google_play: contract step; nodes of the previous release stop working on it."), "\(twoText)")
        #expect(twoText.contains("0031 session_doors: expand step; nodes of the previous release keep working."), "\(twoText)")
        // Nothing was applied.
        let afterCheck = try await Self.withDatabase(url) { try await Migrator(database: $0).applied().max() }
        #expect(afterCheck == 29)

        try await Self.withDatabase(url) { database in
            try await Migrator(database: database, migrations: Array(shipped.prefix(30))).migrate(now: 1)
        }
        let (behindOne, oneText) = try await check()
        #expect(behindOne == 0, "\(oneText)")
        #expect(!oneText.contains("0030") && oneText.contains("0031 session_doors: expand step"), "\(oneText)")

        try await Self.withDatabase(url) { try await Migrator(database: $0).migrate(now: 1) }
        let (current, currentText) = try await check()
        #expect(current == 0 && currentText.contains("Nothing is pending."), "\(currentText)")
        await cleanup()
    }
}
