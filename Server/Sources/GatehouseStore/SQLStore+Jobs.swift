import Foundation
import GatehouseCore

extension SQLStore {
    public func enqueueJob(_ job: Job) async throws(StoreError) {
        try await executor.query(
            """
            INSERT INTO jobs (id, kind, payload, encryption, status, attempts, next_attempt_at, created_at, trace_context)
            VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)
            """,
            [
                .text(job.id.uuidString.lowercased()), .text(job.kind), .blob(job.payload), .text(job.encryption),
                .integer(Int64(job.attempts)), .integer(job.nextAttemptAt.unixSeconds), .integer(job.createdAt.unixSeconds),
                SQLValue(job.traceContext),
            ])
    }

    public func claimDueJob(now: Date, leaseSeconds: Int) async throws(StoreError) -> Job? {
        let time = now.unixSeconds
        let rows = try await executor.query(
            """
            UPDATE jobs SET claimed_until = ?
            WHERE id IN (
                SELECT id FROM jobs
                WHERE status = 'pending' AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)
                ORDER BY next_attempt_at, created_at LIMIT 1
            ) AND status = 'pending' AND (claimed_until IS NULL OR claimed_until <= ?)
            RETURNING id, kind, payload, encryption, attempts, next_attempt_at, created_at, trace_context
            """, [.integer(time + Int64(leaseSeconds)), .integer(time), .integer(time), .integer(time)])
        return try rows.first.map { row throws(StoreError) in
            guard let id = UUID(uuidString: try row.string("id")) else { throw StoreError.decoding("bad job id") }
            return Job(
                id: id, kind: try row.string("kind"), payload: try row.bytes("payload"), encryption: try row.string("encryption"),
                attempts: Int(try row.int("attempts")), nextAttemptAt: Date(unixSeconds: try row.int("next_attempt_at")),
                createdAt: Date(unixSeconds: try row.int("created_at")), traceContext: try row.optionalString("trace_context"))
        }
    }

    public func completeJob(_ id: UUID) async throws(StoreError) {
        // Done jobs are removed: their payloads may hold secrets.
        try await executor.query("DELETE FROM jobs WHERE id = ?", [.text(id.uuidString.lowercased())])
    }

    public func failJob(_ id: UUID, error: String, nextAttempt: Date?) async throws(StoreError) {
        if let nextAttempt {
            try await executor.query(
                "UPDATE jobs SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?, claimed_until = NULL WHERE id = ?",
                [.text(String(error.prefix(500))), .integer(nextAttempt.unixSeconds), .text(id.uuidString.lowercased())])
        } else {
            try await executor.query(
                """
                UPDATE jobs SET attempts = attempts + 1, last_error = ?, status = 'failed', payload = ?, claimed_until = NULL
                WHERE id = ?
                """, [.text(String(error.prefix(500))), .blob([]), .text(id.uuidString.lowercased())])
        }
    }
}
