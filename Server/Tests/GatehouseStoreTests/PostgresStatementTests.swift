import Foundation
import GatehouseStore
import Logging
import GatehouseTestSupport
import Testing

/// Issue 23: queries go to PostgreSQL as named prepared statements, parsed once per connection
/// (PostgreSQL's own `pg_prepared_statements` shows it), one per kind of parameters, and a
/// statement whose table changed under it still answers.
@Suite(.enabled(if: Backend.available.contains(.postgres), "PostgreSQL (GATEHOUSE_TEST_POSTGRES_URL)"))
struct PostgresStatementTests {
    /// Runs `body` on a fresh database with a small table.
    func withTable(_ body: @escaping @Sendable (any SQLDatabase) async throws -> Void) async throws {
        try await TestDatabase.with(.postgres) { database, _ in
            try await database.query("CREATE TABLE prepared_probe (id BIGINT PRIMARY KEY, name TEXT, score DOUBLE PRECISION, data BYTEA)")
            try await body(database)
        }
    }

    @Test func aStatementIsParsedOnceAndRunMany() async throws {
        try await withTable { database in
            let select = "SELECT id, name FROM prepared_probe WHERE id = ? -- parsed once"
            try await database.query("INSERT INTO prepared_probe (id, name) VALUES (?, ?)", [.integer(1), .text("one")])
            // One connection throughout: its prepared statements are its own.
            let (names, prepared) = try await database.transaction { tx in
                var names: [String] = []
                for _ in 0..<7 { names.append(try await tx.query(select, [.integer(1)]).first?.string("name") ?? "") }
                let prepared = try await tx.query(
                    "SELECT generic_plans + custom_plans AS runs FROM pg_prepared_statements WHERE statement = ?",
                    [.text(select.replacingOccurrences(of: "?", with: "$1"))])
                return (names, prepared.map { (try? $0.int("runs")) ?? -1 })
            }
            #expect(names == Array(repeating: "one", count: 7))
            // One statement on this connection, planned for each of the seven runs (custom
            // plans first, then PostgreSQL's generic one), never parsed again.
            #expect(prepared == [7])
        }
    }

    @Test func eachKindOfParametersHasAStatementOfItsOwn() async throws {
        try await withTable { database in
            let insert = "INSERT INTO prepared_probe (id, name, score, data) VALUES (?, ?, ?, ?)"
            try await database.query(insert, [.integer(1), .null, .null, .null])
            try await database.query(insert, [.integer(2), .text("two"), .real(2.5), .blob([0, 1, 2])])
            try await database.query(insert, [.integer(3), .null, .integer(3), .null])
            try await database.query(insert, [.integer(4), .text("four"), .real(0.25), .blob([255])])
            let rows = try await database.query("SELECT id, name, score, data FROM prepared_probe ORDER BY id")
            #expect(try rows.map { try $0.int("id") } == [1, 2, 3, 4])
            #expect(rows.map { $0.columns["name"] } == [.null, .text("two"), .null, .text("four")])
            #expect(rows.map { $0.columns["score"] } == [.null, .real(2.5), .real(3), .real(0.25)])
            #expect(rows.map { $0.columns["data"] } == [.null, .blob([0, 1, 2]), .null, .blob([255])])
        }
    }

    @Test func aStatementWhoseTableChangedStillAnswers() async throws {
        try await TestDatabase.with(.postgres) { _, url in
            guard case .postgres(let address) = url else { return }
            // A pool of two, both of which prepare the statement below.
            let database = try PostgresDatabase(url: address, maximumConnections: 2, logger: TestDatabase.logger)
            try await database.withRunning {
                try await database.query("CREATE TABLE prepared_probe (id BIGINT PRIMARY KEY, name TEXT)")
                try await database.query("INSERT INTO prepared_probe (id, name) VALUES (?, ?)", [.integer(1), .text("one")])
                let select = "SELECT * FROM prepared_probe WHERE id = ? -- the table changes under it"
                let counts = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<20 { group.addTask { try await database.query(select, [.integer(1)]).first?.columns.count ?? 0 } }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                #expect(counts == Array(repeating: 2, count: 20))
                // Another node's migration adds a column: PostgreSQL will not run the old prepared
                // form ("cached plan must not change result type"), so it goes unnamed.
                try await database.query("ALTER TABLE prepared_probe ADD COLUMN added TEXT")
                for _ in 0..<4 {
                    let row = try await database.query(select, [.integer(1)]).first
                    #expect(row?.columns.count == 3 && row?.columns["added"] == .null)
                }
            }
        }
    }

    /// A lease asked for before the pool runs (the server's start-up work and its session feed
    /// lease while the service group is still starting the pool) waits for the pool, and
    /// postgres-nio's warning that `run()` "hasn't been called yet" is never logged.
    @Test(arguments: [false, true])
    func aLeaseBeforeThePoolRunsWaitsForItWithoutAWarning(_ asAService: Bool) async throws {
        try await TestDatabase.with(.postgres) { _, url in
            guard case .postgres(let address) = url else { return }
            let log = KeptLog(level: .debug) { "\($0.level) \($0.message)" }
            let database = try PostgresDatabase(url: address, maximumConnections: 2, logger: log.logger(label: "pool"))
            let early = Task { try await database.query("SELECT 7 AS seven").first?.int("seven") }
            try await Task.sleep(for: .milliseconds(100))
            #expect(log.lines.isEmpty, "\(log.lines)")
            let seven: Int64?
            if asAService {
                let pool = Task { try await database.service.run() }
                seven = try await early.value
                pool.cancel()
                try? await pool.value
            } else {
                seven = try await database.withRunning { try await early.value }
            }
            #expect(seven == 7)
            #expect(!log.lines.contains { $0.contains("hasn't been called yet") }, "\(log.lines)")
        }
    }
}
