import Foundation
import GatehouseCore

extension SQLStore {
    public func purge(cutoff: Date, idleBefore: Date, windowsBefore: Date, notificationsBefore: Date) async throws(StoreError) -> PurgeCounts {
        var counts = PurgeCounts()
        defer { changed(.everything) }
        let old = SQLValue.integer(cutoff.unixSeconds)
        let windows = SQLValue.integer(windowsBefore.unixSeconds)
        counts.auditRows = try await sweep(
            Sweep(table: "audit_log", key: "seq", condition: "created_at < ?", order: "created_at", reach: .ownRow, binds: [old]))
        // The feed keeps as long as the audit trail: a consumer reads it within that, and an
        // account's events (its id, its analytics) do not outlive the preset's retention.
        counts.events = try await sweep(
            Sweep(table: "events", key: "seq", condition: "created_at < ?", order: "created_at", reach: .ownRow, binds: [old]))
        // Each ended session deletes its refresh tokens (a cascade through their session's index).
        counts.sessions = try await sweep(
            Sweep(
                table: "sessions", key: "id", condition: "last_active_at < ? AND (revoked_at IS NOT NULL OR last_active_at < ?)",
                order: "last_active_at", reach: .scattered,
                binds: [old, .integer(idleBefore.unixSeconds)]))
        // A rotated refresh token is kept while presenting it again could still be caught as a
        // reuse; once it expired before `idleBefore` it can only be refused, and a session
        // refreshed every day for a year would otherwise keep every one it ever had. Found
        // through the partial index of rotated tokens (migration 36), not among the live ones.
        counts.refreshTokens = try await sweep(
            Sweep(
                table: "refresh_tokens", key: "token_hash", condition: "rotated_at IS NOT NULL AND expires_at < ?", order: "expires_at",
                reach: .ownRow, binds: [.integer(idleBefore.unixSeconds)]))
        // Through the partial index of sessions that still have an address or an agent
        // (migration 36): a batch does not pass over those cleared before it. On PostgreSQL each
        // cleared row is a new entry in every index of `sessions`, most of them keyed at random.
        counts.sessionsCleared = try await sweep(
            Sweep(
                table: "sessions", key: "id", condition: "created_at < ? AND (ip_address IS NOT NULL OR user_agent IS NOT NULL)",
                order: "created_at", reach: .scattered,
                binds: [old], change: .set("ip_address = NULL, user_agent = NULL")))
        counts.rateLimitWindows = try await sweep(
            Sweep(table: "rate_limits", key: "(key, window_start)", condition: "window_start < ?", order: "window_start", reach: .ownRow, binds: [windows]))
        counts.messageIDs = try await sweep(
            Sweep(table: "used_message_ids", key: "(issuer, message_id)", condition: "keep_until < ?", order: "keep_until", reach: .ownRow, binds: [windows]))
        counts.phoneCodes = try await sweep(Sweep(table: "phone_codes", key: "id", condition: "expires_at < ?", order: "expires_at", reach: .ownRow,
            binds: [windows]))
        counts.oauthRows = try await sweep(Sweep(table: "oauth_codes", key: "code_hash", condition: "expires_at < ?", order: "expires_at", reach: .ownRow,
            binds: [windows]))
        counts.oauthRows += try await sweep(
            Sweep(table: "oauth_browser_sessions", key: "token_hash", condition: "expires_at < ?", order: "expires_at", reach: .ownRow, binds: [windows]))
        // Mailed links and codes: expired before the windows' cut-off, they can only be refused.
        counts.emailTokens = try await sweep(Sweep(table: "email_tokens", key: "token_hash", condition: "expires_at < ?", order: "expires_at", reach: .ownRow,
            binds: [windows]))
        // A sign-up's replay key answers for a day (`insertIdempotencyKey`); after that it guards nothing.
        counts.idempotencyKeys = try await sweep(
            Sweep(table: "idempotency_keys", key: "(scope, key_hash)", condition: "created_at < ?", order: "created_at", reach: .ownRow, binds: [windows]))
        // Mail sent, failed or dropped, and jobs given up, stay for the console as long as the
        // audit trail does (a mail's recipient is personal data); pending ones are never swept.
        counts.mail = try await sweep(Sweep(table: "outbox", key: "id", condition: "created_at < ? AND status <> 'pending'", order: "created_at", reach: .ownRow,
            binds: [old]))
        counts.failedJobs = try await sweep(
            Sweep(table: "jobs", key: "id", condition: "status = 'failed' AND next_attempt_at < ?", order: "next_attempt_at", reach: .ownRow, binds: [old]))
        // Every source redelivers for days at most (Stripe three, Apple's and Pub/Sub's retries
        // less): an id guards no longer after that.
        counts.notifications = try await sweep(
            Sweep(
                table: "ledger_events", key: "(source, event_id)", condition: "received_at < ?", order: "received_at", reach: .ownRow,
                binds: [.integer(notificationsBefore.unixSeconds)]))
        return counts
    }

    /// Pages given back per statement of ``reclaimSpace(pages:)`` at most. Each statement is
    /// sized as a sweep's batch is (``nextBatch(after:took:target:most:)``): moving pages to the
    /// freed ones near the start of a 7.5 GiB file took 70 to 260 ms a thousand at a million
    /// accounts (issue 65), and a login waiting for the writer waited as long.
    static let vacuumStep = 1_000
    /// Pages given back by the first statement of ``reclaimSpace(pages:)``, and by each one while
    /// others use the database (``BatchSizing``).
    @TaskLocal static var vacuumCarefulStep = 100

    public func reclaimSpace(pages: Int) async throws(StoreError) -> Int {
        // PostgreSQL's autovacuum makes dead rows' space reusable by itself.
        guard dialect == .sqlite, try await executor.query("PRAGMA auto_vacuum").first?.int("auto_vacuum") == 2 else { return 0 }
        var released = 0
        var sizing = BatchSizing(most: Self.vacuumStep, careful: Self.vacuumCarefulStep)
        while released < pages {
            let free = Int(try await executor.query("PRAGMA freelist_count").first?.int("freelist_count") ?? 0)
            guard free > 0 else { break }
            let step = min(free, sizing.next, pages - released)
            let started = ContinuousClock.now
            try await executor.query("PRAGMA incremental_vacuum(\(step))")
            released += step
            let took = ContinuousClock.now - started
            let busy = try await betweenHousekeepingBatches(after: took)
            sizing.after(step, took: took, target: Self.sweepBatchTime, busy: busy)
        }
        return released
    }
}
