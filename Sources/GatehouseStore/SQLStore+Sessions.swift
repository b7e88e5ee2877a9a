import Foundation
import GatehouseCore

extension SQLStore {
    // MARK: Passwords

    public func updatePassword(_ id: UserID, hash: String?, changedAt: Date?, now: Date) async throws(StoreError) {
        if let changedAt {
            try await executor.query(
                "UPDATE users SET password_hash = ?, password_changed_at = ?, updated_at = ? WHERE id = ?",
                [SQLValue(hash), .integer(changedAt.unixSeconds), .integer(now.unixSeconds), .text(id.description)])
        } else {
            // A re-hash under new parameters is not a change of password.
            try await executor.query(
                "UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?",
                [SQLValue(hash), .integer(now.unixSeconds), .text(id.description)])
        }
    }

    // MARK: Sessions

    private static let sessionColumns =
        "id, user_id, provider, created_at, last_active_at, expires_at, revoked_at, revoked_reason, user_agent, ip_address"

    public func insertSession(_ session: Session) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO sessions (\(Self.sessionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(session.id.description), .text(session.userID.description), .text(session.provider),
                .integer(session.createdAt.unixSeconds), .integer(session.lastActiveAt.unixSeconds),
                SQLValue(session.expiresAt?.unixSeconds), SQLValue(session.revokedAt?.unixSeconds),
                SQLValue(session.revokedReason), SQLValue(session.userAgent), SQLValue(session.ipAddress),
            ])
    }

    public func session(id: SessionID) async throws(StoreError) -> Session? {
        try await executor.query("SELECT \(Self.sessionColumns) FROM sessions WHERE id = ?", [.text(id.description)])
            .first.map(Self.session(from:))
    }

    public func sessions(of userID: UserID) async throws(StoreError) -> [Session] {
        try await executor.query(
            "SELECT \(Self.sessionColumns) FROM sessions WHERE user_id = ? ORDER BY created_at DESC, id DESC",
            [.text(userID.description)]
        ).map(Self.session(from:))
    }

    public func touchSession(_ id: SessionID, at date: Date) async throws(StoreError) {
        try await executor.query(
            "UPDATE sessions SET last_active_at = ? WHERE id = ? AND last_active_at < ?",
            [.integer(date.unixSeconds), .text(id.description), .integer(date.unixSeconds)])
    }

    public func revokeSession(_ id: SessionID, reason: String, at date: Date) async throws(StoreError) -> Bool {
        let rows = try await executor.query(
            "UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL RETURNING id",
            [.integer(date.unixSeconds), .text(reason), .text(id.description)])
        return !rows.isEmpty
    }

    public func revokeSessions(of userID: UserID, keeping: SessionID?, reason: String, at date: Date) async throws(StoreError) -> [SessionID] {
        let rows = try await executor.query(
            """
            UPDATE sessions SET revoked_at = ?, revoked_reason = ?
            WHERE user_id = ? AND revoked_at IS NULL AND id <> ? RETURNING id
            """,
            [.integer(date.unixSeconds), .text(reason), .text(userID.description), .text(keeping?.description ?? "")])
        var revoked: [SessionID] = []
        for row in rows {
            if let id = SessionID(try row.string("id")) { revoked.append(id) }
        }
        return revoked
    }

    public func sessionHistory(of userID: UserID, userAgent: String?) async throws(StoreError) -> (any: Bool, fromAgent: Bool) {
        let match = userAgent == nil ? "user_agent IS NULL" : "user_agent = ?"
        var binds: [SQLValue] = []
        if let userAgent { binds.append(.text(userAgent)) }
        binds.append(.text(userID.description))
        let rows = try await executor.query(
            "SELECT COUNT(*) AS total, COUNT(CASE WHEN \(match) THEN 1 END) AS same FROM sessions WHERE user_id = ?", binds)
        guard let row = rows.first else { return (false, false) }
        return (try row.int("total") > 0, try row.int("same") > 0)
    }

    public func revokeSessions(of userID: UserID, provider: String, reason: String, at date: Date) async throws(StoreError) -> [SessionID] {
        let rows = try await executor.query(
            """
            UPDATE sessions SET revoked_at = ?, revoked_reason = ?
            WHERE user_id = ? AND provider = ? AND revoked_at IS NULL RETURNING id
            """,
            [.integer(date.unixSeconds), .text(reason), .text(userID.description), .text(provider)])
        return rows.compactMap { try? SessionID($0.string("id")) ?? nil }
    }

    public func insertRefreshToken(_ token: RefreshTokenRecord) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO refresh_tokens (token_hash, session_id, issued_at, expires_at, rotated_at) VALUES (?, ?, ?, ?, ?)",
            [
                .blob(token.hash), .text(token.sessionID.description), .integer(token.issuedAt.unixSeconds),
                .integer(token.expiresAt.unixSeconds), SQLValue(token.rotatedAt?.unixSeconds),
            ])
    }

    public func refreshToken(hash: [UInt8]) async throws(StoreError) -> RefreshTokenRecord? {
        // Inside a transaction on PostgreSQL, lock the row: concurrent refreshes of one token
        // then see each other's rotation instead of both rotating. SQLite transactions are
        // already serialised by the writer lock.
        let lock = (dialect == .postgres && isTransaction) ? " FOR UPDATE" : ""
        let rows = try await executor.query(
            "SELECT token_hash, session_id, issued_at, expires_at, rotated_at FROM refresh_tokens WHERE token_hash = ?\(lock)",
            [.blob(hash)])
        return try rows.first.map { row throws(StoreError) in
            guard let session = SessionID(try row.string("session_id")) else { throw StoreError.decoding("bad session id") }
            return RefreshTokenRecord(
                hash: try row.bytes("token_hash"), sessionID: session, issuedAt: Date(unixSeconds: try row.int("issued_at")),
                expiresAt: Date(unixSeconds: try row.int("expires_at")),
                rotatedAt: try row.optionalInt("rotated_at").map(Date.init(unixSeconds:)))
        }
    }

    public func markRefreshTokenRotated(hash: [UInt8], at date: Date) async throws(StoreError) {
        try await executor.query(
            "UPDATE refresh_tokens SET rotated_at = ? WHERE token_hash = ? AND rotated_at IS NULL",
            [.integer(date.unixSeconds), .blob(hash)])
    }

    private static func session(from row: SQLRow) throws(StoreError) -> Session {
        guard let id = SessionID(try row.string("id")), let user = UserID(try row.string("user_id")) else {
            throw StoreError.decoding("session has a malformed id")
        }
        return Session(
            id: id, userID: user, provider: try row.string("provider"), createdAt: Date(unixSeconds: try row.int("created_at")),
            lastActiveAt: Date(unixSeconds: try row.int("last_active_at")),
            expiresAt: try row.optionalInt("expires_at").map(Date.init(unixSeconds:)),
            revokedAt: try row.optionalInt("revoked_at").map(Date.init(unixSeconds:)),
            revokedReason: try row.optionalString("revoked_reason"), userAgent: try row.optionalString("user_agent"),
            ipAddress: try row.optionalString("ip_address"))
    }

    // MARK: Throttles

    public func throttle(key: String) async throws(StoreError) -> ThrottleState? {
        try await executor.query("SELECT failures, locked_until FROM throttles WHERE key = ?", [.text(key)]).first.map {
            row throws(StoreError) in
            ThrottleState(
                failures: Int(try row.int("failures")), lockedUntil: try row.optionalInt("locked_until").map(Date.init(unixSeconds:)))
        }
    }

    public func reserveAttempt(key: String, at date: Date, schedule: LockSchedule) async throws(StoreError) -> AttemptReservation {
        let now = date.unixSeconds
        // The lock an attempt takes when it is the n-th failure, n = the stored count + 1: a
        // CASE over the policy's own table, so the policy stays in GatehouseCore. Every value
        // inlined is an integer of the preset's, so the text is the same for every call (now is
        // `excluded.updated_at`, the bound value).
        var lock = "CASE WHEN throttles.failures + 1 < \(schedule.threshold) THEN NULL"
        for (index, wait) in schedule.waits.enumerated().dropLast() {
            lock += " WHEN throttles.failures + 1 = \(schedule.threshold + index) THEN excluded.updated_at + \(wait)"
        }
        lock += " ELSE excluded.updated_at + \(schedule.waits[schedule.waits.count - 1]) END"
        for _ in 0..<3 {
            let rows = try await executor.query(
                """
                INSERT INTO throttles (key, failures, locked_until, updated_at) VALUES (?, 1, ?, ?)
                ON CONFLICT (key) DO UPDATE SET failures = throttles.failures + 1, locked_until = \(lock), updated_at = excluded.updated_at
                WHERE throttles.locked_until IS NULL OR throttles.locked_until <= ?
                RETURNING failures, locked_until
                """, [.text(key), SQLValue(schedule.wait(failures: 1).map { now + $0 }), .integer(now), .integer(now)])
            if let row = rows.first {
                return .allowed(
                    failures: Int(try row.int("failures")), lockedUntil: try row.optionalInt("locked_until").map(Date.init(unixSeconds:)))
            }
            // Locked: say until when. A success may have cleared the key in between; try again.
            if let until = try await throttle(key: key)?.lockedUntil, until > date { return .locked(until: until) }
        }
        throw StoreError.conflict("the throttle for a key kept changing")
    }

    public func clearThrottle(key: String) async throws(StoreError) {
        try await executor.query("DELETE FROM throttles WHERE key = ?", [.text(key)])
    }

    public func hitRateLimit(key: String, windowStart: Int64) async throws(StoreError) -> Int {
        let rows = try await executor.query(
            """
            INSERT INTO rate_limits (key, window_start, count) VALUES (?, ?, 1)
            ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limits.count + 1
            RETURNING count
            """, [.text(key), .integer(windowStart)])
        return Int(try rows.first?.int("count") ?? 1)
    }

    public func rateLimitCount(key: String, windowStart: Int64) async throws(StoreError) -> Int {
        let rows = try await executor.query(
            "SELECT count FROM rate_limits WHERE key = ? AND window_start = ?", [.text(key), .integer(windowStart)])
        return Int(try rows.first?.int("count") ?? 0)
    }

    // MARK: Audit

    public func insertAudit(_ event: AuditEvent) async throws(StoreError) {
        let details: SQLValue
        if event.details.isEmpty {
            details = .null
        } else {
            let data = (try? JSONSerialization.data(withJSONObject: event.details, options: [.sortedKeys])) ?? Data("{}".utf8)
            details = .text(String(decoding: data, as: UTF8.self))
        }
        try await executor.query(
            """
            INSERT INTO audit_log (id, created_at, event, outcome, user_id, session_id, ip_address, user_agent, details)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(event.id.uuidString.lowercased()), .integer(event.createdAt.unixSeconds), .text(event.event),
                .text(event.outcome), SQLValue(event.userID?.description), SQLValue(event.sessionID?.description),
                SQLValue(event.ipAddress), SQLValue(event.userAgent), details,
            ])
    }

    public func auditEvents(userID: UserID?, before: Int64?, limit: Int) async throws(StoreError) -> [AuditEvent] {
        var conditions: [String] = []
        var binds: [SQLValue] = []
        if let userID {
            conditions.append("user_id = ?")
            binds.append(.text(userID.description))
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
            return AuditEvent(
                id: id, sequence: try row.int("seq"), createdAt: Date(unixSeconds: try row.int("created_at")), event: try row.string("event"),
                outcome: try row.string("outcome"), userID: try row.optionalString("user_id").flatMap(UserID.init),
                sessionID: try row.optionalString("session_id").flatMap(SessionID.init),
                ipAddress: try row.optionalString("ip_address"), userAgent: try row.optionalString("user_agent"), details: details)
        }
    }

    // MARK: Secrets

    public func secret(named name: String) async throws(StoreError) -> (value: [UInt8], encryption: String)? {
        try await executor.query("SELECT value, encryption FROM server_secrets WHERE name = ?", [.text(name)]).first.map {
            row throws(StoreError) in (try row.bytes("value"), try row.string("encryption"))
        }
    }

    public func insertSecret(named name: String, value: [UInt8], encryption: String, at date: Date) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO server_secrets (name, value, encryption, created_at) VALUES (?, ?, ?, ?)",
            [.text(name), .blob(value), .text(encryption), .integer(date.unixSeconds)])
    }

    public func updateSecret(named name: String, value: [UInt8], encryption: String) async throws(StoreError) {
        try await executor.query(
            "UPDATE server_secrets SET value = ?, encryption = ? WHERE name = ?", [.blob(value), .text(encryption), .text(name)])
    }
}

extension SQLStore {
    public func purge(cutoff: Date, idleBefore: Date, windowsBefore: Date, notificationsBefore: Date) async throws(StoreError) -> PurgeCounts {
        var counts = PurgeCounts()
        let old = SQLValue.integer(cutoff.unixSeconds)
        counts.auditRows = try await executor.query("DELETE FROM audit_log WHERE created_at < ? RETURNING seq", [old]).count
        counts.sessions = try await executor.query(
            """
            DELETE FROM sessions WHERE last_active_at < ? AND (revoked_at IS NOT NULL OR last_active_at < ?)
            RETURNING id
            """, [old, .integer(idleBefore.unixSeconds)]
        ).count
        counts.sessionsCleared = try await executor.query(
            """
            UPDATE sessions SET ip_address = NULL, user_agent = NULL
            WHERE created_at < ? AND (ip_address IS NOT NULL OR user_agent IS NOT NULL) RETURNING id
            """, [old]
        ).count
        counts.rateLimitWindows = try await executor.query(
            "DELETE FROM rate_limits WHERE window_start < ? RETURNING key", [.integer(windowsBefore.unixSeconds)]
        ).count
        counts.messageIDs = try await executor.query(
            "DELETE FROM used_message_ids WHERE keep_until < ? RETURNING message_id", [.integer(windowsBefore.unixSeconds)]
        ).count
        counts.notifications = try await executor.query(
            "DELETE FROM app_store_notifications WHERE received_at < ? RETURNING notification_uuid", [.integer(notificationsBefore.unixSeconds)]
        ).count
        return counts
    }
}
