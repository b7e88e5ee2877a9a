import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// `POST /v1/events`: client analytics (CH08 §9, OKLah §13) into the event feed under type
/// `analytics`, each checked against `AnalyticsCatalog`. A device's events sent before it had an
/// account are given to the user when it sends one with a token.
struct AnalyticsService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any EventStore

    let unitOfWork: UnitOfWork<Stores>
    let throttle: Throttle
    let clock: any WallClock

    static let maximumBatch = 50
    /// Batches per minute from one IP address and for one user.
    static let batchesPerMinute = 60

    func record(_ batch: ClientEventBatch, user: User?, client: ClientInfo) async throws {
        guard (1...Self.maximumBatch).contains(batch.events.count) else {
            throw GatehouseError.invalidRequest("Send between 1 and \(Self.maximumBatch) events at a time.")
        }
        try await throttle.limitIP("events", client: client, limit: Self.batchesPerMinute, windowSeconds: 60)
        if let user { try await throttle.limit("events:\(user.id)", limit: Self.batchesPerMinute, windowSeconds: 60) }
        let now = clock.now
        let records = try batch.events.enumerated().map { index, event in
            try validated(event, index: index, user: user?.id, now: now)
        }
        let anonymousIDs = Set(batch.events.compactMap(\.anonymousID))
        try await unitOfWork.run { work in
            for record in records { try await work.tx.insertEvent(record) }
            if let user {
                for id in anonymousIDs { try await work.tx.attachAnonymousEvents(id, to: user.id) }
            }
        }
    }

    private func validated(_ event: ClientEvent, index: Int, user: UserID?, now: Date) throws -> DomainEvent {
        func refuse(_ message: String) -> GatehouseError { .invalidRequest("events[\(index)]: \(message)") }
        guard let spec = AnalyticsCatalog.events[event.name] else { throw refuse("'\(event.name)' is not an event Gatehouse knows.") }
        guard let occurred = Date(rfc3339: event.occurredAt), occurred <= now.addingTimeInterval(300),
            occurred >= now.addingTimeInterval(-30 * 86_400)
        else { throw refuse("'occurred_at' must be an RFC 3339 time within the last 30 days.") }
        if let anonymous = event.anonymousID, !(8...128).contains(anonymous.utf8.count) {
            throw refuse("'anonymous_id' must be 8 to 128 characters.")
        }
        let properties = event.properties ?? [:]
        for name in spec.required where properties[name] == nil { throw refuse("'\(name)' is required.") }
        var data = ["name": event.name, "occurred_at": occurred.rfc3339]
        for (name, value) in properties {
            guard let kind = spec.properties[name] else { throw refuse("'\(name)' is not a property of \(event.name).") }
            switch (kind, value) {
            case (.string, .string(let text)) where text.count <= 200:
                data[name] = text
            case (.integer, .number(let number)) where number == number.rounded() && abs(number) < 1e15:
                data[name] = String(Int64(number))
            case (.bool, .bool(let flag)):
                data[name] = String(flag)
            case (.oneOf(let allowed), .string(let text)) where allowed.contains(text):
                data[name] = text
            default:
                throw refuse("'\(name)' has the wrong type or value.")
            }
        }
        return DomainEvent(type: .analytics, userID: user, data: data, createdAt: now, anonymousID: event.anonymousID)
    }
}
