import Foundation
import GatehouseCore
import GatehouseStore
import Logging

/// A row of a queue of leased work: claimed with a lease, tried, then done or tried again later.
protocol LeasedRow: Sendable {
    var id: UUID { get }
    /// The attempts made before this one.
    var attempts: Int { get }
    /// The trace of the request that queued it (with traces on).
    var traceContext: String? { get }
}

extension Job: LeasedRow {}
extension OutboxMessage: LeasedRow {}

/// The part every queue of leased work goes through: the job queue (`JobWorker`) and the mail
/// outbox with its SMS (`MailWorker`). It claims one due row at a time, so that a lease never
/// has to cover more than one attempt, runs it in the trace of the request that queued it, and
/// tells an attempt's three ends apart (its claim, which polls every 2 s, is not a use of the
/// database that housekeeping rests beside: `DatabaseUses`):
/// - done: the queue recorded it in `attempt(_:)`;
/// - failed: `failed(_:attempts:error:)` counts it and schedules the next attempt or gives up;
/// - cut short by a shutdown: not an attempt. Nothing is counted or written; the row's lease
///   runs out and the next start (or another node) takes it with its attempts as they were, so
///   a deploy never gives up a row on its last attempt.
protocol LeasedQueue: Sendable {
    associatedtype Row: LeasedRow
    /// The worker's name in the log (`BackgroundWork`).
    var work: BackgroundWork { get }
    /// The log key of a row's id (`job_id`, `mail_id`).
    var rowKey: String { get }
    var logger: Logger { get }
    var telemetry: Telemetry { get }
    /// Claims the next due row with a lease, or nil when none is due.
    func claim() async throws -> Row?
    /// Does the row's work and records it as done.
    func attempt(_ row: Row) async throws
    /// Records a failed attempt (`attempts` counts it): schedules the next or gives the row up.
    func failed(_ row: Row, attempts: Int, error: any Error) async
}

extension LeasedQueue {
    /// Takes every row that is due now, one after another; returns how many it took.
    @discardableResult
    func drain() async -> Int {
        var taken = 0
        while !Task.isCancelled {
            let row: Row?
            do {
                // A look for due work is not a use housekeeping rests beside; the row's work is.
                row = try await DatabaseUses.$counted.withValue(false) { try await claim() }
            } catch {
                logger.backgroundWork(work, endedBy: error)
                break
            }
            guard let row else { break }
            await telemetry.restoring(row.traceContext) { await take(row) }
            taken += 1
        }
        return taken
    }

    private func take(_ row: Row) async {
        do {
            try await attempt(row)
        } catch where BackgroundWork.stoppedByTheShutdown {
            logger.backgroundWork(work, endedBy: error, metadata: [rowKey: "\(row.id)", "attempt": "\(row.attempts + 1)"])
        } catch {
            await failed(row, attempts: row.attempts + 1, error: error)
        }
    }
}
