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
final class HousekeepingPace: Sendable {
    struct Settings: Sendable {
        /// The rest after a batch, in batches' lengths, while the server is busy.
        var restPerBatch = 19
        /// The longest rest after one batch.
        var longestRest = Duration.milliseconds(250)
        /// How many uses of the database between two turns are housekeeping's own batch: a
        /// sweep's batch is one statement, a reclaim's step two (the free-page count and the step).
        var ownUses = 2
    }

    /// The settings of the databases opened in this task (tests change them).
    @TaskLocal static var settings = Settings()

    let settings: Settings
    private let state = Mutex(State())

    struct State: Sendable, Equatable {
        /// The database's uses counted at the last turn (nil before the first).
        var usesAtLastTurn: Int?
        /// Turns that rested, and for how long in all.
        var rests = 0
        var rested = Duration.zero
    }

    init(settings: Settings) {
        self.settings = settings
    }

    var current: State { state.withLock { $0 } }

    /// Rests before housekeeping's next batch as ``next(after:uses:)`` says, and answers whether
    /// others used the database since the turn before.
    func turn(after batch: Duration, uses: Int) async -> Bool {
        let turn = next(after: batch, uses: uses)
        if turn.rest > .zero { try? await Task.sleep(for: turn.rest) }
        return turn.busy
    }

    /// One of housekeeping's turns: whether others used the database since the turn before, and
    /// how long housekeeping rests before its next batch.
    struct Turn: Sendable, Equatable {
        var busy: Bool
        var rest: Duration
    }

    /// The turn after a batch that took `batch`, with the database used `uses` times since it was
    /// opened (reads and writes, housekeeping's own included).
    func next(after batch: Duration, uses: Int) -> Turn {
        state.withLock { state in
            defer { state.usesAtLastTurn = uses }
            guard let last = state.usesAtLastTurn, uses - last > settings.ownUses else { return Turn(busy: false, rest: .zero) }
            let rest = min(batch * settings.restPerBatch, settings.longestRest)
            guard rest > .zero else { return Turn(busy: true, rest: .zero) }
            state.rests += 1
            state.rested += rest
            return Turn(busy: true, rest: rest)
        }
    }
}
