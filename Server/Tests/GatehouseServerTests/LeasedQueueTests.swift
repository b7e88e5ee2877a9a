import Foundation
import GatehouseCore
@testable import GatehouseServer
@testable import GatehouseStore
import GatehouseTestSupport
import Logging
import Testing

/// The queues of leased work (the job queue, and the outbox's mail and SMS lanes) go through
/// one part (`LeasedQueue`). A shutdown cancels the work of a row being tried: the attempt was
/// cut short, not failed. It is not counted (a row on its last attempt is not given up by a
/// deploy), nothing is logged or counted as a failure, and the row's lease runs out so that the
/// next start takes it again. Before, the outbox counted the attempt and warned (and gave a mail
/// on its last attempt up for good on SQLite), and an SMS cut short counted as an SMS outage.
@Suite struct LeasedQueueTests {
    /// Every queue of leased work, worked by the server's own worker until its task is cancelled.
    enum Queue: String, CaseIterable, CustomTestStringConvertible {
        case jobs, mail, sms
        var testDescription: String { rawValue }

        /// The line a row of this queue cut short by the shutdown logs.
        var stopLine: String {
            switch self {
            case .jobs: "info job queue stopped by the shutdown; any job it had claimed runs again when its lease ends, its attempt not counted"
            case .mail, .sms:
                "info mail outbox stopped by the shutdown; any message it had claimed is sent again when its lease ends, its attempt not counted"
            }
        }
    }

    /// A transport and an SMS sender that hang (until cancelled), saying when they begin.
    struct Hanging: MailTransport, SMSSender {
        let running: AsyncStream<Void>.Continuation
        var keepsBodies: Bool { true }
        func deliver(_ message: OutboxMessage) async throws { try await hang() }
        func send(_ message: SMSMessage) async throws { try await hang() }
        private func hang() async throws {
            running.yield()
            try await Task.sleep(for: .seconds(3_600))
        }
    }

    /// The server's mail worker on `store`, with the default preset's templates.
    static func mailWorker(
        _ store: SQLStore, _ transport: any MailTransport, clock: any WallClock, logger: Logger, metrics: ServerMetrics
    ) throws -> MailWorker {
        let preset = try PresetLibrary.load("default").get()
        let composer = MailRequestComposer(
            transactions: Transactions(store) { $0 }, templates: try Templates(preset: preset),
            links: EmailLinks(publicURL: URL(string: "https://auth.example.com")!, chainKey: RefreshChainKey()), preset: preset, clock: clock)
        return MailWorker(store: store, transport: transport, composer: composer, clock: clock, logger: logger, metrics: metrics)
    }

    static let cases = Queue.allCases.flatMap { queue in Backend.available.map { (queue, $0) } }

    @Test(arguments: cases)
    func aRowCutShortByAShutdownIsNotAnAttempt(_ queue: Queue, _ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let clock = ManualClock(Date())
            let (started, running) = AsyncStream<Void>.makeStream()
            let metrics = ServerMetrics(enabled: true)
            let log = KeptLog { "\($0.level) \($0.message)" }
            let logger = log.logger(label: "worker")
            let work: @Sendable () async -> Void
            let lease: Int
            /// Takes the row again once it is due: its id and its attempts so far.
            let claim: @Sendable (Date) async throws -> (id: UUID, attempts: Int)?
            let id: UUID
            switch queue {
            case .jobs:
                let worker = JobWorker(
                    store: store, sealer: SecretSealer(secret: nil), clock: clock, logger: logger,
                    handlers: [
                        .stripeCancel: { _, _ in
                            running.yield()
                            try await Task.sleep(for: .seconds(3_600))
                        }
                    ],
                    maximumAttempts: [.stripeCancel: 30], metrics: metrics)
                let sealed = try SecretSealer(secret: nil).seal(Data(#"{"customer":"cus_cut_short"}"#.utf8))
                let job = Job(kind: JobKind.stripeCancel.rawValue, payload: sealed.bytes, encryption: sealed.encryption, attempts: 29, createdAt: clock.now)
                try await store.enqueueJob(job)
                (id, lease, work) = (job.id, JobWorker.leaseSeconds, { await worker.runDue() })
                claim = { now in try await store.claimDueJob(now: now, leaseSeconds: 60).map { ($0.id, $0.attempts) } }
            case .mail, .sms:
                let hanging = Hanging(running: running)
                let delivery = OutboxDelivery(
                    mail: hanging, sms: hanging, failures: SMSFailures(store: store, threshold: 3, clock: clock, metrics: metrics, logger: logger))
                let worker = try Self.mailWorker(store, delivery, clock: clock, logger: logger, metrics: metrics)
                // On its last attempt (`MailRetryPolicy.maximumAttempts`).
                let message =
                    queue == .sms
                    ? OutboxMessage(
                        createdAt: clock.now, kind: PhoneCodes.outboxKind, recipient: "+14155550143", subject: "", textBody: "Your code is 123456",
                        htmlBody: nil, attempts: 9, payload: ["purpose": "sign_in", "code": "123456"])
                    : OutboxMessage(
                        createdAt: clock.now, kind: MailKind.verification.rawValue, recipient: "cut@example.com", subject: "Verify",
                        textBody: "Verify", htmlBody: nil, attempts: 9)
                try await store.enqueueMail(message)
                let lane = OutboxLane(kind: message.kind)
                (id, lease, work) = (message.id, MailWorker.leaseSeconds, { await worker.deliverDue(on: lane) })
                claim = { now in
                    try await store.claimDueMail(now: now, limit: 1, leaseSeconds: 60, lane: lane).first.map { ($0.id, $0.attempts) }
                }
            }
            let working = Task { await work() }
            for await _ in started { break }
            working.cancel()
            await working.value

            #expect(log.lines == [queue.stopLine], "\(log.lines)")
            let rendered = String(decoding: metrics.render(), as: UTF8.self)
            for failure in ["gatehouse_jobs_failed_total", "gatehouse_mail_failed_total", "gatehouse_sms_failed_total"] {
                #expect(!rendered.contains(failure), "\(failure)")
            }
            #expect(try await store.failedJobs(limit: 5).total == 0)
            #expect(try await store.recentMail(limit: 5).allSatisfy { $0.status == "pending" && $0.lastError == nil })
            // Still held by its lease, then taken again with its attempts as they were.
            #expect(try await claim(clock.now) == nil)
            let again = try await claim(clock.now.addingTimeInterval(Double(lease + 1)))
            #expect(again?.id == id && again?.attempts == (queue == .jobs ? 29 : 9), "\(String(describing: again))")
        }
    }

    /// What runs between two of a sweep's batches: the idle job queue and outbox looking for
    /// due work, or as many reads for requests.
    enum Beside: String, CaseIterable, CustomTestStringConvertible {
        case idleQueues, requests
        var testDescription: String { rawValue }
    }

    static let besides = Beside.allCases.flatMap { beside in Backend.available.map { (beside, $0) } }

    /// An idle queue's looks for due work are not uses of the database: a server's job queue and
    /// its four outbox workers look every 2 s, and a sweep took them for requests and rested
    /// beside them on an idle server. Here each of the sweep's turns comes after the job queue's
    /// and the outbox's looks (the outbox's depth counted too, with metrics on): no rest for
    /// requests. Three reads for requests at each turn instead make a rest at each turn but the
    /// first, five for thirty rows at five a batch. On both databases.
    @Test(arguments: besides)
    func anIdleQueuesLooksForWorkAreNoUseASweepRestsBeside(_ beside: Beside, _ backend: Backend) async throws {
        let settings = HousekeepingPace.Settings(restPerBatch: 40, longestRest: .seconds(1), logBudget: 1e15)
        try await HousekeepingPace.$settings.withValue(settings) {
            try await TestDatabase.with(backend) { database, _ in
                try await Migrator(database: database).migrate(now: 1_800_000_000)
                try await SweepTable.thirtyRows(in: database)
                let queues = SQLStore(database: database)
                let clock = ManualClock(Date())
                let logger = Logger(label: "queues")
                let jobs = JobWorker(store: queues, sealer: SecretSealer(secret: nil), clock: clock, logger: logger, handlers: [:])
                let mail = try Self.mailWorker(
                    queues, DevOutboxTransport(logger: logger), clock: clock, logger: logger, metrics: ServerMetrics(enabled: true))
                let store = SQLStore(
                    database: NotingDatabase(database) { inner in
                        switch beside {
                        case .idleQueues:
                            await jobs.runDue()
                            for lane in OutboxLane.allCases { await mail.deliverDue(on: lane) }
                        case .requests:
                            for _ in 0..<3 { _ = try? await inner.query("SELECT count(*) AS n FROM t", []) }
                        }
                    })
                let swept = try await SweepTable.sweepFiveAtATime(store)
                #expect(swept == 30)
                #expect(database.housekeepingRests[.requests].count == (beside == .requests ? 5 : 0), "\(database.housekeepingRests)")
            }
        }
    }

    /// Every kind of background work tells a stop from a failure by its task, in one place: with
    /// its task cancelled (a shutdown) any error is a stop, logged at info with what becomes of
    /// the work; without, even a `CancellationError` (a deadline of the work's own) is a failure.
    @Test(arguments: BackgroundWork.allCases)
    func backgroundWorkTellsTheShutdownsStopFromAFailure(_ work: BackgroundWork) async throws {
        let stop: String =
            switch work {
            case .retentionSweep:
                "retention sweep stopped by the shutdown; what its batches deleted stays deleted, and the next start sweeps the rest"
            case .staleAccountRemoval: "stale account removal stopped by the shutdown; it runs again at the next start"
            case .voidedPurchasesSweep: "google play voided purchases sweep stopped by the shutdown; it runs again at the next start"
            case .passwordHashSchemes: "password hash scheme refresh stopped by the shutdown; it runs again at the next start"
            case .providerKeyPrefetch: "provider key prefetch stopped by the shutdown; it runs again at the next start"
            case .signingKeyReload: "signing key reload stopped by the shutdown; it runs again at the next start"
            case .overviewCount: "console overview count stopped by the shutdown; the last count stays, and the next view of the overview asks again"
            case .jobQueue: String(Queue.jobs.stopLine.dropFirst("info ".count))
            case .mailOutbox: String(Queue.mail.stopLine.dropFirst("info ".count))
            }
        let log = KeptLog { "\($0.level) \($0.message) \($0.metadata?["cause"].map { "cause=\($0)" } ?? "")" }
        let logger = log.logger(label: "background")
        #expect(!logger.backgroundWork(work, endedBy: CancellationError()))
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return logger.backgroundWork(work, endedBy: StoreError.cancelled)
        }
        #expect(await cancelled.value)
        #expect(log.lines == ["warning \(work.rawValue) failed cause=CancellationError()", "info \(stop) "], "\(log.lines)")
    }
}
