import GatehouseStore
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
    ]

    @Test(arguments: [SQLDialect.sqlite, .postgres])
    func shippedMigrationsAreNeverEdited(_ dialect: SQLDialect) {
        let migrations = Migrations.all(for: dialect)
        for shipped in Self.shipped {
            let found = migrations.filter { $0.version == shipped.version }
            #expect(found.count == 1, "\(dialect): migration \(shipped.version) appears \(found.count) times")
            guard let migration = found.first else { continue }
            #expect(migration.name == shipped.name, "\(dialect): migration \(shipped)")
            #expect(migration.checksum == shipped.checksum(dialect), "\(dialect): migration \(shipped) was edited")
        }
    }

    @Test func bothDatabasesListTheSameMigrations() {
        let sqlite = Migrations.all(for: .sqlite).map { "\($0.version) \($0.name)" }
        let postgres = Migrations.all(for: .postgres).map { "\($0.version) \($0.name)" }
        #expect(sqlite == postgres)
        #expect(Migrations.all(for: .sqlite).map(\.version) == Array(1...sqlite.count))
    }
}
