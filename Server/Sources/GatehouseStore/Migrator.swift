/// Applies pending migrations; safe to run from several nodes at once.
public struct Migrator: Sendable {
    public let database: any SQLDatabase
    public let migrations: [Migration]

    public init(database: any SQLDatabase, migrations: [Migration]? = nil) {
        self.database = database
        self.migrations = migrations ?? Migrations.all(for: database.dialect)
    }

    /// The versions that were applied by this call, in order.
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
