import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// Records domain events in the feed (`GET /admin/v1/events`) and, when a webhook is
/// configured, queues their delivery as a durable job in the same transaction.
struct EventRecorder: Sendable {
    let jobs: JobWorker
    let webhookConfigured: Bool
    let clock: any WallClock
    /// The preset starts a trial with every account (Hannah): `user.created` brings `trial.started`.
    var trialStartsAtSignup = false

    /// Inside the caller's transaction (a `Work`'s); true when a webhook delivery was queued,
    /// so the job worker is woken after the commit. `traceContext` goes with the delivery.
    func record(
        _ tx: any EventStore & JobStore, _ type: DomainEvent.Kind, user: UserID?, data: [String: String] = [:], traceContext: String? = nil
    ) async throws -> Bool {
        try await append(tx, type, user: user, data: data, traceContext: traceContext)
        if type == .userCreated, trialStartsAtSignup {
            try await append(tx, .trialStarted, user: user, data: ["at": "signup"], traceContext: traceContext)
        }
        return webhookConfigured
    }

    private func append(
        _ tx: any EventStore & JobStore, _ type: DomainEvent.Kind, user: UserID?, data: [String: String], traceContext: String?
    ) async throws {
        let event = DomainEvent(type: type, userID: user, data: data, createdAt: clock.now)
        try await tx.insertEvent(event)
        if webhookConfigured {
            try await jobs.enqueue(
                tx, kind: WebhookSender.jobKind,
                payload: WebhookSender.Event(
                    id: event.id.uuidString.lowercased(), type: type.rawValue, userID: user?.description, createdAt: event.createdAt.rfc3339,
                    data: data), traceContext: traceContext)
        }
    }
}
