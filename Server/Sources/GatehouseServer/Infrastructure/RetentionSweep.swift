import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import Logging
import ServiceLifecycle

/// Deletes, hourly, what is kept only for a while (decision 11): audit rows, events and session
/// metadata older than the preset's `privacy.retention_days` (ended sessions go; live ones lose
/// their client address and user agent), plus rate-limit windows older than two days and App
/// Store notification and Stripe event ids older than 30 days (both retry for three days at most),
/// rotated refresh tokens expired for a refresh lifetime; then, on SQLite, the freed pages.
final class RetentionSweep: PeriodicSweep {
    let store: any RetentionStore & UsageStore & PasskeyStore & MFAFactorStore & MFAChallengeStore
    let days: Int
    /// A session idle this long is over (the refresh token lifetime).
    let idleSeconds: Int
    /// The preset's `mfa.unconfirmed_factor_ttl_seconds`.
    let unconfirmedFactorTTLSeconds: Int
    let clock: any WallClock
    let logger: Logger
    let loop = WakeLoop(pollInterval: .seconds(3_600))
    /// SQLite pages (4 KiB) given back per sweep at most: 200 MiB an hour.
    static let pagesPerSweep = 50_000

    init(store: any RetentionStore & UsageStore & PasskeyStore & MFAFactorStore & MFAChallengeStore, days: Int, idleSeconds: Int, unconfirmedFactorTTLSeconds: Int, clock: any WallClock, logger: Logger) {
        self.store = store
        self.days = days
        self.idleSeconds = idleSeconds
        self.unconfirmedFactorTTLSeconds = unconfirmedFactorTTLSeconds
        self.clock = clock
        self.logger = logger
    }

    func sweepOnce() async { await sweep() }

    @discardableResult
    func sweep() async -> PurgeCounts {
        let now = clock.now
        let (started, restsBefore) = (ContinuousClock.now, store.housekeepingRests)
        do {
            var counts = try await store.purge(
                cutoff: now.addingTimeInterval(-Double(days) * 86_400), idleBefore: now.addingTimeInterval(-Double(idleSeconds)),
                windowsBefore: now.addingTimeInterval(-2 * 86_400), notificationsBefore: now.addingTimeInterval(-30 * 86_400))
            counts.usageRows = try await store.purgeUsage(before: now.addingTimeInterval(-62 * 86_400))
            // An expired challenge can no longer be used: it goes at once (it may hold a sign-up's address).
            counts.passkeyChallenges = try await store.purgePasskeyChallenges(before: now)
            counts.mfaChallenges = try await store.purgeMFAChallenges(before: now)
            counts.unconfirmedFactors = try await store.purgeUnconfirmedMFAFactors(
                enrolledBefore: now.addingTimeInterval(-Double(unconfirmedFactorTTLSeconds)))
            counts.pagesReleased = try await store.reclaimSpace(pages: Self.pagesPerSweep)
            if counts != PurgeCounts() {
                // Every count's key ends in `_count`: the log's redaction leaves counts readable
                // (`refresh_tokens` and `phone_codes` alone read as secrets).
                var metadata = Self.timings(took: ContinuousClock.now - started, rests: store.housekeepingRests.since(restsBefore))
                metadata.merge(
                    [
                        "audit_rows_count": "\(counts.auditRows)", "events_count": "\(counts.events)", "sessions_count": "\(counts.sessions)",
                        "sessions_cleared_count": "\(counts.sessionsCleared)", "refresh_tokens_count": "\(counts.refreshTokens)",
                        "pages_released_count": "\(counts.pagesReleased)", "rate_limit_windows_count": "\(counts.rateLimitWindows)",
                        "notifications_count": "\(counts.notifications)", "message_ids_count": "\(counts.messageIDs)",
                        "phone_codes_count": "\(counts.phoneCodes)", "oauth_rows_count": "\(counts.oauthRows)", "usage_rows_count": "\(counts.usageRows)",
                        "email_tokens_count": "\(counts.emailTokens)", "idempotency_keys_count": "\(counts.idempotencyKeys)",
                        "mail_count": "\(counts.mail)", "failed_jobs_count": "\(counts.failedJobs)",
                        "passkey_challenges_count": "\(counts.passkeyChallenges)", "mfa_challenges_count": "\(counts.mfaChallenges)",
                        "unconfirmed_factors_count": "\(counts.unconfirmedFactors)",
                    ]) { $1 }
                logger.info("retention sweep", metadata: metadata)
            }
            return counts
        } catch {
            // Stopped by the shutdown (`StoreError.cancelled` at its next turn), what the batches
            // so far deleted stays deleted, and the next start sweeps the rest (a first sweep at
            // a million accounts takes about 40 minutes).
            let rests = store.housekeepingRests.since(restsBefore)
            logger.backgroundWork(.retentionSweep, endedBy: error, metadata: Self.timings(took: ContinuousClock.now - started, rests: rests))
            return PurgeCounts()
        }
    }

    /// How long the sweep took, and how many times and how long housekeeping rested between
    /// batches meanwhile, for each thing it waits for (`rested_for_log_count`, `rested_for_log_ms`,
    /// …): a slow first sweep says whether the database's log or the requests held it back (at
    /// 1M accounts on PostgreSQL's defaults, 87–88 % of 39 minutes was rests for the log).
    static func timings(took: Duration, rests: HousekeepingRests) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["duration_ms": "\(Int(took / .milliseconds(1)))"]
        for reason in HousekeepingRest.allCases {
            metadata["rested_for_\(reason.rawValue)_count"] = "\(rests[reason].count)"
            metadata["rested_for_\(reason.rawValue)_ms"] = "\(Int(rests[reason].time / .milliseconds(1)))"
        }
        return metadata
    }
}
