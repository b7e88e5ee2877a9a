import Foundation
import GatehouseCore

extension SQLStore {
    public func purge(cutoff: Date, idleBefore: Date, windowsBefore: Date, notificationsBefore: Date) async throws(StoreError) -> PurgeCounts {
        var counts = PurgeCounts()
        defer { changed(.everything) }
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
        counts.phoneCodes = try await executor.query(
            "DELETE FROM phone_codes WHERE expires_at < ? RETURNING id", [.integer(windowsBefore.unixSeconds)]
        ).count
        counts.oauthRows = try await executor.query(
            "DELETE FROM oauth_codes WHERE expires_at < ? RETURNING client_id", [.integer(windowsBefore.unixSeconds)]
        ).count
        counts.oauthRows += try await executor.query(
            "DELETE FROM oauth_browser_sessions WHERE expires_at < ? RETURNING session_id", [.integer(windowsBefore.unixSeconds)]
        ).count
        // Every source redelivers for days at most (Stripe three, Apple's and Pub/Sub's retries
        // less): an id guards no longer after that.
        counts.notifications = try await executor.query(
            "DELETE FROM ledger_events WHERE received_at < ? RETURNING event_id", [.integer(notificationsBefore.unixSeconds)]
        ).count
        return counts
    }
}
