import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import Logging
import ServiceLifecycle
import Synchronization

/// Runs durable background jobs (the `jobs` table), a queue of leased work (`LeasedQueue`):
/// claims one due job at a time with a lease, hands its (unsealed) payload to the handler for
/// its kind, and deletes it when done or retries it with backoff. A crash loses nothing: the
/// lease runs out and another node (or the next start) takes the job. A shutdown that cancels a
/// job's work does the same, and the attempt it cut short is not counted.
final class JobWorker: Service, LeasedQueue {
    typealias Handler = @Sendable (Job, Data) async throws -> Void

    let store: any JobStore
    let sealer: SecretSealer
    let clock: any WallClock
    let logger: Logger
    /// Each kind's handler: those of the infrastructure from the start, a use case's added by
    /// `handle(_:with:)` when it is made (before `start`).
    private let handlers: Mutex<[JobKind: Handler]>
    /// Attempts before a job is given up, by kind (default 8: about ten minutes of retries).
    let maximumAttempts: [JobKind: Int]
    /// Each job runs in the trace of the request that queued it (with traces on).
    let telemetry: Telemetry
    /// Failed attempts are counted (`gatehouse_jobs_failed_total`): one given up is never silent.
    let metrics: ServerMetrics
    private let loop = WakeLoop(pollInterval: .seconds(2))
    static let leaseSeconds = 60

    init(
        store: any JobStore, sealer: SecretSealer, clock: any WallClock, logger: Logger, handlers: [JobKind: Handler],
        maximumAttempts: [JobKind: Int] = [:], telemetry: Telemetry = .off, metrics: ServerMetrics = .off
    ) {
        self.telemetry = telemetry
        self.metrics = metrics
        self.store = store
        self.sealer = sealer
        self.clock = clock
        self.logger = logger
        self.handlers = Mutex(handlers)
        self.maximumAttempts = maximumAttempts
    }

    /// Queues a job inside the caller's transaction; call `wake()` after the commit.
    /// `traceContext` (the request's, with traces on) makes the job's run part of its trace.
    func enqueue(_ tx: any JobStore, kind: JobKind, payload: some Encodable, traceContext: String? = nil) async throws {
        let sealed = try sealer.seal(try JSONEncoder().encode(payload))
        try await tx.enqueueJob(
            Job(kind: kind.rawValue, payload: sealed.bytes, encryption: sealed.encryption, createdAt: clock.now, traceContext: traceContext))
    }

    /// Sets the handler of a kind whose work belongs to a use case (made after the infrastructure).
    func handle(_ kind: JobKind, with handler: @escaping Handler) {
        handlers.withLock { $0[kind] = handler }
    }

    func wake() { loop.wake() }
    func start() { loop.start() }

    func run() async throws {
        await loop.run { await self.runDue() }
    }

    /// Runs every job that is due now (`LeasedQueue.drain()`).
    func runDue() async { await drain() }

    // The job queue's part in the queue of leased work.
    var work: BackgroundWork { .jobQueue }
    var rowKey: String { "job_id" }

    func claim() async throws -> Job? {
        try await store.claimDueJob(now: clock.now, leaseSeconds: Self.leaseSeconds)
    }

    func attempt(_ job: Job) async throws {
        guard let handler = JobKind(rawValue: job.kind).flatMap({ kind in handlers.withLock { $0[kind] } }) else { throw ProviderError("no handler for job kind \(job.kind)") }
        try await handler(job, try sealer.open(job.payload, encryption: job.encryption, what: "a job payload"))
        try await store.completeJob(job.id)
    }

    func failed(_ job: Job, attempts: Int, error: any Error) async {
        let maximum = JobKind(rawValue: job.kind).flatMap { maximumAttempts[$0] } ?? 8
        let next = RetryBackoff.nextAttempt(after: attempts, of: maximum, now: clock.now)
        let metadata: Logger.Metadata = ["job_id": "\(job.id)", "kind": "\(job.kind)", "attempt": "\(attempts)", "cause": "\(error)"]
        if next == nil {
            logger.error("background job ran out of attempts and was given up (listed on the console's overview)", metadata: metadata)
        } else {
            logger.warning("background job failed; will retry", metadata: metadata)
        }
        // A kind this version does not know (a row from another version) is one series, not many.
        metrics.jobFailed(kind: JobKind(rawValue: job.kind)?.rawValue ?? "unknown", givenUp: next == nil)
        try? await store.failJob(job.id, error: "\(error)", nextAttempt: next)
    }
}
