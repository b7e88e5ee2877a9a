import Synchronization

extension PostgresDatabase {
    /// Housekeeping rests while this node's requests use the database (`HousekeepingPace`): its
    /// batches run on the database's cores, which the requests' statements need too. Unpaced, a
    /// sweep resumed from its last batch deleted 6.5M rows in 93 s beside 64 logins at 1M
    /// accounts, and their p99 was 1.64× the load alone (issue 65, step 15). Busy or not, it also
    /// keeps the cluster's write-ahead log, while it runs, to the rate the cluster's own
    /// settings give (``logReading()``), so that its checkpoints come by the clock. The reading is
    /// one statement, not counted among the uses; on a standby, where it fails, the log is not
    /// paced (nothing is swept there).
    public func awaitHousekeepingTurn(after batch: Duration) async -> Bool {
        let log = try? await logReading()
        return await pace.turn(after: batch, uses: uses.load(ordering: .relaxed), log: log)
    }

    public var housekeepingRests: HousekeepingRests { pace.current.rested }

    public func countCachedRead() { uses.add(1, ordering: .relaxed) }

    /// The write-ahead log's position now (where its next record goes: the position written out
    /// moves only as the WAL writer flushes, by whole pages, every 200 ms with asynchronous
    /// commits) and the rate housekeeping keeps to
    /// (``HousekeepingPace/logBudget(maxWALSize:checkpointTimeout:completionTarget:)``), from the
    /// cluster's `max_wal_size`, `checkpoint_timeout` and `checkpoint_completion_target` as they
    /// are at this turn (an operator's reload counts from the next).
    func logReading() async throws(StoreError) -> HousekeepingPace.LogReading {
        let sql = """
            SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint AS position, pg_size_bytes(current_setting('max_wal_size')) AS max_wal_size,
            (extract(epoch FROM current_setting('checkpoint_timeout')::interval) * 1000)::bigint AS timeout_ms,
            current_setting('checkpoint_completion_target') AS completion_target
            """
        let rows = try await query(sql, [], counted: false)
        guard let row = rows.first, let target = Double(try row.string("completion_target")) else {
            throw StoreError.decoding("the write-ahead log's position and settings")
        }
        let budget = HousekeepingPace.logBudget(
            maxWALSize: try row.int("max_wal_size"), checkpointTimeout: .milliseconds(try row.int("timeout_ms")), completionTarget: target)
        return HousekeepingPace.LogReading(position: try row.int("position"), budget: budget)
    }
}
