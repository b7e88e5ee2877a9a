import Foundation
@testable import GatehouseStore
import Testing

/// Issue 62: rolling upgrades rest on expand, then contract one release later
/// (docs/operations.md, "Upgrading"). A migration that drops, renames or narrows something is
/// marked with a `-- contract:` line, and a contract step takes away nothing the code of the
/// release before it still names. `gatehouse migrate --check` reads the same marks.
@Suite struct MigrationCompatibilityTests {
    /// Contract steps shipped before the rule, whose removed names the code before them still
    /// named: upgrading across them means stopping every node of the previous release first
    /// (`migrate --check` says so). No other may join this list.
    static let shippedBeforeTheRule: [Int: Set<String>] = [30: ["app_store_notifications", "stripe_events"]]

    @Test(arguments: [SQLDialect.sqlite, .postgres])
    func everyDestructiveStepIsMarkedAsAContractStep(_ dialect: SQLDialect) {
        #expect(Migrations.unmarkedContractSteps(Migrations.all(for: dialect)) == [])
        // The shipped contract steps, and only they, say the previous release stops working.
        #expect(Migrations.all(for: dialect).filter { !$0.keepsPreviousReleaseWorking }.map(\.version) == [20, 28, 30])
    }

    /// Tried: each kind of destructive statement in an unmarked file is reported; marked, it is
    /// not; additive statements never are.
    @Test func anUnmarkedDestructiveStepIsReported() throws {
        let destructive = [
            "ALTER TABLE a DROP COLUMN y;", "DROP TABLE a;", "DROP TABLE IF EXISTS a;", "ALTER TABLE a RENAME TO b;",
            "ALTER TABLE a RENAME COLUMN y TO z;", "ALTER TABLE a ALTER COLUMN y SET NOT NULL;", "ALTER TABLE a ALTER COLUMN y TYPE BIGINT;",
            "ALTER TABLE a DROP CONSTRAINT a_pkey;", "DROP VIEW v;",
        ]
        for statement in destructive {
            let migrations = try Migrations.load(files: [("0001_a.sql", "CREATE TABLE a (x TEXT, y TEXT);\n"), ("0002_b.sql", statement + "\n")])
            let found = Migrations.unmarkedContractSteps(migrations)
            #expect(found.map(\.version) == [2], "\(statement)")
            #expect(found.first?.description.contains("without a '-- contract:' line") == true)
            let marked = try Migrations.load(files: [
                ("0001_a.sql", "CREATE TABLE a (x TEXT, y TEXT);\n"), ("0002_b.sql", "-- contract: takes y away\n" + statement + "\n"),
            ])
            #expect(Migrations.unmarkedContractSteps(marked) == [], "\(statement)")
            #expect(marked[1].contract == "takes y away")
        }
        let additive = [
            "ALTER TABLE a ADD COLUMN z TEXT;", "CREATE INDEX a_x ON a (x);", "CREATE TABLE c (x TEXT);",
            "ALTER TABLE a ALTER COLUMN y DROP NOT NULL;", "DROP INDEX a_x;", "UPDATE a SET x = 'dropped table';",
        ]
        for statement in additive {
            let migrations = try Migrations.load(files: [("0001_a.sql", "CREATE TABLE a (x TEXT, y TEXT);\n"), ("0002_b.sql", statement + "\n")])
            #expect(Migrations.unmarkedContractSteps(migrations) == [], "\(statement)")
        }
    }

    @Test func removedNamesLeaveOutRebuilds() throws {
        let rebuild = try Migrations.migration(
            fileName: "0002_rebuild.sql",
            text: "CREATE TABLE a_new (x TEXT);\nDROP TABLE a;\nALTER TABLE a_new RENAME TO a;\nALTER TABLE b DROP COLUMN IF EXISTS c;\n")
        #expect(rebuild.removedNames == ["c"])
        let renamed = try Migrations.migration(fileName: "0003_renamed.sql", text: "ALTER TABLE old_name RENAME TO new_name;\nALTER TABLE t RENAME COLUMN a TO b;\n")
        #expect(renamed.removedNames == ["old_name", "a"])
        #expect(Migrations.all(for: .sqlite)[29].removedNames == ["app_store_notifications", "stripe_events"])
        #expect(Migrations.all(for: .postgres)[27].removedNames == [])
    }

    /// Every shipped contract step against the code of the release before it (the repository
    /// as it was just before the migration's file was added): none removes a name that code
    /// still used, but for the ones shipped before the rule.
    @Test(arguments: [SQLDialect.sqlite, .postgres])
    func aContractStepRemovesNothingThePreviousReleaseStillNames(_ dialect: SQLDialect) throws {
        let repository = try Repository()
        for migration in Migrations.all(for: dialect) where !migration.removedNames.isEmpty {
            let file = "Server/Sources/GatehouseStore/Migrations/\(dialect.rawValue)/\(String(format: "%04d", migration.version))_\(migration.name).sql"
            let previous = try repository.previousRelease(of: file)
            let named = try repository.stillNamed(migration.removedNames, at: previous)
            #expect(Set(named).isSubset(of: Self.shippedBeforeTheRule[migration.version] ?? []), "\(file): \(named) still named at \(previous)")
        }
        // The rule catches what it is for (tried): a contract step dropping `users` now.
        let tried = try Migrations.migration(fileName: "0099_drop_users.sql", text: "-- contract: tried\nDROP TABLE users;\n")
        #expect(try repository.stillNamed(tried.removedNames, at: "HEAD") == ["users"])
        // And the list of exceptions is what the history shows, not a blanket pass.
        let file = "Server/Sources/GatehouseStore/Migrations/\(dialect.rawValue)/0030_ledger_events_and_google_play.sql"
        #expect(Set(try repository.stillNamed(["app_store_notifications", "stripe_events"], at: try repository.previousRelease(of: file))) == Self.shippedBeforeTheRule[30])
    }

    /// The repository's history through git (a shallow clone fails here: the rule needs it).
    struct Repository {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()

        init() throws {
            let shallow = try git(["rev-parse", "--is-shallow-repository"]).trimmingCharacters(in: .whitespacesAndNewlines)
            guard shallow == "false" else { throw Failure("the migration rule needs the repository's history: git fetch --unshallow") }
        }

        /// The revision of the release before `file` was added: the parent of the commit that
        /// added it, or HEAD while it is not committed yet.
        func previousRelease(of file: String) throws -> String {
            let added = try git(["log", "--diff-filter=A", "--format=%H", "--", file]).split(separator: "\n").last
            return added.map { "\($0)^" } ?? "HEAD"
        }

        /// Which of `names` the Swift sources (tests left out) at `revision` use as whole words.
        func stillNamed(_ names: [String], at revision: String) throws -> [String] {
            try names.filter { name in
                let found = try git(["grep", "-l", "-w", "-I", "-e", name, revision, "--", "*.swift", ":(exclude)**/Tests/**"], allowNoMatch: true)
                return !found.isEmpty
            }
        }

        private func git(_ arguments: [String], allowNoMatch: Bool = false) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["git", "-C", root.path] + arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Blocks its thread: git answers within milliseconds, and waitUntilExit after it.
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            // git grep answers 1 when nothing matches.
            guard process.terminationStatus == 0 || (allowNoMatch && process.terminationStatus == 1) else {
                throw Failure("git \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
            }
            return String(decoding: data, as: UTF8.self)
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
