import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import Testing

/// Issue 65's loader (`gatehouse-bench load`): the accounts it writes through the store are the
/// shape it claims, and real enough that the server signs one in and answers `/v1/me` for it.
@Suite struct LoaderTests {
    /// The loader's report: rows per table.
    struct Report: Decodable {
        var accounts: Int
        var rows: [String: Int]
    }

    @Test(arguments: Backend.available)
    func loadedAccountsHaveTheirShapeAndSignIn(_ backend: Backend) async throws {
        let (url, cleanup) = try await TestDatabase.make(backend)
        defer { Task { await cleanup() } }
        let bench = try ServerProcess.built("gatehouse-bench").path
        let loaded = try await Self.load(bench, url)
        #expect(loaded.status == 0, "\(loaded.text)")
        let report = try JSONDecoder().decode(Report.self, from: Data(try #require(loaded.text.split(separator: "\n").last).utf8))
        #expect(report.accounts == 60)
        // Of 60: 6 anonymous (one session, a chain of three), 54 with two sessions (chains of 7
        // and 4); 36 by email (6 of them linked to Google too), 6 each by Apple, Google and phone.
        #expect(report.rows["users"] == 60)
        #expect(report.rows["sessions"] == 6 + 54 * 2)
        #expect(report.rows["refresh_tokens"] == 6 * 3 + 54 * 11)
        #expect(report.rows["identities"] == 36 + 6 + 6 + 6 + 6)
        #expect(report.rows["audit_log"] == 60 * 12)
        #expect(report.rows["passkeys"] == 6)
        #expect(report.rows["mfa_factors"] == 3)
        #expect(report.rows["oauth_consents"] == 3)
        // Each table a server appends to as time passes is in the order of its times, as a
        // server's is: its oldest rows, which a retention sweep deletes, are its first pages.
        let inversions = try await UpgradeSafetyTests.withDatabase(url) { database in
            let position = database.dialect == .postgres ? "ctid" : "rowid"
            var found: [String: Int] = [:]
            for (table, order, time) in [
                ("audit_log", "seq", "created_at"), ("events", "seq", "created_at"), ("sessions", position, "created_at"),
                ("refresh_tokens", position, "issued_at"),
            ] {
                let sql = "SELECT COUNT(*) AS n FROM (SELECT \(time) AS at, LAG(\(time)) OVER (ORDER BY \(order)) AS before FROM \(table)) AS t WHERE at < before"
                found[table] = Int(try await database.query(sql).first?.int("n") ?? -1)
            }
            return found
        }
        #expect(inversions == ["audit_log": 0, "events": 0, "sessions": 0, "refresh_tokens": 0])
        // A second load into the same database adds nothing.
        let again = try await Self.load(bench, url)
        #expect(again.status != 0 && again.text.contains("already holds loaded accounts"), "\(again.text)")

        try await TestApp.serve(url, adjust: { $0.ipLimits = false }) { client, _ in
            let api = AuthClient(client: client)
            let login = try await api.login("load5@example.com", "load-password-1")
            #expect(login.status == .ok, "\(login.text)")
            let token = try login.json(AuthResponse.self).session.accessToken
            let me = try await api.get("/v1/me", token: token)
            #expect(me.status == .ok)
            #expect(try me.json(MeResponse.self).user.email == "load5@example.com")
            #expect(try await api.login("load5@example.com", "another password").status == .unauthorized)
        }
    }

    /// `gatehouse-bench churn PATH 4 200`: the number of accounts stays, and each day the sweep
    /// deletes what aged out and gives every page it freed back to the file system (none is left
    /// free). Whether the file then stops growing takes longer than a test: BENCHMARKS.md.
    @Test func churnKeepsTheAccountsAndGivesFreedPagesBack() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("churn-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let bench = try ServerProcess.built("gatehouse-bench").path
        let run = try await EmailProcessTests.run(
            bench, ["churn", directory.appendingPathComponent("churn.sqlite").path, "4", "200"],
            environment: ["GATEHOUSE_ARGON2_MEMORY_KIB": "8192", "GATEHOUSE_ARGON2_ITERATIONS": "1"])
        #expect(run.status == 0, "\(run.text)")
        struct Day: Decodable {
            var day: Int
            var free_pages: Int
            var swept: [String: Int]
            var rows: [String: Int]
        }
        let days = try run.text.split(separator: "\n").filter { $0.hasPrefix("{") }.map { try JSONDecoder().decode(Day.self, from: Data($0.utf8)) }
        #expect(days.map(\.day) == [0, 1, 2, 3, 4])
        #expect(days.allSatisfy { $0.rows["users"] == 200 })
        #expect(days.allSatisfy { ($0.swept["audit_rows"] ?? 0) > 0 })
        #expect(days.contains { ($0.swept["refresh_tokens"] ?? 0) > 0 })
        #expect(days.allSatisfy { ($0.swept["pages_released"] ?? 0) > 0 && $0.free_pages == 0 }, "\(days.map(\.free_pages))")
    }

    /// `gatehouse-bench statements URL 20` (issue 61, step 26): a figure for every operation it
    /// names, on its tasks' executor, and its table dropped afterwards.
    @Test(arguments: Backend.available)
    func statementsTimesEachOperationAndDropsItsTable(_ backend: Backend) async throws {
        let (url, cleanup) = try await TestDatabase.make(backend)
        defer { Task { await cleanup() } }
        let bench = try ServerProcess.built("gatehouse-bench").path
        struct Figures: Decodable {
            var database: String
            var executor: String
            var cpu_us: [String: Double]
            var wall_us: [String: Double]
            var in_transaction_cpu_us: Double
        }
        for (setting, executor) in [("on", "event loops"), ("off", "swift pool")] {
            let run = try await EmailProcessTests.run(
                bench, ["statements", url.environmentValue, "20"], environment: ["GATEHOUSE_EVENT_LOOP_EXECUTOR": setting])
            #expect(run.status == 0, "\(run.text)")
            let figures = try JSONDecoder().decode(Figures.self, from: Data(try #require(run.text.split(separator: "\n").last).utf8))
            #expect(figures.database == backend.rawValue)
            #expect(figures.executor == executor)
            let operations: Set = ["read", "write", "transaction_0", "transaction_1", "transaction_4", "transaction_8"]
            #expect(Set(figures.cpu_us.keys) == operations && Set(figures.wall_us.keys) == operations)
            #expect(figures.wall_us.values.allSatisfy { $0 > 0 }, "\(figures.wall_us)")
        }
        let left = try await UpgradeSafetyTests.withDatabase(url) { database in
            let sql =
                database.dialect == .postgres
                ? "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_name = 'bench_statements'"
                : "SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'bench_statements'"
            return try await database.query(sql).first?.int("n")
        }
        #expect(left == 0)
    }

    /// `gatehouse-bench load URL 60`: the hash at a low cost (the production cost is not what
    /// this is about), set for the child only.
    static func load(_ bench: String, _ url: DatabaseURL) async throws -> (status: Int32, text: String) {
        try await EmailProcessTests.run(
            bench, ["load", url.environmentValue, "60"], environment: ["GATEHOUSE_ARGON2_MEMORY_KIB": "8192", "GATEHOUSE_ARGON2_ITERATIONS": "1"])
    }
}
