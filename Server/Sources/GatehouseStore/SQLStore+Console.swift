import Foundation
import GatehouseCore

extension SQLStore {
    public func insertConsoleSession(hash: [UInt8], expiresAt: Date, now: Date) async throws(StoreError) {
        _ = try await sweep(Sweep(table: "console_sessions", key: "nonce_hash", condition: "expires_at <= ?", order: "expires_at", reach: .ownRow,
            binds: [.integer(now.unixSeconds)]))
        try await executor.query(
            "INSERT INTO console_sessions (nonce_hash, expires_at) VALUES (?, ?)", [.blob(hash), .integer(expiresAt.unixSeconds)])
    }

    public func consoleSessionIsLive(hash: [UInt8], now: Date) async throws(StoreError) -> Bool {
        !(try await executor.query(
            "SELECT 1 AS live FROM console_sessions WHERE nonce_hash = ? AND expires_at > ?", [.blob(hash), .integer(now.unixSeconds)]
        ).isEmpty)
    }

    public func deleteConsoleSession(hash: [UInt8]) async throws(StoreError) {
        try await executor.query("DELETE FROM console_sessions WHERE nonce_hash = ?", [.blob(hash)])
    }

    public func dailyActivity(from firstDay: Int64, through lastDay: Int64) async throws(StoreError) -> [DailyActivity] {
        guard firstDay <= lastDay else { return [] }
        var days = [Int64: DailyActivity]()
        for day in firstDay...lastDay { days[day] = DailyActivity(day: day) }
        let start = firstDay * 86_400, end = (lastDay + 1) * 86_400
        let range: [SQLValue] = [.integer(start), .integer(end)]
        // Integer division on both databases: created_at is whole seconds.
        func counts(_ sql: String, _ binds: [SQLValue], into path: WritableKeyPath<DailyActivity, Int>) async throws(StoreError) {
            for row in try await executor.query(sql, binds) {
                let day = try row.int("day")
                days[day]?[keyPath: path] = Int(try row.int("n"))
            }
        }
        try await counts(
            "SELECT created_at / 86400 AS day, COUNT(*) AS n FROM users WHERE created_at >= ? AND created_at < ? GROUP BY created_at / 86400",
            range, into: \.signUps)
        try await counts(
            "SELECT created_at / 86400 AS day, COUNT(*) AS n FROM sessions WHERE created_at >= ? AND created_at < ? GROUP BY created_at / 86400",
            range, into: \.signIns)
        try await counts(
            """
            SELECT created_at / 86400 AS day, COUNT(*) AS n FROM audit_log
            WHERE created_at >= ? AND created_at < ? AND event IN ('login', 'passkey_assertion', 'mfa_verify')
            AND outcome IN ('failure', 'locked') GROUP BY created_at / 86400
            """, range, into: \.failures)
        try await counts(
            """
            SELECT created_at / 86400 AS day, COUNT(*) AS n FROM audit_log
            WHERE created_at >= ? AND created_at < ? AND event = 'lockout' GROUP BY created_at / 86400
            """, range, into: \.lockouts)
        // Every refresh and every new session issues a refresh token: a day's tokens name the
        // accounts that used the app that day.
        try await counts(
            """
            SELECT r.issued_at / 86400 AS day, COUNT(DISTINCT s.user_id) AS n FROM refresh_tokens r
            JOIN sessions s ON s.id = r.session_id
            WHERE r.issued_at >= ? AND r.issued_at < ? GROUP BY r.issued_at / 86400
            """, range, into: \.activeUsers)
        return days.values.sorted { $0.day < $1.day }
    }

    public func failedJobs(limit: Int) async throws(StoreError) -> FailedJobs {
        var failed = FailedJobs()
        failed.total = Int(try await executor.query("SELECT COUNT(*) AS n FROM jobs WHERE status = 'failed'", []).first?.int("n") ?? 0)
        failed.latest = try await executor.query(
            "SELECT id, kind, attempts, last_error, created_at FROM jobs WHERE status = 'failed' ORDER BY created_at DESC, id LIMIT ?",
            [.integer(Int64(limit))]
        ).map { row throws(StoreError) in
            guard let id = UUID(uuidString: try row.string("id")) else { throw StoreError.decoding("bad job id") }
            return FailedJobs.Entry(
                id: id, kind: try row.string("kind"), attempts: Int(try row.int("attempts")), lastError: try row.optionalString("last_error") ?? "",
                createdAt: Date(unixSeconds: try row.int("created_at")))
        }
        return failed
    }

    public func mailCounts() async throws(StoreError) -> MailCounts {
        var counts = MailCounts()
        for row in try await executor.query(
            """
            SELECT status, COUNT(*) AS n, CAST(SUM(CASE WHEN attempts > 1 OR (status = 'pending' AND attempts > 0) THEN 1 ELSE 0 END) AS BIGINT) AS retried
            FROM outbox GROUP BY status
            """, [])
        {
            let n = Int(try row.int("n"))
            switch try row.string("status") {
            case "pending": counts.pending = n
            case "sent": counts.sent = n
            case "failed": counts.failed = n
            case "dropped": counts.dropped = n
            default: break
            }
            counts.retried += Int(try row.optionalInt("retried") ?? 0)
        }
        return counts
    }
}
