@testable import GatehouseStore

/// The sweep tests' table: `t`, thirty rows swept five at a time (the store's own and the
/// server's tests of housekeeping's pace share it).
public enum SweepTable {
    /// A table `t` of thirty rows, ids 1 to 30.
    public static func thirtyRows(in database: any SQLDatabase) async throws {
        try await database.query("CREATE TABLE t (id BIGINT PRIMARY KEY, x BYTEA)")
        for id in 1...30 { try await database.query("INSERT INTO t (id, x) VALUES (?, ?)", [.integer(Int64(id)), .blob([1])]) }
    }

    /// Sweeps `t` by `key` in batches held at five rows whatever they take; answers the rows swept.
    public static func sweepFiveAtATime(_ store: SQLStore, key: String = "id") async throws -> Int {
        try await SQLStore.$sweepBatch.withValue(5) {
            try await SQLStore.$sweepBatchTime.withValue(.seconds(3_600)) {
                try await store.sweep(Sweep(table: "t", key: key, condition: "x IS NOT NULL", order: key, reach: .ownRow, binds: []))
            }
        }
    }
}
