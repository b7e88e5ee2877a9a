import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import Logging
import ServiceLifecycle
import Synchronization

/// Delivers the outbox, a queue of leased work (`LeasedQueue`) on each lane: claims due mail
/// with a lease (several nodes never send one mail twice at once), sends, and marks it sent or
/// schedules a retry with backoff. A send a shutdown cuts short is sent again when its lease
/// ends, its attempt not counted. Polls every few seconds, and at once when woken.
final class MailWorker: Service, Sendable {
    let store: any OutboxStore
    let transport: any MailTransport
    /// Fills in queued forgot-password and magic-link requests before they are sent.
    let composer: MailRequestComposer
    let clock: any WallClock
    let logger: Logger
    let metrics: ServerMetrics
    /// Each mail is sent in the trace of the request that queued it (with traces on).
    let telemetry: Telemetry
    /// One loop per worker: `deliveriesPerLane` on each lane, each claiming on its own, so a
    /// delivery that hangs holds up only its own worker (issue 58).
    private let loops: [(lane: OutboxLane, loop: WakeLoop)]
    /// How long a claim keeps other workers off a mail: longer than one delivery may take
    /// (`SMTPTransport`'s deadline), short enough that a crashed node's mail goes out soon.
    static let leaseSeconds = 40

    init(
        store: any OutboxStore, transport: any MailTransport, composer: MailRequestComposer, clock: any WallClock, logger: Logger,
        metrics: ServerMetrics = .off, telemetry: Telemetry = .off, pollInterval: Duration = .seconds(2)
    ) {
        self.telemetry = telemetry
        self.store = store
        self.transport = transport
        self.composer = composer
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        loops = OutboxLane.allCases.flatMap { lane in
            (0..<Self.deliveriesPerLane).map { _ in (lane, WakeLoop(pollInterval: pollInterval)) }
        }
    }

    func wake() { for worker in loops { worker.loop.wake() } }

    /// Lets the worker begin (called once the database is ready).
    func start() { for worker in loops { worker.loop.start() } }

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            for worker in loops {
                group.addTask { await worker.loop.run { await self.deliverDue(on: worker.lane) } }
            }
        }
    }

    /// Deliveries under way at once on each lane (`OutboxLane`).
    static let deliveriesPerLane = 2

    /// Sends everything due now on `lane`; returns how many messages it handled. Each lane
    /// (mail, SMS) is delivered by its own workers, `deliveriesPerLane` at once (issue 58): a
    /// hanging SMS hook delays only SMS, and one slow message only its own worker.
    @discardableResult
    func deliverDue(on lane: OutboxLane) async -> Int {
        let handled = await Lane(worker: self, lane: lane).drain()
        // The queue's depth as each pass ends (every poll and every wake-up).
        if metrics.isEnabled, let pending = try? await DatabaseUses.$counted.withValue(false, operation: { try await store.pendingMailCount() }) {
            metrics.mailQueueDepth(pending)
        }
        return handled
    }

    /// One lane of the outbox: its part in the queue of leased work (`LeasedQueue`).
    struct Lane: LeasedQueue {
        let worker: MailWorker
        let lane: OutboxLane

        var work: BackgroundWork { .mailOutbox }
        var rowKey: String { "mail_id" }
        var logger: Logger { worker.logger }
        var telemetry: Telemetry { worker.telemetry }

        func claim() async throws -> OutboxMessage? {
            try await worker.store.claimDueMail(now: worker.clock.now, limit: 1, leaseSeconds: MailWorker.leaseSeconds, lane: lane).first
        }

        func attempt(_ claimed: OutboxMessage) async throws {
            var message = claimed
            do {
                if message.isRequest {
                    guard let composed = try await worker.composer.compose(message) else { return }
                    message = composed
                }
                try await worker.transport.deliver(message)
            } catch where !BackgroundWork.stoppedByTheShutdown {
                // A failed attempt, before the mail was handed over. An SMS is counted by its own
                // sender (`SMSFailures`).
                if message.kind != PhoneCodes.outboxKind { worker.metrics.mailFailed() }
                throw error
            }
            if message.kind != PhoneCodes.outboxKind { worker.metrics.mailSent() }
            // The kind and attempt only: never the address or a link.
            logger.info("mail sent", metadata: ["mail_id": "\(message.id)", "kind": "\(message.kind)", "attempt": "\(message.attempts + 1)"])
            try await worker.store.markMailSent(message.id, at: worker.clock.now, keepBodies: worker.transport.keepsBodies(of: message))
        }

        func failed(_ message: OutboxMessage, attempts: Int, error: any Error) async {
            let next = MailRetryPolicy.nextAttempt(after: attempts, now: worker.clock.now)
            logger.warning(
                next == nil ? "mail delivery failed for good" : "mail delivery failed; will retry",
                metadata: ["mail_id": "\(message.id)", "attempt": "\(attempts)", "cause": "\(error)"])
            try? await worker.store.markMailFailed(message.id, error: "\(error)", nextAttempt: next, at: worker.clock.now)
        }
    }
}
