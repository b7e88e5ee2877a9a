import Logging
import NIOPosix
import Synchronization

/// Copies SQLite's write-ahead log into the database file beside the writer, not inside its
/// commits (issue 65).
///
/// SQLite's automatic checkpoint runs in the commit that takes the log past 1,000 pages, on the
/// writer, which keeps the write lock while the pages are copied and the file synced: at a
/// million accounts a quarter of the retention sweep's statements took 22–30 ms instead of 4–5
/// (BENCHMARKS.md, issue 65 step 10), and every sign-in waiting for the writer waited that long
/// too. Here the writer's commits only report the log's length (`WALSignal`), and past
/// ``Settings/pages`` this checkpointer copies the log with `PRAGMA wal_checkpoint(PASSIVE)`,
/// which waits for no reader or writer, on a connection and a thread of its own.
///
/// A passive checkpoint copies the log up to its last commit, and commits go on meanwhile, so
/// the log is seldom wholly copied when the writer next begins, which is when SQLite starts it
/// over. A commit that finds it past ``Settings/restartPages`` therefore checkpoints on the
/// writer, as SQLite would have: only what the checkpointer has not copied yet is left to copy,
/// and the next write starts the log again. The log stays bounded. The checkpointer is asked
/// after every commit past ``Settings/pages`` (one checkpoint at a time; asks made meanwhile
/// make one more), so it keeps the log copied nearly to its end and the writer's checkpoint
/// has little left. Asked only a thousand pages past its last copy, it left the writer more:
/// the logins beside the sweep did worse (2.72× against 1.92×, BENCHMARKS.md).
final class SQLiteCheckpointer: Sendable {
    struct Settings: Sendable {
        /// The log's length, in pages, past which the checkpointer copies it (SQLite's own
        /// automatic checkpoint's default).
        var pages = 1_000
        /// The log's length past which the writer's commit checkpoints it itself.
        var restartPages = 8_000
        /// Whether the checkpointer copies at all (tests turn it off to watch the writer alone).
        var copies = true
        /// The pages of the log not copied yet from which housekeeping waits before its next
        /// batch (`SQLiteDatabase.awaitHousekeepingTurn(after:)`), and how long it waits at most.
        var housekeepingPages = 2_000
        var housekeepingWait = Duration.seconds(1)
    }

    /// The settings of the databases opened in this task (tests make the log short).
    @TaskLocal static var settings = Settings()

    let signal: WALSignal
    private let connection: SQLiteConnectionHandle
    private let thread: NIOThreadPool
    private let copying: Task<Void, Never>

    private init(signal: WALSignal, connection: SQLiteConnectionHandle, thread: NIOThreadPool, copying: Task<Void, Never>) {
        self.signal = signal
        self.connection = connection
        self.thread = thread
        self.copying = copying
    }

    /// Opens the checkpointer's connection to `path` and starts copying whenever `signal` says.
    static func start(path: String, logger: Logger) async throws -> SQLiteCheckpointer {
        let settings = Self.settings
        let (asks, ask) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let signal = WALSignal(settings: settings, ask: ask)
        // A thread of its own: a checkpoint at a million accounts takes tens of milliseconds,
        // which on NIO's shared pool (one thread a core) would hold up the other connections.
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        let connection: SQLiteConnectionHandle
        do {
            connection = try await SQLiteConnectionHandle.open(path: path, pool: thread)
        } catch {
            try? await thread.shutdownGracefully()
            throw error
        }
        let copying = Task {
            for await _ in asks where settings.copies {
                do {
                    let copied = try await connection.run("PRAGMA wal_checkpoint(PASSIVE)", []).first?.int("checkpointed")
                    signal.copied(through: Int(copied ?? 0))
                } catch {
                    logger.warning("write-ahead log checkpoint failed", metadata: ["cause": "\(error)"])
                }
            }
        }
        return SQLiteCheckpointer(signal: signal, connection: connection, thread: thread, copying: copying)
    }

    /// Stops copying and closes the connection (closing the writer afterwards copies the rest).
    func stop() async {
        signal.ask.finish()
        await copying.value
        await connection.close()
        try? await thread.shutdownGracefully()
    }
}

/// What the writer's commits tell the checkpointer: the log's length after each one (SQLite's
/// `sqlite3_wal_hook`, which replaces its automatic checkpoint on the writer).
final class WALSignal: Sendable {
    enum Answer {
        /// The checkpointer copies, if it needs to.
        case leave
        /// The log is past ``SQLiteCheckpointer/Settings/restartPages``: the writer checkpoints now.
        case checkpointHere
    }

    let settings: SQLiteCheckpointer.Settings
    let ask: AsyncStream<Void>.Continuation
    private let counts = Mutex(Counts())

    struct Counts: Sendable, Equatable {
        /// Pages in the log after the last commit.
        var pages = 0
        /// How far into the log the checkpointer's last copy reached (0 once the log starts over).
        var copiedThrough = 0
        /// Checkpoints the checkpointer ran, and those the writer ran.
        var copies = 0
        var writerCheckpoints = 0
        /// Housekeeping batches that waited for the log to be copied, and those of them that
        /// waited their longest.
        var housekeepingWaits = 0
        var housekeepingWaitsTimedOut = 0
    }

    init(settings: SQLiteCheckpointer.Settings, ask: AsyncStream<Void>.Continuation) {
        self.settings = settings
        self.ask = ask
    }

    var current: Counts { counts.withLock { $0 } }

    /// Called inside the writer's commit: must not block.
    func committed(pages: Int) -> Answer {
        let here = pages >= settings.restartPages
        counts.withLock {
            // A shorter log than the last commit's is a new one: nothing of it is copied yet.
            if pages < $0.pages { $0.copiedThrough = 0 }
            $0.pages = pages
            if here { $0.writerCheckpoints += 1 }
        }
        if here { return .checkpointHere }
        if pages >= settings.pages { ask.yield() }
        return .leave
    }

    func copied(through frames: Int) {
        counts.withLock {
            $0.copies += 1
            $0.copiedThrough = frames
        }
    }

    /// The writer's own checkpoint copied the log through `frames` (housekeeping waiting for the
    /// copy goes on).
    func writerCopied(through frames: Int) {
        counts.withLock { $0.copiedThrough = frames }
    }

    /// Whether the log holds ``SQLiteCheckpointer/Settings/housekeepingPages`` or more that the
    /// checkpointer has not copied yet. Once it has copied them all, the next write starts the
    /// log over.
    var isBehind: Bool { counts.withLock { $0.pages - min($0.pages, $0.copiedThrough) >= settings.housekeepingPages } }

    func housekeepingWaited(timedOut: Bool) {
        counts.withLock {
            $0.housekeepingWaits += 1
            if timedOut { $0.housekeepingWaitsTimedOut += 1 }
        }
    }
}
