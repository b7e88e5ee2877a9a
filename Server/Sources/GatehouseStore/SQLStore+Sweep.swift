import Foundation
import GatehouseCore

/// One sweep of rows that have expired or aged out (issue 65): the retention purge, expired codes,
/// challenges and sign-ins, old usage. Every sweep goes through `SQLStore.sweep(_:)`, which never
/// touches more than its `most` rows in one statement (by its `Reach`) and sizes its batches to take
/// about `SQLStore.sweepBatchTime` each, from a careful first one and never past it while others
/// use the database (`BatchSizing`): each batch is its own short transaction, so a sweep over
/// a year of audit rows holds SQLite's write lock, or PostgreSQL's row locks, for one short batch
/// at a time, and sign-ins go on between batches.
struct Sweep: Sendable {
    enum Change: Sendable {
        case delete
        /// `SET …` (a clearing of columns); the condition must stop matching a row once it is set.
        case set(String)
    }

    /// How far changing one row reaches beyond the pages the batch's rows share, which bounds how
    /// many rows a batch takes. A batch's time is mostly the pages it touches: each is read when
    /// not cached, and written whole to PostgreSQL's WAL on its first change after a checkpoint
    /// begins. The sizing by time learns a row's cost from the batches before, so a batch grown
    /// while those pages were cheap pays their full cost, times its size, once they are not. At 1M
    /// accounts on PostgreSQL, with a cold cache, a row reaching pages anywhere cost up to 0.74 ms
    /// in a batch of 100, and a row of the oldest audit rows up to 0.31 ms. Alone, batches of the
    /// first of up to 500 rows took up to 215 ms in the seconds after a checkpoint began (issue
    /// 65, steps 26 and 27).
    enum Reach: Sendable {
        /// The row itself: the rows a batch takes are the oldest, in the order they were written,
        /// and share their pages; deleted on PostgreSQL, they leave their index entries to vacuum.
        /// Up to ``SQLStore/sweepBatch`` rows a batch.
        case ownRow
        /// Pages anywhere: an update writing an entry into every index of its table (one that
        /// PostgreSQL cannot make in place, on full pages), or a delete cascading into another
        /// table's rows found through its index. Never past ``SQLStore/sweepCarefulBatch``.
        case scattered
    }

    /// The table swept.
    let table: String
    /// Its primary key's columns: `id`, or `(issuer, message_id)` for a composite one. SQLite
    /// changes a batch's rows by it, PostgreSQL by their address (see `batchStatement`).
    let key: String
    /// The rows to sweep, with `?` for `binds`.
    let condition: String
    /// The integer column of the condition's age (`created_at`, `expires_at`…) that an index
    /// leads: each batch takes the oldest rows left, in that index's order, from the newest age
    /// the batch before took. Without an order the plan is the statistics': PostgreSQL planned a
    /// scan of the table from wherever it starts for one load at 1M accounts (42 % of a year of
    /// audit rows past a 90-day retention) and the index for another (issue 65, steps 14 and 15).
    /// A row older than where a sweep has reached, skipped while another node's sweep held it, is
    /// left to that sweep, or to the next.
    let order: String
    /// Whether its rows share their pages or reach pages anywhere: every sweep names it.
    let reach: Reach
    let binds: [SQLValue]
    var change: Change = .delete

    /// The most rows one batch of this sweep takes.
    var most: Int {
        switch reach {
        case .ownRow: SQLStore.sweepBatch
        case .scattered: SQLStore.sweepCarefulBatch
        }
    }
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
    /// The size of a sweep's batch while its cost is not known or not its own to decide (see
    /// ``BatchSizing``): its first batch, and every batch while others use the database.
    /// A first batch of 500 rows clearing the addresses of ended sessions (an update that writes
    /// an entry into each of the table's indexes) took 142 ms at 1M accounts on PostgreSQL with
    /// no request running (issue 65, step 15), and batches of 500 audit rows that took a few
    /// milliseconds alone took up to 116 ms beside 64 logins (step 16).
    @TaskLocal static var sweepCarefulBatch = 100

    /// Runs `sweep` a batch at a time until a batch finds fewer rows than it may take, and
    /// answers how many rows it changed. On PostgreSQL a batch skips rows another node's sweep
    /// holds (`SKIP LOCKED`), so nodes sweeping at once share the work instead of waiting.
    func sweep(_ sweep: Sweep) async throws(StoreError) -> Int {
        let target = Self.sweepBatchTime
        var total = 0
        var sizing = BatchSizing(most: sweep.most, careful: Self.sweepCarefulBatch)
        // The newest age the batches so far took: the next one starts there.
        var reached: Int64?
        while true {
            let batch = sizing.next
            let started = ContinuousClock.now
            let binds = sweep.binds + (reached.map { [SQLValue.integer($0)] } ?? []) + [.integer(Int64(batch))]
            let rows = try await executor.query(batchStatement(sweep, resuming: reached != nil), binds)
            total += rows.count
            if rows.count < batch { return total }
            for row in rows {
                let age = try row.int("swept")
                reached = max(reached ?? age, age)
            }
            let took = ContinuousClock.now - started
            let busy = try await betweenHousekeepingBatches(after: took)
            sizing.after(batch, took: took, target: target, busy: busy)
        }
    }

    /// One batch of `sweep`: the oldest rows left, from the age the batch before reached when
    /// `resuming`, each answered with its age (`swept`).
    ///
    /// Resuming where the last batch ended lets PostgreSQL's index scan start past the entries of
    /// the rows the batches before deleted, which stay in the index until a vacuum: at 1M
    /// accounts a batch read 5,100 index pages of them before its 500 rows (issue 65, step 15).
    /// On PostgreSQL the rows are changed by their address (`ctid`), taken and locked by the inner
    /// select: `key IN (SELECT …)` is planned as a join, and planning it read the far end of the
    /// key's index, where the same deleted entries are (3,800 pages a batch, up to 814 ms).
    func batchStatement(_ sweep: Sweep, resuming: Bool) -> String {
        let head =
            switch sweep.change {
            case .delete: "DELETE FROM \(sweep.table)"
            case .set(let assignments): "UPDATE \(sweep.table) SET \(assignments)"
            }
        let from = resuming ? " AND \(sweep.order) >= ?" : ""
        let rows = "FROM \(sweep.table) WHERE \(sweep.condition)\(from) ORDER BY \(sweep.order) LIMIT ?"
        switch dialect {
        case .postgres:
            return "\(head) WHERE ctid = ANY(ARRAY(SELECT ctid \(rows) FOR UPDATE SKIP LOCKED)) RETURNING \(sweep.order) AS swept"
        case .sqlite:
            // `(a, b) IN (SELECT a, b …)`: the row value outside, its columns inside.
            let columns = sweep.key.trimmingCharacters(in: CharacterSet(charactersIn: "()"))
            return "\(head) WHERE \(sweep.key) IN (SELECT \(columns) \(rows)) RETURNING \(sweep.order) AS swept"
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

/// The size of housekeeping's next batch, one part for a sweep's rows and a reclaim's pages
/// (issue 65). The sizing by time (``SQLStore/nextBatch(after:took:target:most:)``) learns what a
/// batch costs only after it has run, so a batch stays at `careful` while that is no guide:
/// - the first batch, before anything is known of the table's cost per row;
/// - every batch while others use the database (the turn before it found their statements):
///   a batch's time then depends on the machine's other work more than on its size, and one
///   that took a few milliseconds alone may take twenty times as long.
/// Alone, each batch grows from there up to `most` as its time allows.
struct BatchSizing: Sendable {
    /// The most a batch takes.
    let most: Int
    /// The size of a batch whose cost is not known, and the most while others use the database.
    let careful: Int
    /// The size of the next batch.
    private(set) var next: Int

    init(most: Int, careful: Int) {
        self.most = max(1, most)
        self.careful = min(self.most, max(1, careful))
        next = self.careful
    }

    /// After a batch of `size` that took `took`, with others using the database (`busy`) or not.
    mutating func after(_ size: Int, took: Duration, target: Duration, busy: Bool) {
        next = min(busy ? careful : most, SQLStore.nextBatch(after: size, took: took, target: target, most: most))
    }
}
