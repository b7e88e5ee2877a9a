import Foundation
import GatehouseCore

extension SQLStore {
    public func insertAudit(_ event: AuditEvent) async throws(StoreError) {
        let details: SQLValue = event.details.isEmpty ? .null : .text(JSONText.object(event.details))
        try await executor.query(
            """
            INSERT INTO audit_log (id, created_at, event, outcome, user_id, session_id, ip_address, user_agent, details)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(UUIDText.lowercase(event.id)), .integer(event.createdAt.unixSeconds), .text(event.event.rawValue),
                .text(event.outcome.rawValue), SQLValue(event.userID?.description), SQLValue(event.sessionID?.description),
                SQLValue(event.ipAddress), SQLValue(event.userAgent), details,
            ])
    }

    public func auditEvents(userID: UserID?, before: Int64?, limit: Int) async throws(StoreError) -> [AuditEvent] {
        try await auditEvents(userID: userID, event: nil, before: before, limit: limit)
    }

    public func auditEvents(userID: UserID?, event: String?, before: Int64?, limit: Int) async throws(StoreError) -> [AuditEvent] {
        var conditions: [String] = []
        var binds: [SQLValue] = []
        if let userID {
            conditions.append("user_id = ?")
            binds.append(.text(userID.description))
        }
        if let event {
            conditions.append("event = ?")
            binds.append(.text(event))
        }
        if let before {
            conditions.append("seq < ?")
            binds.append(.integer(before))
        }
        binds.append(.integer(Int64(max(1, min(limit, 1000)))))
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try await executor.query(
            """
            SELECT seq, id, created_at, event, outcome, user_id, session_id, ip_address, user_agent, details FROM audit_log
            \(whereClause) ORDER BY seq DESC LIMIT ?
            """, binds
        ).map { row throws(StoreError) in
            guard let id = UUID(uuidString: try row.string("id")) else { throw StoreError.decoding("bad audit id") }
            var details: [String: String] = [:]
            if let text = try row.optionalString("details"),
                let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String]
            {
                details = object
            }
            let name = try row.string("event")
            // The server writes every name; one this build does not know is a newer server's.
            guard let event = AuditEvent.Name(rawValue: name) else { throw StoreError.decoding("unknown audit event '\(name)'") }
            return AuditEvent(
                id: id, sequence: try row.int("seq"), createdAt: Date(unixSeconds: try row.int("created_at")), event: event,
                outcome: AuditEvent.Outcome(rawValue: try row.string("outcome")), userID: try row.optionalString("user_id").flatMap(UserID.init),
                sessionID: try row.optionalString("session_id").flatMap(SessionID.init),
                ipAddress: try row.optionalString("ip_address"), userAgent: try row.optionalString("user_agent"), details: details)
        }
    }
}
