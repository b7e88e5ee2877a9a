import Foundation
import GatehouseCore

extension SQLStore {
    private static let outboxColumns = """
        id, created_at, kind, recipient, subject, text_body, html_body, link_host, status, attempts, next_attempt_at, \
        last_error, sent_at, payload, trace_context
        """

    public func enqueueMail(_ message: OutboxMessage) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO outbox (\(Self.outboxColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(message.id.uuidString.lowercased()), .integer(message.createdAt.unixSeconds), .text(message.kind),
                .text(message.recipient), .text(message.subject), SQLValue(message.textBody), SQLValue(message.htmlBody),
                SQLValue(message.linkHost), .text(message.status), .integer(Int64(message.attempts)),
                .integer(message.nextAttemptAt.unixSeconds), SQLValue(message.lastError), SQLValue(message.sentAt?.unixSeconds),
                SQLValue(try Self.encodePayload(message.payload)), SQLValue(message.traceContext),
            ])
    }

    public func claimDueMail(now: Date, limit: Int, leaseSeconds: Int) async throws(StoreError) -> [OutboxMessage] {
        try await claimDueMail(now: now, limit: limit, leaseSeconds: leaseSeconds, only: "")
    }

    public func claimDueMail(now: Date, limit: Int, leaseSeconds: Int, lane: OutboxLane) async throws(StoreError) -> [OutboxMessage] {
        try await claimDueMail(now: now, limit: limit, leaseSeconds: leaseSeconds, only: lane == .sms ? " AND kind = 'sms'" : " AND kind <> 'sms'")
    }

    private func claimDueMail(now: Date, limit: Int, leaseSeconds: Int, only lane: String) async throws(StoreError) -> [OutboxMessage] {
        let time = Int64(now.unixSeconds)
        // The conditions are repeated outside the subquery: on PostgreSQL a row another node
        // claimed meanwhile is re-checked after its lock is released, and skipped.
        let rows = try await executor.query(
            """
            UPDATE outbox SET claimed_until = ?
            WHERE id IN (
                SELECT id FROM outbox
                WHERE status = 'pending' AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)\(lane)
                ORDER BY next_attempt_at, created_at LIMIT ?
            ) AND status = 'pending' AND (claimed_until IS NULL OR claimed_until <= ?)
            RETURNING \(Self.outboxColumns)
            """,
            [.integer(time + Int64(leaseSeconds)), .integer(time), .integer(time), .integer(Int64(limit)), .integer(time)])
        return try rows.map(Self.outbox(from:)).sorted { $0.createdAt < $1.createdAt }
    }

    public func pendingMailCount() async throws(StoreError) -> Int {
        let rows = try await executor.query("SELECT COUNT(*) AS pending FROM outbox WHERE status = 'pending'", [])
        return Int(try rows.first?.int("pending") ?? 0)
    }

    public func markMailSent(_ id: UUID, at date: Date, keepBodies: Bool) async throws(StoreError) {
        let clear = keepBodies ? "" : ", text_body = NULL, html_body = NULL, payload = NULL"
        try await executor.query(
            "UPDATE outbox SET status = 'sent', sent_at = ?, attempts = attempts + 1, claimed_until = NULL\(clear) WHERE id = ?",
            [.integer(date.unixSeconds), .text(id.uuidString.lowercased())])
    }

    public func markMailFailed(_ id: UUID, error: String, nextAttempt: Date?, at date: Date) async throws(StoreError) {
        if let nextAttempt {
            try await executor.query(
                """
                UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?, claimed_until = NULL
                WHERE id = ?
                """, [.text(String(error.prefix(500))), .integer(nextAttempt.unixSeconds), .text(id.uuidString.lowercased())])
        } else {
            try await executor.query(
                """
                UPDATE outbox SET attempts = attempts + 1, last_error = ?, status = 'failed', claimed_until = NULL,
                text_body = NULL, html_body = NULL, payload = NULL WHERE id = ?
                """, [.text(String(error.prefix(500))), .text(id.uuidString.lowercased())])
        }
    }

    public func composeMail(
        _ id: UUID, recipient: String, subject: String, text: String, html: String?, linkHost: String?, payload: [String: String]?
    ) async throws(StoreError) {
        try await executor.query(
            "UPDATE outbox SET recipient = ?, subject = ?, text_body = ?, html_body = ?, link_host = ?, payload = ? WHERE id = ?",
            [
                .text(recipient), .text(subject), .text(text), SQLValue(html), SQLValue(linkHost), SQLValue(try Self.encodePayload(payload)),
                .text(id.uuidString.lowercased()),
            ])
    }

    public func dropMail(_ id: UUID, reason: String, at date: Date) async throws(StoreError) {
        try await executor.query(
            """
            UPDATE outbox SET status = 'dropped', recipient = '', payload = NULL, last_error = ?, sent_at = ?, claimed_until = NULL
            WHERE id = ?
            """, [.text(reason), .integer(date.unixSeconds), .text(id.uuidString.lowercased())])
    }

    private static func encodePayload(_ payload: [String: String]?) throws(StoreError) -> String? {
        guard let payload else { return nil }
        do {
            return String(decoding: try JSONEncoder().encode(payload), as: UTF8.self)
        } catch {
            throw StoreError.decoding("cannot encode an outbox payload")
        }
    }

    private static func decodePayload(_ text: String?) throws(StoreError) -> [String: String]? {
        guard let text else { return nil }
        do {
            return try JSONDecoder().decode([String: String].self, from: Data(text.utf8))
        } catch {
            throw StoreError.decoding("bad outbox payload")
        }
    }

    public func recentMail(limit: Int) async throws(StoreError) -> [OutboxMessage] {
        try await executor.query(
            "SELECT \(Self.outboxColumns) FROM outbox ORDER BY created_at DESC, id DESC LIMIT ?", [.integer(Int64(max(1, min(limit, 500))))]
        ).map(Self.outbox(from:))
    }

    private static func outbox(from row: SQLRow) throws(StoreError) -> OutboxMessage {
        guard let id = UUID(uuidString: try row.string("id")) else { throw StoreError.decoding("bad outbox id") }
        return OutboxMessage(
            id: id, createdAt: Date(unixSeconds: try row.int("created_at")), kind: try row.string("kind"),
            recipient: try row.string("recipient"), subject: try row.string("subject"), textBody: try row.optionalString("text_body"),
            htmlBody: try row.optionalString("html_body"), linkHost: try row.optionalString("link_host"), status: try row.string("status"),
            attempts: Int(try row.int("attempts")), nextAttemptAt: Date(unixSeconds: try row.int("next_attempt_at")),
            lastError: try row.optionalString("last_error"), sentAt: try row.optionalInt("sent_at").map(Date.init(unixSeconds:)),
            payload: try decodePayload(try row.optionalString("payload")), traceContext: try row.optionalString("trace_context"))
    }
}
