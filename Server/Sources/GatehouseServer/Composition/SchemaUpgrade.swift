import Foundation
import GatehouseStore
import Logging
import Synchronization

/// Bringing a database to this binary's schema, the one way `serve` and `gatehouse migrate`
/// both take (issue 62). On SQLite, a database that has a schema and migrations pending is
/// copied first, beside itself (`<file>.schema-<version>.bak`, mode 0600, a `VACUUM INTO`
/// snapshot), so a failed upgrade can be undone by putting the copy back. Each migration is
/// one transaction: one that fails leaves the database at the version before it.
enum SchemaUpgrade {
    struct Outcome: Sendable {
        var applied: [Int]
        /// The copy made before migrating (nil: nothing was pending, a new database, or PostgreSQL).
        var backup: String?
    }

    static func run(_ database: any SQLDatabase, url: DatabaseURL, now: Int64) async throws -> Outcome {
        var backup: String?
        if case .sqlite(let path) = url {
            let state = try await check(database)
            if let current = state.current, !state.pending.isEmpty {
                backup = try await copy(database, path: path, version: current, now: now)
            }
        }
        return Outcome(applied: try await Migrator(database: database).migrate(now: now), backup: backup)
    }

    /// What `gatehouse migrate --check` prints: the schema's version and each pending
    /// migration, with whether nodes of the previous release keep working on it.
    struct Check: Sendable {
        var current: Int?
        /// The newest version this binary knows.
        var known: Int
        var pending: [Migration]
        var compatible: Bool { pending.allSatisfy(\.keepsPreviousReleaseWorking) }

        var lines: [String] {
            var lines = ["The database is at schema version \(current.map(String.init) ?? "none"); this release knows up to \(known)."]
            if pending.isEmpty { lines.append("Nothing is pending.") }
            for migration in pending {
                let number = String(format: "%04d", migration.version)
                if migration.keepsPreviousReleaseWorking {
                    lines.append("\(number) \(migration.name): expand step; nodes of the previous release keep working.")
                } else {
                    lines.append(
                        "\(number) \(migration.name): contract step; nodes of the previous release stop working on it. Stop them before migrating. (\(migration.contract ?? "not marked"))"
                    )
                }
            }
            return lines
        }
    }

    static func check(_ database: any SQLDatabase) async throws -> Check {
        let migrator = Migrator(database: database)
        return Check(
            current: try await migrator.applied().max(), known: migrator.migrations.map(\.version).max() ?? 0,
            pending: try await migrator.pending())
    }

    private static func copy(_ database: any SQLDatabase, path: String, version: Int, now: Int64) async throws -> String {
        var target = "\(path).schema-\(version).bak"
        if FileManager.default.fileExists(atPath: target) { target = "\(path).schema-\(version)-\(now).bak" }
        // Made 0600 and empty first: `VACUUM INTO` writes into it and keeps the mode.
        try OwnerOnlyFile.create(target)
        do {
            try await database.query("VACUUM INTO ?", [.text(target)])
        } catch {
            try? FileManager.default.removeItem(atPath: target)
            throw error
        }
        return target
    }
}

/// The copy a start made before migrating, removed once the server listens (the start
/// succeeded) unless `GATEHOUSE_KEEP_MIGRATION_BACKUP` is on.
final class MigrationBackupFile: Sendable {
    private let path = Mutex<String?>(nil)
    let keep: Bool

    init(keep: Bool) { self.keep = keep }

    func made(_ backup: String?) { path.withLock { $0 = backup } }

    func started(logger: Logger) {
        guard let backup = path.withLock({ $0 }) else { return }
        if keep {
            logger.notice("kept the copy made before migrating", metadata: ["path": .string(backup)])
        } else {
            try? FileManager.default.removeItem(atPath: backup)
        }
    }
}
