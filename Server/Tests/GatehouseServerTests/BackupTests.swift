import Foundation
import GatehouseStore
import GatehouseTestSupport
import Logging
import Synchronization
import Testing

/// Backups (issue 25): `gatehouse backup` of a SQLite database while a real server takes
/// sign-ups and refreshes, `gatehouse restore` into a new place and a server on it; and the
/// PostgreSQL drill of docs/operations.md (pg_dump, a new cluster, pg_restore, sign in).
@Suite struct BackupTests {
    static let password = "correct horse battery"

    static func json(_ reply: HTTP.Reply) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: reply.body) as? [String: Any])
    }

    static func post(_ base: URL, _ path: String, _ body: [String: Any]) async throws -> HTTP.Reply {
        try await HTTP.request(
            base.appendingPathComponent(path), method: "POST", headers: ["Content-Type": "application/json"],
            body: try JSONSerialization.data(withJSONObject: body))
    }

    /// Signs `email` up; its refresh token.
    static func signUp(_ base: URL, _ email: String) async throws -> String {
        let reply = try await post(base, "/v1/auth/signup", ["email": email, "password": password])
        #expect(reply.status == 201, "\(reply.text)")
        let session = try #require(try json(reply)["session"] as? [String: Any])
        return try #require(session["refresh_token"] as? String)
    }

    /// Runs `gatehouse ARGUMENTS` with `environment`; its exit status and output.
    static func gatehouse(_ arguments: [String], _ environment: [String: String], in directory: URL) async throws -> (Int32, String) {
        let process = try ServerProcess(arguments, environment: environment, directory: directory)
        return (try await process.exitStatus(), process.standardOutput + process.standardError)
    }

    final class Tally: Sendable {
        let state = Mutex((ok: 0, refused: [Int]()))
        /// The load stops when this is set (a flag, not task cancellation: URLSession on Linux may
        /// never answer a request whose task was cancelled).
        let stop = Atomic(false)
        func record(_ status: Int) { state.withLock { if (200..<300).contains(status) { $0.ok += 1 } else { $0.refused.append(status) } } }
    }

    @Test func aBackupTakenUnderLoadHoldsEveryAcknowledgedWriteAndItsSessionsServe() async throws {
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("gatehouse.sqlite").path
        let environment = ServerProcess.environment(database: "sqlite://" + database, ["GATEHOUSE_IP_LIMITS": "off"])
        let server = try ServerProcess(["serve"], environment: environment, directory: directory)
        let base = try await server.baseURL()

        // Sign-ups and refresh chains go on while the backup is taken.
        let tally = Tally()
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var index = 0
                        var refresh: String?
                        while !tally.stop.load(ordering: .relaxed) {
                            index += 1
                            if let token = refresh, index % 2 == 0 {
                                guard let reply = try? await Self.post(base, "/v1/auth/refresh", ["refresh_token": token]) else { continue }
                                tally.record(reply.status)
                                refresh = ((try? Self.json(reply))?["session"] as? [String: Any])?["refresh_token"] as? String
                            } else {
                                guard let reply = try? await Self.post(base, "/v1/auth/signup", ["email": "load-\(worker)-\(index)@example.com", "password": Self.password])
                                else { continue }
                                tally.record(reply.status)
                                refresh = ((try? Self.json(reply))?["session"] as? [String: Any])?["refresh_token"] as? String
                            }
                        }
                    }
                }
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        // Acknowledged just before the backup begins, with the load going on: these are in the
        // write-ahead log, not yet in the main file (a plain copy of the file would miss them).
        var acknowledged: [(email: String, refresh: String)] = []
        for index in 0..<12 {
            let email = "before-\(index)@example.com"
            acknowledged.append((email, try await Self.signUp(base, email)))
        }
        let backupFile = directory.appendingPathComponent("backup.sqlite").path
        let (backedUp, backupOutput) = try await Self.gatehouse(["backup", backupFile], environment, in: directory)
        try await Task.sleep(for: .milliseconds(200))
        tally.stop.store(true, ordering: .relaxed)
        await load.value
        #expect(backedUp == 0 && backupOutput.contains("integrity ok"), "\(backupOutput)")
        let (ok, refused) = tally.state.withLock { ($0.ok, $0.refused) }
        #expect(ok > 4 && refused.isEmpty, "the server kept serving during the backup: \(ok) ok, refused \(refused)")
        let (again, againOutput) = try await Self.gatehouse(["backup", backupFile], environment, in: directory)
        #expect(again == 1 && againOutput.contains("exists already"), "\(againOutput)")
        server.signal(SIGTERM)
        _ = try await server.exitStatus()

        // Restored into a new place: the file is sound and a server on it serves those sessions.
        let elsewhere = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        let restoredPath = elsewhere.appendingPathComponent("restored.sqlite").path
        let restoredEnvironment = ServerProcess.environment(database: "sqlite://" + restoredPath, ["GATEHOUSE_IP_LIMITS": "off"])
        let (restored, restoreOutput) = try await Self.gatehouse(["restore", backupFile], restoredEnvironment, in: elsewhere)
        #expect(restored == 0 && restoreOutput.contains("integrity ok"), "\(restoreOutput)")
        let (refusedRestore, refusedOutput) = try await Self.gatehouse(["restore", backupFile], restoredEnvironment, in: elsewhere)
        #expect(refusedRestore == 1 && refusedOutput.contains("add --force"), "\(refusedOutput)")
        let notABackup = elsewhere.appendingPathComponent("garbage.sqlite")
        try Data(repeating: 0x41, count: 8192).write(to: notABackup)
        let (garbage, garbageOutput) = try await Self.gatehouse(["restore", notABackup.path, "--force"], restoredEnvironment, in: elsewhere)
        #expect(garbage == 1, "\(garbageOutput)")
        let (forced, forcedOutput) = try await Self.gatehouse(["restore", backupFile, "--force"], restoredEnvironment, in: elsewhere)
        #expect(forced == 0, "\(forcedOutput)")

        let check = try await SQLiteDatabase.open(path: restoredPath, logger: Logger(label: "backup-test"))
        let verdict = try await check.query("PRAGMA integrity_check").compactMap { try? $0.string("integrity_check") }
        await check.shutdown()
        #expect(verdict == ["ok"])
        let second = try ServerProcess(["serve"], environment: restoredEnvironment, directory: elsewhere)
        let restoredBase = try await second.baseURL()
        for account in acknowledged {
            let refreshed = try await Self.post(restoredBase, "/v1/auth/refresh", ["refresh_token": account.refresh])
            #expect(refreshed.status == 200, "\(account.email): \(refreshed.text)")
            let login = try await Self.post(restoredBase, "/v1/auth/login", ["email": account.email, "password": Self.password])
            #expect(login.status == 200, "\(account.email): \(login.text)")
        }
        second.signal(SIGTERM)
        _ = try await second.exitStatus()
    }

    /// Issue 40, finding 6: the live database, its WAL and every backup are 0600, a restore
    /// sets 0600 whatever the backup's mode, and a restore refuses a database with a trigger
    /// planted in it (before: 0644 throughout, and the planted trigger was restored).
    @Test func filesWithSecretsAreOwnerOnlyAndARestoreRefusesAForeignSchema() async throws {
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("gatehouse.sqlite").path
        let environment = ServerProcess.environment(database: "sqlite://" + database)
        let server = try ServerProcess(["serve"], environment: environment, directory: directory)
        _ = try await Self.signUp(try await server.baseURL(), "mode@example.com")
        #expect(OwnerOnlyFile.permissions(of: database) == 0o600)
        #expect(OwnerOnlyFile.permissions(of: database + "-wal") == 0o600)
        let backupFile = directory.appendingPathComponent("backup.sqlite").path
        let (backedUp, backupOutput) = try await Self.gatehouse(["backup", backupFile], environment, in: directory)
        #expect(backedUp == 0, "\(backupOutput)")
        #expect(OwnerOnlyFile.permissions(of: backupFile) == 0o600)
        server.signal(SIGTERM)
        _ = try await server.exitStatus()

        // A backup left world-readable by hand still restores 0600.
        chmod(backupFile, 0o644)
        let elsewhere = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        let restoredPath = elsewhere.appendingPathComponent("restored.sqlite").path
        let restoredEnvironment = ServerProcess.environment(database: "sqlite://" + restoredPath)
        let (restored, restoreOutput) = try await Self.gatehouse(["restore", backupFile], restoredEnvironment, in: elsewhere)
        #expect(restored == 0, "\(restoreOutput)")
        #expect(OwnerOnlyFile.permissions(of: restoredPath) == 0o600)

        // A trigger planted in the backup: refused, and the database in place is untouched.
        let planted = try await SQLiteDatabase.open(path: backupFile, logger: Logger(label: "backup-test"))
        try await planted.query(
            "CREATE TRIGGER steal AFTER UPDATE OF password_hash ON users BEGIN INSERT INTO audit_log (id, created_at, event, outcome) VALUES (hex(randomblob(8)), 0, NEW.password_hash, 'x'); END")
        await planted.shutdown()
        let (refused, refusedOutput) = try await Self.gatehouse(["restore", backupFile, "--force"], restoredEnvironment, in: elsewhere)
        #expect(refused == 1 && refusedOutput.contains("schema is not Gatehouse's") && refusedOutput.contains("trigger steal"), "\(refusedOutput)")
        let kept = try await SQLiteDatabase.open(path: restoredPath, logger: Logger(label: "backup-test"))
        let triggers = try await kept.query("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        await kept.shutdown()
        #expect(triggers.isEmpty)
    }

    @Test(.requires(PrivatePostgres.binaries != nil, "GATEHOUSE_TEST_PG_BINDIR"))
    func thePostgresDrillRestoresADumpIntoANewClusterAndSignsIn() async throws {
        let first = try await PrivatePostgres()
        let second = try await PrivatePostgres()
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let bindir = try #require(PrivatePostgres.binaries)
            let server = try ServerProcess(["serve"], environment: ServerProcess.environment(database: first.url), directory: directory)
            let base = try await server.baseURL()
            let refresh = try await Self.signUp(base, "drill@example.com")
            server.signal(SIGTERM)
            _ = try await server.exitStatus()

            // docs/operations.md: pg_dump in the custom format, pg_restore into a new cluster.
            let dump = directory.appendingPathComponent("gatehouse.dump").path
            try await Command.run(bindir + "/pg_dump", ["--format=custom", "--file", dump, "--dbname", first.url])
            try await Command.run(bindir + "/pg_restore", ["--no-owner", "--exit-on-error", "--dbname", second.url, dump])

            let restored = try ServerProcess(["serve"], environment: ServerProcess.environment(database: second.url), directory: directory)
            let restoredBase = try await restored.baseURL()
            let login = try await Self.post(restoredBase, "/v1/auth/login", ["email": "drill@example.com", "password": Self.password])
            #expect(login.status == 200, "\(login.text)")
            let refreshed = try await Self.post(restoredBase, "/v1/auth/refresh", ["refresh_token": refresh])
            #expect(refreshed.status == 200, "\(refreshed.text)")
            restored.signal(SIGTERM)
            _ = try await restored.exitStatus()
        } catch {
            await first.remove()
            await second.remove()
            throw error
        }
        await first.remove()
        await second.remove()
    }
}
