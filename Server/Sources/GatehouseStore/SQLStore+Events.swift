import Foundation
import GatehouseCore

extension SQLStore {
    public func insertEvent(_ event: DomainEvent) async throws(StoreError) {
        if dialect == .postgres {
            // Writers take turns, so that sequence order is commit order and a consumer reading
            // `after=<cursor>` never skips an event that commits late. Released at commit.
            try await executor.query("SELECT pg_advisory_xact_lock(727275)")
        }
        try await executor.query(
            "INSERT INTO events (id, type, user_id, data, created_at, anonymous_id) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(UUIDText.lowercase(event.id)), .text(event.type.rawValue), SQLValue(event.userID?.description),
                .text(JSONText.object(event.data)), .integer(event.createdAt.unixSeconds), SQLValue(event.anonymousID),
            ])
    }

    public func attachAnonymousEvents(_ anonymousID: String, to userID: UserID) async throws(StoreError) {
        try await executor.query(
            "UPDATE events SET user_id = ? WHERE anonymous_id = ? AND user_id IS NULL", [.text(userID.description), .text(anonymousID)])
    }

    public func events(after: Int64?, userID: UserID?, limit: Int) async throws(StoreError) -> [DomainEvent] {
        try await events(after: after, type: nil, userID: userID, limit: limit)
    }

    public func events(after: Int64?, type: String?, userID: UserID?, limit: Int) async throws(StoreError) -> [DomainEvent] {
        var conditions = ["seq > ?"]
        var binds: [SQLValue] = [.integer(after ?? 0)]
        if let type {
            conditions.append("type = ?")
            binds.append(.text(type))
        }
        if let userID {
            conditions.append("user_id = ?")
            binds.append(.text(userID.description))
        }
        binds.append(.integer(Int64(max(1, min(limit, 1000)))))
        return try await executor.query(
            "SELECT seq, id, type, user_id, data, created_at, anonymous_id FROM events WHERE \(conditions.joined(separator: " AND ")) ORDER BY seq LIMIT ?",
            binds
        ).map { row throws(StoreError) in
            guard let id = UUID(uuidString: try row.string("id")) else { throw StoreError.decoding("bad event id") }
            let data = (try? JSONSerialization.jsonObject(with: Data(try row.string("data").utf8))) as? [String: String] ?? [:]
            let kind = try row.string("type")
            guard let type = DomainEvent.Kind(rawValue: kind) else { throw StoreError.decoding("unknown event type '\(kind)'") }
            return DomainEvent(
                id: id, sequence: try row.int("seq"), type: type,
                userID: try row.optionalString("user_id").flatMap(UserID.init), data: data,
                createdAt: Date(unixSeconds: try row.int("created_at")), anonymousID: try row.optionalString("anonymous_id"))
        }
    }
}
