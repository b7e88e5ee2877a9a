import Foundation
import GatehouseCore

extension SQLStore {
    public func updateProfile(
        _ id: UserID, displayName: String?, handle: String?, avatarURL: String?, onboardingComplete: Bool, now: Date
    ) async throws(StoreError) {
        try await executor.query(
            """
            UPDATE users SET display_name = ?, handle = ?, avatar_url = ?, onboarding_complete = ?, updated_at = ? WHERE id = ?
            """,
            [
                SQLValue(displayName), SQLValue(handle), SQLValue(avatarURL), SQLValue(onboardingComplete), .integer(now.unixSeconds),
                .text(id.description),
            ])
    }

    public func setNameSuggestions(_ id: UserID, _ names: [String]?, now: Date) async throws(StoreError) {
        try await executor.query(
            "UPDATE users SET name_suggestions = ?, updated_at = ? WHERE id = ?",
            [SQLValue(Self.encodeNames(names)), .integer(now.unixSeconds), .text(id.description)])
    }

    public func markUpgraded(_ id: UserID, now: Date) async throws(StoreError) {
        try await executor.query(
            "UPDATE users SET is_anonymous = 0, name_suggestions = NULL, updated_at = ? WHERE id = ?",
            [.integer(now.unixSeconds), .text(id.description)])
    }

    public func setPlanOverride(_ id: UserID, _ plan: String?, now: Date) async throws(StoreError) {
        try await executor.query(
            "UPDATE users SET plan_override = ?, updated_at = ? WHERE id = ?", [SQLValue(plan), .integer(now.unixSeconds), .text(id.description)])
    }

    public func user(handle: String) async throws(StoreError) -> User? {
        try await executor.query("SELECT \(Self.userColumnList) FROM users WHERE handle = ?", [.text(handle)]).first.map(Self.user(from:))
    }

    public func staleAnonymousUsers(before: Date, limit: Int) async throws(StoreError) -> [UserID] {
        let rows = try await executor.query(
            """
            SELECT id FROM users u WHERE u.is_anonymous = 1 AND u.created_at < ?
            AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.user_id = u.id AND s.last_active_at >= ?)
            ORDER BY u.created_at LIMIT ?
            """, [.integer(before.unixSeconds), .integer(before.unixSeconds), .integer(Int64(limit))])
        var ids: [UserID] = []
        for row in rows {
            if let id = UserID(try row.string("id")) { ids.append(id) }
        }
        return ids
    }

    public func idempotentUser(scope: String, keyHash: [UInt8], since: Date) async throws(StoreError) -> (user: UserID, session: SessionID?)? {
        let rows = try await executor.query(
            "SELECT user_id, session_id FROM idempotency_keys WHERE scope = ? AND key_hash = ? AND created_at >= ?",
            [.text(scope), .blob(keyHash), .integer(since.unixSeconds)])
        guard let row = rows.first, let user = UserID(try row.string("user_id")) else { return nil }
        return (user, try row.optionalString("session_id").flatMap(SessionID.init))
    }

    public func insertIdempotencyKey(scope: String, keyHash: [UInt8], userID: UserID, sessionID: SessionID, at date: Date) async throws(StoreError) {
        // An expired key of the same value makes way for the new one.
        try await executor.query(
            "DELETE FROM idempotency_keys WHERE scope = ? AND key_hash = ? AND created_at < ?",
            [.text(scope), .blob(keyHash), .integer(date.unixSeconds - 86_400)])
        try await executor.query(
            "INSERT INTO idempotency_keys (scope, key_hash, user_id, session_id, created_at) VALUES (?, ?, ?, ?, ?)",
            [.text(scope), .blob(keyHash), .text(userID.description), .text(sessionID.description), .integer(date.unixSeconds)])
    }

    public func deleteIdempotencyKeys(of userID: UserID) async throws(StoreError) {
        try await executor.query("DELETE FROM idempotency_keys WHERE user_id = ?", [.text(userID.description)])
    }

    public func idempotencyKeyTimes(of userID: UserID) async throws(StoreError) -> [Date] {
        try await executor.query("SELECT created_at FROM idempotency_keys WHERE user_id = ? ORDER BY created_at", [.text(userID.description)])
            .map { row throws(StoreError) in Date(unixSeconds: try row.int("created_at")) }
    }

    public func insertEvent(_ event: DomainEvent) async throws(StoreError) {
        if dialect == .postgres {
            // Writers take turns, so that sequence order is commit order and a consumer reading
            // `after=<cursor>` never skips an event that commits late. Released at commit.
            try await executor.query("SELECT pg_advisory_xact_lock(727275)")
        }
        let data = (try? JSONSerialization.data(withJSONObject: event.data, options: [.sortedKeys])) ?? Data("{}".utf8)
        try await executor.query(
            "INSERT INTO events (id, type, user_id, data, created_at, anonymous_id) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(event.id.uuidString.lowercased()), .text(event.type), SQLValue(event.userID?.description),
                .text(String(decoding: data, as: UTF8.self)), .integer(event.createdAt.unixSeconds), SQLValue(event.anonymousID),
            ])
    }

    public func attachAnonymousEvents(_ anonymousID: String, to userID: UserID) async throws(StoreError) {
        try await executor.query(
            "UPDATE events SET user_id = ? WHERE anonymous_id = ? AND user_id IS NULL", [.text(userID.description), .text(anonymousID)])
    }

    public func events(after: Int64?, userID: UserID?, limit: Int) async throws(StoreError) -> [DomainEvent] {
        var conditions = ["seq > ?"]
        var binds: [SQLValue] = [.integer(after ?? 0)]
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
            return DomainEvent(
                id: id, sequence: try row.int("seq"), type: try row.string("type"),
                userID: try row.optionalString("user_id").flatMap(UserID.init), data: data,
                createdAt: Date(unixSeconds: try row.int("created_at")), anonymousID: try row.optionalString("anonymous_id"))
        }
    }

    public func emailTokens(of userID: UserID) async throws(StoreError) -> [EmailToken] {
        try await executor.query(
            """
            SELECT token_hash, purpose, user_id, email, email_normalized, code_hash, code_attempts, redirect_to, password_stamp,
            created_at, expires_at, used_at, upgrade_user_id FROM email_tokens WHERE user_id = ? ORDER BY created_at
            """, [.text(userID.description)]
        ).map(Self.emailToken(from:))
    }
}
