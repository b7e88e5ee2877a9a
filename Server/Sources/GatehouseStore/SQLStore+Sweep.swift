import Foundation
import GatehouseCore

/// One sweep of rows that have expired or aged out (issue 65): the retention purge, expired codes,
/// challenges and sign-ins, old usage. Every sweep goes through `SQLStore.sweep(_:)`, which never
/// touches more than `SQLStore.sweepBatch` rows in one statement: each batch is its own short
/// transaction, so a sweep over a year of audit rows holds SQLite's write lock, or PostgreSQL's
/// row locks, for one batch at a time, and sign-ins go on between batches.
struct Sweep: Sendable {
    enum Change: Sendable {
        case delete
        /// `SET …` (a clearing of columns); the condition must stop matching a row once it is set.
        case set(String)
    }

    /// The table swept.
    let table: String
    /// Its primary key's columns: `id`, or `(issuer, message_id)` for a composite one.
    let key: String
    /// The rows to sweep, with `?` for `binds`.
    let condition: String
    let binds: [SQLValue]
    var change: Change = .delete
}

extension SQLStore {
    /// At most this many rows per statement of a sweep (tests make it small to walk the batches).
    @TaskLocal static var sweepBatch = 500

    /// Runs `sweep` a batch at a time until a batch finds fewer rows than it may take, and
    /// answers how many rows it changed. On PostgreSQL a batch skips rows another node's sweep
    /// holds (`SKIP LOCKED`), so nodes sweeping at once share the work instead of waiting.
    func sweep(_ sweep: Sweep) async throws(StoreError) -> Int {
        let batch = max(1, Self.sweepBatch)
        let skip = dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
        let head =
            switch sweep.change {
            case .delete: "DELETE FROM \(sweep.table)"
            case .set(let assignments): "UPDATE \(sweep.table) SET \(assignments)"
            }
        // `(a, b) IN (SELECT a, b …)`: the row value outside, its columns inside.
        let columns = sweep.key.trimmingCharacters(in: CharacterSet(charactersIn: "()"))
        let sql = """
            \(head) WHERE \(sweep.key) IN (SELECT \(columns) FROM \(sweep.table) WHERE \(sweep.condition) LIMIT ?\(skip))
            RETURNING 1 AS swept
            """
        var total = 0
        while true {
            let swept = try await executor.query(sql, sweep.binds + [.integer(Int64(batch))]).count
            total += swept
            if swept < batch { return total }
            // Between batches the writer is free: a sign-in waiting for it goes first.
            if !isTransaction { await Task.yield() }
        }
    }
}
