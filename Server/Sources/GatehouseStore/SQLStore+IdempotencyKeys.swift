import Foundation
import GatehouseCore

extension SQLStore {
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
}
