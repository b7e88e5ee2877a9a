import Foundation
import GatehouseCore
import GatehouseStore
import Logging

/// `gatehouse backup DEST` and `gatehouse restore SRC` for the embedded SQLite database
/// (docs/operations.md; PostgreSQL is backed up with its own tools).
extension Operator {
    public struct BackupResult: Sendable {
        public var path: String
        public var bytes: Int
    }

    /// The configured SQLite file, or why there is none to back up or restore.
    static func sqlitePath(_ config: GatehouseConfig) throws -> String {
        guard case .sqlite(let path) = config.database else {
            throw OperationError("this server uses PostgreSQL: back it up with pg_dump or a base backup (docs/operations.md)")
        }
        return URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// A consistent copy of the database while the server goes on serving: SQLite's `VACUUM
    /// INTO` reads one snapshot (a read transaction, which never blocks the server's writer in
    /// WAL mode) into a new file, which is then checked with `PRAGMA integrity_check`.
    public static func backup(_ config: GatehouseConfig, to destination: String) async throws -> BackupResult {
        let source = try sqlitePath(config)
        let target = URL(fileURLWithPath: destination).standardizedFileURL.path
        guard FileManager.default.fileExists(atPath: source) else { throw OperationError("there is no database at \(source)") }
        guard !FileManager.default.fileExists(atPath: target) else {
            throw OperationError("\(target) exists already: back up into a new file")
        }
        guard target != source else { throw OperationError("the backup cannot be the database itself") }
        let logger = quietLogger(config)
        let database = try await SQLiteDatabase.open(path: source, readerCount: 1, logger: logger)
        do {
            // Made 0600 and empty first: `VACUUM INTO` writes into it and keeps the mode.
            try OwnerOnlyFile.create(target)
            try await database.query("VACUUM INTO ?", [.text(target)])
            await database.shutdown()
        } catch {
            await database.shutdown()
            try? FileManager.default.removeItem(atPath: target)
            throw error
        }
        do {
            try await checkIntegrity(target, logger: logger)
        } catch {
            try? FileManager.default.removeItem(atPath: target)
            throw error
        }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: target)[.size] as? Int) ?? 0
        return BackupResult(path: target, bytes: bytes)
    }

    /// Puts the backup at `source` in place of the configured database, with the server stopped:
    /// refuses to overwrite an existing database without `force`; checks a copy of the backup
    /// (`PRAGMA integrity_check`, Gatehouse's migrations table, then, brought up to this
    /// version's migrations, a schema exactly theirs: no table, view, index or trigger planted
    /// beside them) before anything is replaced, then moves the checked copy, 0600, into place in
    /// one rename and drops the old WAL files.
    public static func restore(_ config: GatehouseConfig, from source: String, force: Bool) async throws -> String {
        let target = try sqlitePath(config)
        let backup = URL(fileURLWithPath: source).standardizedFileURL.path
        guard FileManager.default.fileExists(atPath: backup) else { throw OperationError("there is no backup at \(backup)") }
        guard backup != target else { throw OperationError("the backup is the database itself") }
        if FileManager.default.fileExists(atPath: target), !force {
            throw OperationError("\(target) exists: stop the server and add --force to replace it with \(backup)")
        }
        let staging = target + ".restoring-\(SecureRandom.uuid().uuidString.prefix(8))"
        do {
            try copyOwnerOnly(backup, to: staging)
            try await checkIntegrity(staging, logger: quietLogger(config))
            try await checkSchema(staging, logger: quietLogger(config))
            for suffix in ["-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: staging + suffix)
                try? FileManager.default.removeItem(atPath: target + suffix)
            }
            guard rename(staging, target) == 0 else {
                throw OperationError("cannot move the restored file into place: \(String(cString: strerror(errno)))")
            }
        } catch {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: staging + suffix) }
            throw error
        }
        return target
    }

    /// Copies `source` into a new file made 0600 before a byte is written to it.
    static func copyOwnerOnly(_ source: String, to target: String) throws {
        try OwnerOnlyFile.create(target)
        guard let input = FileHandle(forReadingAtPath: source), let output = FileHandle(forWritingAtPath: target) else {
            throw OperationError("cannot copy \(source) to \(target)")
        }
        defer {
            try? input.close()
            try? output.close()
        }
        while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty { try output.write(contentsOf: chunk) }
    }

    /// Throws unless the database at `path`, migrated to this version, has exactly the schema a
    /// new database gets from the migrations (finding 6 of issue 40: a restore took a database
    /// with a trigger planted in it).
    static func checkSchema(_ path: String, logger: Logger) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-schema-\(SecureRandom.uuid().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let restored = try await schema(of: path, logger: logger)
        let reference = try await schema(of: directory.appendingPathComponent("reference.sqlite").path, logger: logger)
        guard restored == reference else {
            let extra = restored.subtracting(reference).map(\.self).sorted().prefix(3).joined(separator: "; ")
            let missing = reference.subtracting(restored).map(\.self).sorted().prefix(3).joined(separator: "; ")
            throw OperationError(
                "\(path)'s schema is not Gatehouse's: \(extra.isEmpty ? "" : "not in the migrations: \(extra)")"
                    + "\(missing.isEmpty ? "" : " missing: \(missing)")")
        }
    }

    /// Every table, index, view and trigger of the database at `path` once migrated.
    private static func schema(of path: String, logger: Logger) async throws -> Set<String> {
        let database = try await SQLiteDatabase.open(path: path, readerCount: 1, logger: logger)
        do {
            try await Migrator(database: database).migrate(now: Date().unixSeconds)
            let rows = try await database.query(
                "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
            await database.shutdown()
            return Set(
                try rows.map { row in
                    "\(try row.string("type")) \(try row.string("name")) on \(try row.string("tbl_name")): \(try row.optionalString("sql") ?? "")"
                })
        } catch {
            await database.shutdown()
            throw error
        }
    }

    /// Throws unless `path` is a sound SQLite file that holds a Gatehouse database.
    static func checkIntegrity(_ path: String, logger: Logger) async throws {
        let database = try await SQLiteDatabase.open(path: path, readerCount: 1, logger: logger)
        do {
            let verdict = try await database.query("PRAGMA integrity_check").compactMap { try? $0.string("integrity_check") }
            guard verdict == ["ok"] else {
                throw OperationError("\(path) fails PRAGMA integrity_check: \(verdict.prefix(3).joined(separator: "; "))")
            }
            let tables = try await database.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'gatehouse_migrations'")
            guard !tables.isEmpty else { throw OperationError("\(path) is not a Gatehouse database (no gatehouse_migrations table)") }
            await database.shutdown()
        } catch {
            await database.shutdown()
            throw error
        }
    }
}

/// A refused backup or restore, said in one sentence.
public struct OperationError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ description: String) { self.description = description }
}
