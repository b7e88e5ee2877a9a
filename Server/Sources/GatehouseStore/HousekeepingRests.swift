/// What housekeeping (a sweep, a reclaim of free pages) waits for between two of its batches.
public enum HousekeepingRest: String, CaseIterable, Sendable {
    /// Others use the database: it rests a share of its batch's time (``HousekeepingPace``).
    case requests
    /// PostgreSQL's write-ahead log ran ahead of the rate its checkpoints come by the clock.
    case log
    /// SQLite's checkpointer has many pages of the log still to copy (``SQLiteCheckpointer``).
    case checkpointer
}

/// How many times housekeeping rested, and for how long in all, by what it rested for, since the
/// database was opened. The retention sweep logs the rests taken during its run (``since(_:)``:
/// its own, and any other housekeeping's on the database meanwhile); the server's metrics count
/// each rest as it is taken.
public struct HousekeepingRests: Sendable, Equatable {
    public struct Tally: Sendable, Equatable {
        public var count = 0
        public var time = Duration.zero
        public init(count: Int = 0, time: Duration = .zero) {
            self.count = count
            self.time = time
        }
    }

    private var tallies: [HousekeepingRest: Tally] = [:]

    public init() {}

    public subscript(reason: HousekeepingRest) -> Tally {
        tallies[reason] ?? Tally()
    }

    mutating func add(_ rest: Duration, for reason: HousekeepingRest) {
        begin(reason)
        lasted(rest, for: reason)
    }

    /// A rest begun: counted at once; its time is added when it ends (``lasted(_:for:)``).
    mutating func begin(_ reason: HousekeepingRest) {
        tallies[reason, default: Tally()].count += 1
    }

    mutating func lasted(_ time: Duration, for reason: HousekeepingRest) {
        tallies[reason, default: Tally()].time += time
    }

    /// The rests taken after `earlier`, a reading of the same database.
    public func since(_ earlier: HousekeepingRests) -> HousekeepingRests {
        var rests = HousekeepingRests()
        for reason in HousekeepingRest.allCases {
            let (now, then) = (self[reason], earlier[reason])
            if now != then { rests.tallies[reason] = Tally(count: now.count - then.count, time: now.time - then.time) }
        }
        return rests
    }
}

/// Whether the database work of a task counts as a use of the database, which housekeeping rests
/// beside (``HousekeepingRest/requests``). Work for requests counts; a background worker's look
/// for due work does not (`LeasedQueue`'s claims, the outbox's depth): five of them every two
/// seconds on an idle server made a sweep take rests meant for requests that were not there.
public enum DatabaseUses {
    @TaskLocal public static var counted = true
}
