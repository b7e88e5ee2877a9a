import Foundation
import GatehouseCore

/// One sweep of rows that have expired or aged out (issue 65): the retention purge, expired codes,
/// challenges and sign-ins, old usage. Every sweep goes through `SQLStore.sweep(_:)`, which never
/// touches more than `SQLStore.sweepBatch` rows in one statement: each batch is its own short
/// transaction, so a sweep over a year of audit rows holds SQLite's write lock, or PostgreSQL's
/// row locks, for one batch at a time, and sign-ins go on between batches. After each full batch
/// the sweep rests as long as the batch took (`SQLStore.sweepRest`), so that it takes at most half
/// of the writer's time and of a core from the requests beside it.
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
    /// What a sweep does after a full batch, given how long the batch took: it sleeps that long (a
    /// duty cycle of one half, like PostgreSQL's vacuum cost delay but measured in time). At 1M
    /// accounts on SQLite, a retention sweep that did not rest took the logins beside it from 161
    /// to 113 a second and their p99 to 1.57× the load alone (BENCHMARKS.md, issue 65, step 8).
    /// Tests note the rests instead.
    @TaskLocal static var sweepRest: @Sendable (Duration) async -> Void = { try? await Task.sleep(for: $0) }

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
            let started = ContinuousClock.now
            let swept = try await executor.query(sql, sweep.binds + [.integer(Int64(batch))]).count
            total += swept
            if swept < batch { return total }
            // Between batches the writer is free: a sign-in waiting for it goes first, and the sweep
            // rests as long as its batch took. Inside a caller's transaction it goes straight on:
            // resting there would hold the transaction open.
            if !isTransaction { await Self.sweepRest(ContinuousClock.now - started) }
        }
    }
}
