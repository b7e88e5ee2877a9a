import Foundation
import GatehouseCore

/// One sweep of rows that have expired or aged out (issue 65): the retention purge, expired codes,
/// challenges and sign-ins, old usage. Every sweep goes through `SQLStore.sweep(_:)`, which never
/// touches more than `SQLStore.sweepBatch` rows in one statement and sizes its batches to take
/// about `SQLStore.sweepBatchTime` each: each batch is its own short transaction, so a sweep over
/// a year of audit rows holds SQLite's write lock, or PostgreSQL's row locks, for one short batch
/// at a time, and sign-ins go on between batches.
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
    /// The column of the condition's age (`created_at`, `expires_at`…) that an index leads:
    /// each batch takes the oldest rows left, in that index's order. Without an order the planner
    /// may read the table from wherever a scan starts until it has a batch: PostgreSQL planned
    /// that at 1M accounts, where 42 % of a year of audit rows were past a 90-day retention
    /// (issue 65), and such a scan reads again every row the batches before it deleted, until a
    /// vacuum frees them.
    let order: String
    let binds: [SQLValue]
    var change: Change = .delete
}

extension SQLStore {
    /// At most this many rows per statement of a sweep (tests make it small to walk the batches).
    @TaskLocal static var sweepBatch = 500
    /// How long one batch should hold the writer at most: a batch that took longer is followed
    /// by one half its size, one that took less than half of it by one twice its size (up to
    /// ``sweepBatch``). Rows cost what their table's indexes and cascades make them: a batch of
    /// 500 ended sessions, each deleting its refresh tokens, took 50 to 100 ms at 1M accounts on
    /// SQLite, where a login waiting for the writer waited as long (issue 65).
    @TaskLocal static var sweepBatchTime = Duration.milliseconds(20)

    /// Runs `sweep` a batch at a time until a batch finds fewer rows than it may take, and
    /// answers how many rows it changed. On PostgreSQL a batch skips rows another node's sweep
    /// holds (`SKIP LOCKED`), so nodes sweeping at once share the work instead of waiting.
    func sweep(_ sweep: Sweep) async throws(StoreError) -> Int {
        let most = max(1, Self.sweepBatch)
        let target = Self.sweepBatchTime
        let skip = dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
        let head =
            switch sweep.change {
            case .delete: "DELETE FROM \(sweep.table)"
            case .set(let assignments): "UPDATE \(sweep.table) SET \(assignments)"
            }
        // `(a, b) IN (SELECT a, b …)`: the row value outside, its columns inside.
        let columns = sweep.key.trimmingCharacters(in: CharacterSet(charactersIn: "()"))
        let sql = """
            \(head) WHERE \(sweep.key) IN (SELECT \(columns) FROM \(sweep.table) WHERE \(sweep.condition) ORDER BY \(sweep.order) LIMIT ?\(skip))
            RETURNING 1 AS swept
            """
        var total = 0
        var batch = most
        while true {
            let started = ContinuousClock.now
            let swept = try await executor.query(sql, sweep.binds + [.integer(Int64(batch))]).count
            total += swept
            if swept < batch { return total }
            let took = ContinuousClock.now - started
            batch = Self.nextBatch(after: batch, took: took, target: target, most: most)
            await betweenHousekeepingBatches(after: took)
        }
    }

    /// The size of a sweep's next batch after one of `size` rows took `took` (its wait for the
    /// writer included: a writer others keep busy slows the sweep down too).
    static func nextBatch(after size: Int, took: Duration, target: Duration, most: Int) -> Int {
        if took > target { return max(1, size / 2) }
        if took * 2 < target { return min(most, size * 2) }
        return size
    }
}
