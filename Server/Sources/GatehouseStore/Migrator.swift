/// Applies pending migrations; safe to run from several nodes at once.
public struct Migrator: Sendable {
    public let database: any SQLDatabase
    public let migrations: [Migration]

    public init(database: any SQLDatabase, migrations: [Migration]? = nil) {
        self.database = database
        self.migrations = migrations ?? Migrations.all(for: database.dialect)
    }

    /// The versions the database has applied (none when it has no schema yet), read without
    /// writing anything.
    public func applied() async throws -> [Int] {
        let exists =
            database.dialect == .postgres
            ? "SELECT to_regclass('gatehouse_migrations') IS NOT NULL AS present"
            : "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gatehouse_migrations') AS present"
        guard try await database.query(exists).first?.bool("present") == true else { return [] }
        return try await database.query("SELECT version FROM gatehouse_migrations ORDER BY version").map { Int(try $0.int("version")) }
    }

    /// The migrations this binary would apply, in order; a database that has applied a version
    /// this binary does not know is refused as `migrate` refuses it.
    public func pending() async throws -> [Migration] {
        let applied = try await applied()
        let known = Set(migrations.map(\.version))
        if let newest = applied.max(), !known.contains(newest) {
            throw StoreError.schemaNewerThanBinary(database: newest, known: known.max() ?? 0)
        }
        return migrations.filter { !applied.contains($0.version) }.sorted { $0.version < $1.version }
    }

    /// The versions that were applied by this call, in order. Each migration is one
    /// transaction: one that fails leaves the database at the version before it.
    @discardableResult
    public func migrate(now: Int64) async throws -> [Int] {
        let integer = database.dialect == .postgres ? "BIGINT" : "INTEGER"
        try await database.query(
            """
            CREATE TABLE IF NOT EXISTS gatehouse_migrations (
                version \(integer) PRIMARY KEY,
                name TEXT NOT NULL,
                checksum TEXT NOT NULL,
                applied_at \(integer) NOT NULL
            )
            """)
        var applied: [Int] = []
        for migration in migrations.sorted(by: { $0.version < $1.version }) {
            let didApply = try await database.transaction { tx -> Bool in
                if tx.dialect == .postgres {
                    // Serialises nodes starting together; released at commit.
                    try await tx.query("SELECT pg_advisory_xact_lock(727274)")
                }
                let rows = try await tx.query(
                    "SELECT checksum FROM gatehouse_migrations WHERE version = ?", [.integer(Int64(migration.version))])
                if let row = rows.first {
                    let recorded = try row.string("checksum")
                    guard recorded == migration.checksum else {
                        throw StoreError.migrationMismatch(
                            "migration \(migration.version) (\(migration.name)) differs from the one applied to this database; shipped migrations must never be edited"
                        )
                    }
                    return false
                }
                for statement in migration.statements {
                    try await tx.query(statement)
                }
                try await tx.query(
                    "INSERT INTO gatehouse_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
                    [.integer(Int64(migration.version)), .text(migration.name), .text(migration.checksum), .integer(now)])
                return true
            }
            if didApply { applied.append(migration.version) }
        }
        let known = Set(migrations.map(\.version))
        let newest = try await database.query("SELECT MAX(version) AS version FROM gatehouse_migrations")
        if let version = try newest.first?.optionalInt("version"), !known.contains(Int(version)) {
            throw StoreError.schemaNewerThanBinary(database: Int(version), known: known.max() ?? 0)
        }
        return applied
    }
}
