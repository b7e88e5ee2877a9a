import ArgumentParser
import Foundation
import GatehouseServer
import GatehouseWire

/// The process's entry. Swift concurrency's tasks run on SwiftNIO's event loops (its singleton
/// group, the one the server, PostgreSQL's pool and the HTTP client use), so a request is not
/// handed from an event loop to Swift's pool and back at every step (issue 61). Blocking and
/// CPU-heavy work keeps threads of its own: SQLite's writer and readers, the hashing threads.
/// `GATEHOUSE_EVENT_LOOP_EXECUTOR=off` keeps Swift's own pool. Read here, not with the rest of the
/// configuration: the executor is chosen before the first task runs, and the configuration is
/// loaded by one.
@main
enum Main {
    static func main() {
        switch ProcessInfo.processInfo.environment["GATEHOUSE_EVENT_LOOP_EXECUTOR"] {
        case nil, "on":
            _ = runConcurrencyOnEventLoops()
        case "off":
            break
        case let other?:
            printError("gatehouse: configuration error: GATEHOUSE_EVENT_LOOP_EXECUTOR must be on or off, not \(other)")
            exit(78)
        }
        Task {
            await Gatehouse.main()
            exit(EXIT_SUCCESS)
        }
        dispatchMain()
    }
}

struct Gatehouse: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gatehouse",
        abstract: "A self-hostable authentication, account and entitlement server for mobile apps.",
        discussion: """
            Configuration comes from GATEHOUSE_* environment variables (see README.md); with none \
            at all, `gatehouse serve` runs on 127.0.0.1:8080 with ./gatehouse.sqlite.
            """,
        subcommands: [Serve.self, Migrate.self, Keys.self, Users.self, Import.self, Backup.self, Restore.self],
        defaultSubcommand: nil)
}

/// Runs `body` with the loaded configuration; any failure becomes one line on standard
/// error and exit code 1, never a stack trace.
func withConfiguration(_ body: (GatehouseConfig) async throws -> Void) async throws {
    let config: GatehouseConfig
    do {
        config = try await GatehouseConfig.load()
    } catch {
        for problem in error.problems {
            printError("gatehouse: configuration error: \(problem)")
        }
        throw ExitCode(78)
    }
    do {
        try await body(config)
    } catch let exit as ExitCode {
        throw exit
    } catch {
        printError("gatehouse: \(describe(error))")
        throw ExitCode(exitStatus(for: error))
    }
}

/// Writes a line to standard output at once (no buffering), so that scripts and tests
/// reading the server's output see it while the server runs.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP server (migrates the database first).",
        discussion: "Stops gracefully on SIGTERM or SIGINT: in-flight requests finish first; what still runs 10 s later is cancelled.")

    func run() async throws {
        try await withConfiguration { config in
            let watch = ShutdownWatch(logger: makeLogger(config))
            let app = try await buildApplication(
                config: config,
                dependencies: AppDependencies(onListening: { port in
                    say("Gatehouse is running at http://\(config.host):\(port) (preset: \(config.preset.name))")
                    if config.adminKey == nil {
                        let path = URL(fileURLWithPath: config.adminKeyFile).standardizedFileURL.path
                        say("Admin key: in \(path) (mode 0600); send it as 'Authorization: Bearer <key>' to /admin/v1")
                    }
                }, shutdownWatch: watch))
            try await watch.serve(app)
        }
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending database migrations and exit.")

    @Flag(help: "Apply nothing: print each pending migration and whether nodes of the previous release keep working on it (exit 0 when all do, 1 when one does not).")
    var check = false

    func run() async throws {
        try await withConfiguration { config in
            if check {
                let (lines, compatible) = try await Operator.migrationCheck(config)
                lines.forEach { say($0) }
                if !compatible { throw ExitCode(1) }
                return
            }
            let (applied, backup) = try await Operator.migrate(config)
            if let backup {
                say("A copy of the database before migrating is at \(backup) (mode 0600); remove it once you no longer need it.")
            }
            say(applied.isEmpty ? "The database is up to date." : "Applied migrations: \(applied.map(String.init).joined(separator: ", ")).")
        }
    }
}

struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List or rotate the token-signing keys.", subcommands: [List.self, Rotate.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the signing keys and their state.")

        func run() async throws {
            try await withConfiguration { config in
                let keys = try await Operator.listKeys(config)
                print("KID                                          STATUS   CREATED                PUBLISHED UNTIL")
                for key in keys {
                    print(
                        key.kid.padding(toLength: 45, withPad: " ", startingAt: 0)
                            + key.status.padding(toLength: 9, withPad: " ", startingAt: 0)
                            + key.created.padding(toLength: 23, withPad: " ", startingAt: 0) + (key.publishedUntil ?? "-"))
                }
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new active signing key; the old one stays in the JWKS until its tokens expire.")

        func run() async throws {
            try await withConfiguration { config in
                let result = try await Operator.rotateKey(config)
                print("Rotated: \(result.retired) is retired, \(result.active) now signs new tokens.")
            }
        }
    }
}

struct Users: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find, show, disable, enable and delete accounts.", subcommands: [List.self, Show.self, Disable.self, Enable.self, Delete.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List accounts, newest first.")
        @Option(name: .shortAndLong, help: "Only accounts whose email or handle starts with this, or with this id.")
        var query: String?
        @Option(name: .shortAndLong, help: "How many to show (1–200).")
        var limit = 50
        @Option(help: "Show the page after this cursor (printed at the end of the previous page).")
        var before: String?

        func run() async throws {
            try await withConfiguration { config in
                let page = try await Operator.users(config) { try await $0.list(search: query, cursor: before, limit: limit) }
                for entry in page.users {
                    print(Operator.line(entry))
                }
                if let next = page.nextCursor { print("More: --before \(next)") }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one account as JSON.")
        @Argument(help: "The user's id or email.") var user: String

        func run() async throws {
            try await withConfiguration { config in
                print(try Operator.json(try await Operator.users(config) { try await $0.show(user) }))
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Disable an account: it can no longer sign in.")
        @Argument(help: "The user's id or email.") var user: String
        @Option(help: "Why, for the record.") var reason: String?

        func run() async throws {
            try await withConfiguration { config in
                print(Operator.line(try await Operator.users(config) { try await $0.disable(user, reason: reason) }))
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete an account and everything Gatehouse stores about it (records user.deleted).")
        @Argument(help: "The user's id or email.") var user: String
        @Flag(help: "Do it; without this flag nothing is deleted.") var yes = false

        func run() async throws {
            guard yes else {
                print("Nothing deleted: add --yes to delete \(user) for good.")
                return
            }
            try await withConfiguration { config in
                try await Operator.users(config) { try await $0.delete(user) }
                print("deleted \(user)")
            }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a disabled account.")
        @Argument(help: "The user's id or email.") var user: String

        func run() async throws {
            try await withConfiguration { config in
                print(Operator.line(try await Operator.users(config) { try await $0.enable(user) }))
            }
        }
    }
}

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import accounts from Firebase Auth or Supabase Auth (docs/migrate-from-firebase.md, docs/migrate-from-supabase.md).",
        discussion: """
            Each account is written whole or not at all; an account imported before is left as it is, so \
            a run can be repeated or resumed. Rows that cannot be imported are listed with their number.
            """,
        subcommands: [Firebase.self, Supabase.self])

    /// Prints the report; exit code 2 when any row was refused.
    static func finish(_ report: ImportReport) throws {
        for refusal in report.refused {
            printError("row \(refusal.row)\(refusal.sourceID.map { " (\($0))" } ?? ""): \(refusal.reason)")
        }
        say("imported \(report.imported), unchanged \(report.unchanged), refused \(report.refused.count)")
        if !report.refused.isEmpty { throw ExitCode(2) }
    }

    struct Firebase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import the users of `firebase auth:export FILE --format=json`; passwords keep working.")
        @Argument(help: "The JSON file firebase auth:export wrote.") var file: String
        @Option(help: "base64_signer_key of the project's password hash parameters.") var signerKey: String?
        @Option(help: "base64_salt_separator of the project's password hash parameters.") var saltSeparator: String?
        @Option(help: "rounds of the project's password hash parameters.") var rounds: Int?
        @Option(help: "mem_cost of the project's password hash parameters.") var memCost: Int?

        func validate() throws {
            let given = [signerKey != nil, saltSeparator != nil, rounds != nil, memCost != nil]
            if given.contains(true), given.contains(false) {
                throw ValidationError("--signer-key, --salt-separator, --rounds and --mem-cost go together.")
            }
        }

        func run() async throws {
            let hashConfig = signerKey.map {
                FirebaseHashConfig(signerKey: $0, saltSeparator: saltSeparator ?? "", rounds: rounds ?? 0, memCost: memCost ?? 0)
            }
            try await withConfiguration { config in
                try Import.finish(try await Operator.importFirebase(config, file: file, hashConfig: hashConfig))
            }
        }
    }

    struct Supabase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import auth.users and auth.identities from a Supabase project's PostgreSQL database (read-only).")
        @Option(help: "The Supabase database, postgres://USER:PASSWORD@HOST:PORT/postgres.") var from: String

        func run() async throws {
            try await withConfiguration { config in
                let report = try await Operator.importSupabase(config, from: from) { report, total in
                    say("\(report.imported + report.unchanged + report.refused.count) of \(total) rows read")
                }
                try Import.finish(report)
            }
        }
    }
}

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a consistent copy of the SQLite database while the server runs (docs/operations.md).",
        discussion: "PostgreSQL is backed up with its own tools (pg_dump or a base backup with WAL archiving).")
    @Argument(help: "The new file to write; it must not exist.") var destination: String

    func run() async throws {
        try await withConfiguration { config in
            let result = try await Operator.backup(config, to: destination)
            say("backed up to \(result.path) (\(result.bytes) bytes, integrity ok)")
        }
    }
}

struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Put a backup in place of the SQLite database; stop the server first (docs/operations.md).")
    @Argument(help: "The backup file `gatehouse backup` wrote.") var source: String
    @Flag(help: "Replace the existing database; without this flag an existing one is left alone.") var force = false

    func run() async throws {
        try await withConfiguration { config in
            let path = try await Operator.restore(config, from: source, force: force)
            say("restored \(source) to \(path) (integrity ok); start the server")
        }
    }
}
