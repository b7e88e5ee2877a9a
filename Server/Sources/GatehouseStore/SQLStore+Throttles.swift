import Foundation
import GatehouseCore

extension SQLStore {
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
            let rows = try await executor.queryUnflushed(
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
        try await executor.queryUnflushed("DELETE FROM throttles WHERE key = ?", [.text(key)])
    }

    public func clearThrottleUnlessLocked(key: String, at date: Date) async throws(StoreError) {
        try await executor.queryUnflushed(
            "DELETE FROM throttles WHERE key = ? AND (locked_until IS NULL OR locked_until <= ?)", [.text(key), .integer(date.unixSeconds)])
    }

    // MARK: Rate limits

    public func hitRateLimit(key: String, windowStart: Int64) async throws(StoreError) -> Int {
        let rows = try await executor.queryUnflushed(
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
}
