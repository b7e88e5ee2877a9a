import Foundation
@testable import GatehouseStore
import Testing

/// Shipped migrations are never edited: a database migrated in the field records each one's
/// checksum and refuses to start when the code's differs. These values were printed from the
/// migrations as shipped; a test failing here means a shipped migration was changed (add a new
/// one instead), not that the table wants updating.
@Suite struct MigrationTests {
    struct Shipped: Sendable, CustomStringConvertible {
        var version: Int
        var name: String
        var sqlite: String
        var postgres: String

        var description: String { "\(version) \(name)" }

        func checksum(_ dialect: SQLDialect) -> String {
            dialect == .sqlite ? sqlite : postgres
        }
    }

    static let shipped: [Shipped] = [
        Shipped(version: 1, name: "users_identities_signing_keys", sqlite: "5d6a53fed42ae49d", postgres: "d39b7be967e1abf9"),
        Shipped(version: 2, name: "sessions_tokens_throttles_audit_secrets", sqlite: "991edc1eea26d723", postgres: "abdef417c70892e6"),
        Shipped(version: 3, name: "outbox", sqlite: "78d80ce161961dc9", postgres: "8a7c0cbe6d6f9402"),
        Shipped(version: 4, name: "email_tokens", sqlite: "c22ff2b743f523f3", postgres: "bcfb75f20dfecef2"),
        Shipped(version: 5, name: "jobs_provider_tokens", sqlite: "ab88ae769148c7cb", postgres: "ebf32ebff887a703"),
        Shipped(version: 6, name: "events_idempotency_profiles", sqlite: "434ca24e91cf68ad", postgres: "156838922b662d4a"),
        Shipped(version: 7, name: "magic_link_upgrades", sqlite: "8fd860ec7762dd2e", postgres: "8fd860ec7762dd2e"),
        Shipped(version: 8, name: "trials_credit_ledger", sqlite: "83ba24ceb61bf3d3", postgres: "cc88ee9bf1a7bdc1"),
        Shipped(version: 9, name: "analytics_anonymous_ids", sqlite: "ca4a76f5cf0aaab2", postgres: "ca4a76f5cf0aaab2"),
        Shipped(version: 10, name: "app_store_subscriptions", sqlite: "d9ecc38393ca0d82", postgres: "3029e0a2b7f1155"),
        Shipped(version: 11, name: "retention_indexes", sqlite: "66240d122a8094e1", postgres: "66240d122a8094e1"),
        Shipped(version: 12, name: "replay_guards", sqlite: "8ee879597b61b16f", postgres: "34a532fd3c9ab362"),
        Shipped(version: 13, name: "usage_meters", sqlite: "c9e6d70c39d86759", postgres: "1f3790d77247d58c"),
        Shipped(version: 14, name: "passkeys", sqlite: "7fbb92b5343c498c", postgres: "18fafb86b6944a1"),
        Shipped(version: 15, name: "second_factors", sqlite: "d8db1892b9abd5fc", postgres: "ea5a3c23618b479"),
        Shipped(version: 16, name: "session_change_notices", sqlite: "72d14ae7c77fe736", postgres: "28ab0c1b263ccfb9"),
        Shipped(version: 17, name: "imported_accounts", sqlite: "bbaa076e498b3bd", postgres: "bbaa076e498b3bd"),
        Shipped(version: 18, name: "pkce_requests", sqlite: "69b0abdba5a19b1b", postgres: "69b0abdba5a19b1b"),
        Shipped(version: 19, name: "trace_context", sqlite: "8349d1ea0f7e5522", postgres: "8349d1ea0f7e5522"),
        Shipped(version: 21, name: "console_sessions", sqlite: "404502953ad2879", postgres: "afaa35a847ca5f8a"),
        Shipped(version: 20, name: "usage_by_period", sqlite: "679d60fd70e51203", postgres: "5e05c0b753486649"),
        Shipped(version: 22, name: "phone_numbers", sqlite: "46d1f1e478db25f0", postgres: "e54bbf06affcc42d"),
        Shipped(version: 23, name: "stripe_and_grants", sqlite: "30e7d316ba507219", postgres: "faa6f0218385ba0f"),
        Shipped(version: 24, name: "openid_provider", sqlite: "b57a391078649f95", postgres: "8867c7834c11142c"),
        Shipped(version: 25, name: "account_metadata", sqlite: "26ee80f36eeadc27", postgres: "26ee80f36eeadc27"),
        Shipped(version: 26, name: "account_fact_notices", sqlite: "72d14ae7c77fe736", postgres: "da85e284d91d1c90"),
        Shipped(version: 27, name: "unproved_phone_index", sqlite: "165216e577018ea6", postgres: "165216e577018ea6"),
        Shipped(version: 28, name: "stripe_customers_kept_by_merges", sqlite: "9a9a2ce295a420ae", postgres: "9a9a2ce295a420ae"),
        Shipped(version: 29, name: "stripe_past_due_since", sqlite: "7a969f6aca92ba5b", postgres: "7a969f6aca92ba5b"),
        Shipped(version: 30, name: "ledger_events_and_google_play", sqlite: "69a9b2220a5873ff", postgres: "ace7efa2e7f65302"),
        Shipped(version: 31, name: "session_doors", sqlite: "b1542ff18a303cf8", postgres: "b1542ff18a303cf8"),
        Shipped(version: 32, name: "growth_indexes", sqlite: "78a0fd06c4b4df37", postgres: "789d7587f6437c19"),
        Shipped(version: 33, name: "events_retention", sqlite: "4ac67c9dde94a074", postgres: "4ac67c9dde94a074"),
        Shipped(version: 34, name: "imported_hashes", sqlite: "562fae904982e53", postgres: "562fae904982e53"),
        Shipped(version: 35, name: "search_covering", sqlite: "f592c6f1f2eac881", postgres: "eedbdf767b05cb3b"),
        Shipped(version: 36, name: "sweep_indexes", sqlite: "82ce2ac68216bf25", postgres: "82ce2ac68216bf25"),
        Shipped(version: 37, name: "search_by_week", sqlite: "707387df762ec1", postgres: "dde63806a334f719"),
    ]

    @Test(arguments: [SQLDialect.sqlite, .postgres])
    func shippedMigrationsAreNeverEdited(_ dialect: SQLDialect) {
        let migrations = Migrations.all(for: dialect)
        for shipped in Self.shipped {
            let found = migrations.filter { $0.version == shipped.version }
            #expect(found.count == 1, "\(dialect): migration \(shipped.version) appears \(found.count) times")
            guard let migration = found.first else { continue }
            #expect(migration.name == shipped.name, "\(dialect): migration \(shipped)")
            #expect(migration.checksum == shipped.checksum(dialect), "\(dialect): migration \(shipped) was edited (its checksum is \(migration.checksum) now)")
        }
    }

    /// Every bundled migration has its pinned checksums above: a new one fails here until its
    /// row is added (issue 62: the list once lacked 0022–0026).
    @Test(arguments: [SQLDialect.sqlite, .postgres])
    func everyMigrationHasItsChecksumPinned(_ dialect: SQLDialect) {
        #expect(Self.shipped.map(\.version).sorted() == Migrations.all(for: dialect).map(\.version))
    }

    @Test func bothDatabasesListTheSameMigrations() {
        let sqlite = Migrations.all(for: .sqlite).map { "\($0.version) \($0.name)" }
        let postgres = Migrations.all(for: .postgres).map { "\($0.version) \($0.name)" }
        #expect(sqlite == postgres)
        #expect(Migrations.all(for: .sqlite).map(\.version) == Array(1...sqlite.count))
    }

    // MARK: Reading migration files

    @Test func aFileNameGivesVersionAndName() throws {
        let (version, name) = try Migrations.versionAndName("0013_usage_meters.sql")
        #expect(version == 13)
        #expect(name == "usage_meters")
        let first = try Migrations.versionAndName("0001_a.sql")
        #expect(first.0 == 1 && first.1 == "a")
    }

    @Test(arguments: [
        "1_users.sql", "001_users.sql", "00001_users.sql", "0000_users.sql", "abcd_users.sql", "0001users.sql",
        "0001-users.sql", "0001_.sql", "0001_Users.sql", "0001_users-x.sql", "0001_users.SQL", "0001_users.sql.orig",
        "0001_users.txt", "0001_users", "README.md", "_0001_users.sql", "0001_users .sql",
    ])
    func aMalformedFileNameIsRefused(_ fileName: String) {
        #expect(throws: MigrationFileError.malformedName(fileName)) {
            try Migrations.load(files: [(fileName, "SELECT 1;\n")])
        }
    }

    @Test func aDuplicatedVersionIsRefused() {
        let files: [(name: String, text: String)] = [("0001_a.sql", "SELECT 1;\n"), ("0002_b.sql", "SELECT 2;\n"), ("0002_c.sql", "SELECT 3;\n")]
        #expect(throws: MigrationFileError.duplicateVersion(2, ["0002_b.sql", "0002_c.sql"])) {
            try Migrations.load(files: files)
        }
    }

    @Test func aMissingVersionIsRefused() {
        #expect(throws: MigrationFileError.missingVersion(2)) {
            try Migrations.load(files: [("0003_c.sql", "SELECT 3;\n"), ("0001_a.sql", "SELECT 1;\n")])
        }
        #expect(throws: MigrationFileError.missingVersion(1)) {
            try Migrations.load(files: [("0002_b.sql", "SELECT 2;\n")])
        }
    }

    @Test func filesLoadInOrderOfVersion() throws {
        let migrations = try Migrations.load(files: [("0002_b.sql", "SELECT 2;\n"), ("0001_a.sql", "SELECT 1;\n")])
        #expect(migrations.map(\.version) == [1, 2])
        #expect(migrations.map(\.name) == ["a", "b"])
        #expect(migrations.map(\.statements) == [["SELECT 1"], ["SELECT 2"]])
    }

    @Test func statementsAreExactlyTheirLines() throws {
        let text = """
            -- A comment before the first statement is no part of it.

            CREATE TABLE t (
                a TEXT,

                b TEXT
            );
            CREATE INDEX t_a ON t (a);\t\u{20}

              -- Nor is one between statements, indented or not.
            -- x
              ALTER TABLE t ADD COLUMN c TEXT ;
            """
        #expect(
            try Migrations.statements(text, file: "f")
                == ["CREATE TABLE t (\n    a TEXT,\n\n    b TEXT\n)", "CREATE INDEX t_a ON t (a)", "  ALTER TABLE t ADD COLUMN c TEXT "])
        // A final line end or none, the same statements.
        #expect(try Migrations.statements("SELECT 1;", file: "f") == ["SELECT 1"])
        #expect(try Migrations.statements("SELECT 1;\n\n", file: "f") == ["SELECT 1"])
    }

    @Test func aFunctionBodyBetweenDollarQuotesKeepsItsSemicolons() throws {
        let text = """
            CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM 1;
                RETURN NULL;
            END
            $$;
            CREATE TRIGGER t AFTER DELETE ON t FOR EACH ROW EXECUTE FUNCTION f();
            """
        #expect(
            try Migrations.statements(text, file: "f") == [
                "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n    PERFORM 1;\n    RETURN NULL;\nEND\n$$",
                "CREATE TRIGGER t AFTER DELETE ON t FOR EACH ROW EXECUTE FUNCTION f()",
            ])
        // A body on one line, too.
        #expect(try Migrations.statements("DO $$ BEGIN PERFORM 1; END $$;\n", file: "f") == ["DO $$ BEGIN PERFORM 1; END $$"])
    }

    @Test func malformedTextIsRefused() {
        let cases: [(String, MigrationFileError)] = [
            ("CREATE TABLE t (a TEXT);\nCREATE TABLE u (\n    a TEXT\n)\n", .syntax(file: "f", line: 2, "a statement without its closing ';'")),
            ("SELECT 1; SELECT 2;\n", .syntax(file: "f", line: 1, "';' inside a statement")),
            ("CREATE TABLE t (a TEXT); -- why\nSELECT 1;\n", .syntax(file: "f", line: 1, "';' inside a statement")),
            ("SELECT 1;\n;\n", .syntax(file: "f", line: 2, "an empty statement")),
            ("SELECT 1;\r\nSELECT 2;\r\n", .syntax(file: "f", line: 1, "a carriage return (lines must end with LF alone)")),
            ("-- nothing but a comment\n\n", .syntax(file: "f", line: 1, "no statements")),
            ("", .syntax(file: "f", line: 1, "no statements")),
            ("SELECT 1;\nDO $$ BEGIN\n  PERFORM 1;\nEND;\n", .syntax(file: "f", line: 2, "a '$$' body without its closing '$$'")),
        ]
        for (text, error) in cases {
            #expect(throws: error, "\(text.debugDescription)") { try Migrations.statements(text, file: "f") }
        }
    }

    @Test func aDirectoryOfFilesLoads() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-migrations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "CREATE TABLE a (x TEXT);\n".write(to: directory.appendingPathComponent("0001_a.sql"), atomically: true, encoding: .utf8)
        try "CREATE TABLE b (x TEXT);\n".write(to: directory.appendingPathComponent("0002_b.sql"), atomically: true, encoding: .utf8)
        // Hidden files (an editor's, Finder's) are not migrations.
        try "junk".write(to: directory.appendingPathComponent(".DS_Store"), atomically: true, encoding: .utf8)
        let migrations = try Migrations.load(directory: directory)
        #expect(migrations.map { "\($0.version) \($0.name)" } == ["1 a", "2 b"])
        try "SELECT 1;\n".write(to: directory.appendingPathComponent("0003 c.sql"), atomically: true, encoding: .utf8)
        #expect(throws: MigrationFileError.malformedName("0003 c.sql")) { try Migrations.load(directory: directory) }
    }
}
