import Synchronization

/// How long housekeeping (a sweep, a reclaim of free pages) rests between two batches, on SQLite,
/// where it shares the process and the machine with the requests, and on PostgreSQL, where its
/// statements run on the database's cores beside the requests' (issue 65).
///
/// At a million accounts, logins beside the retention sweep kept 52–70 % of their throughput,
/// whatever held the writer: the sweep's statements, the log's copy and the pages read for them
/// took a third of two cores, and their memory traffic slowed the hashes too (BENCHMARKS.md,
/// issue 65 step 11). So while other work uses the database between two of its batches, each
/// batch is followed by a rest ``Settings/restPerBatch`` times as long as the batch took (at most
/// ``Settings/longestRest``): housekeeping then takes no more than a twentieth of the time. With
/// nothing else using the database it does not rest, and a backlog is swept at full speed.
/// Rests of four batches' lengths kept 78–83 % of the logins' throughput beside the sweep and
/// none 60–66 % (BENCHMARKS.md, issue 65 step 13); in turns on a slower host, nine kept 80–91 %
/// and nineteen 93–99 %, with no run of one within the other's range (step 18).
///
/// On PostgreSQL it also rests for the write-ahead log (``LogReading``), busy or not: while it
/// runs, the cluster's log advances no faster than the rate at which PostgreSQL starts each
/// checkpoint by the clock, not by the log's volume
/// (``logBudget(maxWALSize:checkpointTimeout:completionTarget:)``). Each turn counts the log
/// written since the turn before read it, during that turn's rest (autovacuum cleaning up after
/// the sweep's deletes, requests) and during the batch, over the batch's time alone: the rest
/// paid for what came before it. A rest is at most ``Settings/longestLogRest``, so while others
/// write faster than the budget housekeeping still goes a batch between two such rests.
/// Unpaced at a million accounts, a sweep's own log began a checkpoint every 20 s or so at
/// PostgreSQL's default settings, and the batch that ended with the third one's flush took
/// 176–315 ms in each of four runs (issue 65, step 31); paced, no batch took 50 ms in three runs,
/// and that first sweep over a year of rows took 39–40 minutes instead of 2.5 (steps 35 and 36).
final class HousekeepingPace: Sendable {
    struct Settings: Sendable {
        /// The rest after a batch, in batches' lengths, while the server is busy.
        var restPerBatch = 19
        /// The longest rest after one batch.
        var longestRest = Duration.milliseconds(250)
        /// How many uses of the database between two turns are housekeeping's own batch: a
        /// sweep's batch is one statement, a reclaim's step two (the free-page count and the step).
        var ownUses = 2
        /// The longest rest after one batch for the log's rate. A turn more than this after the
        /// mark the turn before left begins a new one (a new sweep): what others wrote between
        /// two sweeps is not housekeeping's.
        var longestLogRest = Duration.seconds(10)
        /// Bytes of log a second, instead of the database's ``LogReading/budget`` (tests).
        var logBudget: Double?
    }

    /// Where the database's write-ahead log stood at a turn, in bytes from its start, and the
    /// rate housekeeping keeps it to while it runs, in bytes a second.
    struct LogReading: Sendable, Equatable {
        var position: Int64
        var budget: Double
    }

    /// The log's rate at which PostgreSQL starts each checkpoint when `checkpoint_timeout` has
    /// passed, not before. It starts one early once the log since the last has reached
    /// `max_wal_size / (1 + checkpoint_completion_target)` (`CalculateCheckpointSegments` in its
    /// `xlog.c`); faster than this, housekeeping's own log would start them, each writing its
    /// pages out within a fraction of the time a timed one takes. At the defaults (1 GB, 5 min,
    /// 0.9) about 1.8 MiB a second.
    static func logBudget(maxWALSize: Int64, checkpointTimeout: Duration, completionTarget: Double) -> Double {
        let seconds = checkpointTimeout / .seconds(1)
        guard maxWALSize > 0, seconds > 0 else { return 0 }
        return Double(maxWALSize) / (1 + max(0, completionTarget)) / seconds
    }

    /// How long to rest after `written` bytes of log in `elapsed` so that they took no less than
    /// `budget` allows, at most `longest`.
    static func logRest(written: Int64, in elapsed: Duration, budget: Double, longest: Duration) -> Duration {
        guard budget > 0, written > 0 else { return .zero }
        return min(max(.zero, .seconds(Double(written) / budget) - elapsed), longest)
    }

    /// The settings of the databases opened in this task (tests change them).
    @TaskLocal static var settings = Settings()

    let settings: Settings
    private let state = Mutex(State())

    struct State: Sendable, Equatable {
        /// The database's uses counted at the last turn (nil before the first).
        var usesAtLastTurn: Int?
        /// The rests taken, each by what set its length (the longer of the two at a turn).
        var rested = HousekeepingRests()
        /// The log's position read at the last turn and the time that turn's rest ended: the
        /// next turn counts the log written since the reading, over the time since the rest.
        var logMark: LogMark?
        /// The log counted at turns after a mark.
        var logCounted: Int64 = 0
    }

    struct LogMark: Sendable, Equatable {
        var position: Int64
        var at: ContinuousClock.Instant
    }

    /// Told of each rest as it is taken (the server's metrics).
    private let observer: (any PoolObserver)?

    init(settings: Settings, observer: (any PoolObserver)? = nil) {
        self.settings = settings
        self.observer = observer
    }

    var current: State { state.withLock { $0 } }

    /// Rests before housekeeping's next batch as ``next(after:uses:log:now:)`` says, and answers
    /// whether others used the database since the turn before. The rest is counted as it begins,
    /// and its time as it ends: a rest the task's cancellation cut short (a shutdown) counts for
    /// the time it lasted.
    func turn(after batch: Duration, uses: Int, log: LogReading? = nil) async -> Bool {
        let turn = next(after: batch, uses: uses, log: log)
        if let reason = turn.restFor {
            state.withLock { $0.rested.begin(reason) }
            let started = ContinuousClock.now
            try? await Task.sleep(for: turn.rest)
            let lasted = Task.isCancelled ? min(turn.rest, ContinuousClock.now - started) : turn.rest
            state.withLock { $0.rested.lasted(lasted, for: reason) }
            observer?.housekeepingRested(for: reason, lasted)
        }
        return turn.busy
    }

    /// A rest housekeeping took, counted by what set its length: a turn's, and those taken outside
    /// ``turn(after:uses:log:)`` (SQLite's wait for its checkpointer).
    func rested(_ rest: Duration, for reason: HousekeepingRest) {
        guard rest > .zero else { return }
        state.withLock { $0.rested.add(rest, for: reason) }
        observer?.housekeepingRested(for: reason, rest)
    }

    /// One of housekeeping's turns: whether others used the database since the turn before, and
    /// how long housekeeping rests before its next batch.
    struct Turn: Sendable, Equatable {
        var busy: Bool
        var rest: Duration
        /// What set the rest's length; nil when there is none.
        var restFor: HousekeepingRest?

        init(busy: Bool, rest: Duration, for reason: HousekeepingRest? = nil) {
            self.busy = busy
            self.rest = rest
            self.restFor = rest > .zero ? reason : nil
        }
    }

    /// The turn after a batch that took `batch`, with the database used `uses` times since it was
    /// opened (reads and writes, housekeeping's own included), and its log at `log` (PostgreSQL;
    /// nil: not read). The rest is the longer of the two, for what set it: for the requests while
    /// others use the database, and for the log written since the last turn's mark. It is counted
    /// when ``turn(after:uses:log:)`` has taken it.
    func next(after batch: Duration, uses: Int, log: LogReading? = nil, now: ContinuousClock.Instant = .now) -> Turn {
        state.withLock { state in
            var turn = Turn(busy: false, rest: .zero)
            if let last = state.usesAtLastTurn, uses - last > settings.ownUses {
                turn = Turn(busy: true, rest: min(batch * settings.restPerBatch, settings.longestRest), for: .requests)
            }
            state.usesAtLastTurn = uses
            if let log {
                if let mark = state.logMark, now - mark.at <= settings.longestLogRest {
                    let written = log.position - mark.position
                    state.logCounted += max(0, written)
                    let rest = Self.logRest(written: written, in: now - mark.at, budget: settings.logBudget ?? log.budget, longest: settings.longestLogRest)
                    if rest > turn.rest { turn = Turn(busy: turn.busy, rest: rest, for: .log) }
                }
                state.logMark = LogMark(position: log.position, at: now + turn.rest)
            }
            return turn
        }
    }
}
