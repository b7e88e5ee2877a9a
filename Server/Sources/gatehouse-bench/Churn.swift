import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import Logging

/// `gatehouse-bench churn SQLITE_PATH DAYS ACCOUNTS [PER_DAY]` (issue 65): whether a SQLite file
/// stops growing under steady churn. It loads ACCOUNTS accounts (the loader's shape), then lives
/// DAYS simulated days: each day PER_DAY new accounts arrive (a tenth of ACCOUNTS unless given; with
/// the loader's year of sessions, tokens, audit rows and events) and as many of the oldest are
/// deleted, then the retention sweep runs as the server's does (30 days of audit rows and events,
/// sessions idle 14 days, rotated refresh tokens expired before then) and gives freed pages back.
/// One JSON line per day: the file's size, its WAL's, its free pages, the rows of the tables that
/// grow, and the seconds since the start.
extension Bench {
    static func churn(path: String, days: Int, accounts: Int, perDay: Int) async throws {
        var logger = Logger(label: "gatehouse-bench.churn")
        logger.logLevel = .warning
        try await Operator.withDatabase(.sqlite(path: path), logger: logger, poolSize: 2) { database in
            let began = ContinuousClock.now
            let (store, hash) = try await prepare(database)
            let day: TimeInterval = 86_400
            let start = Date() - Double(days) * day
            var living = try await fill(store, accounts: 0..<accounts, hash: hash, now: start)
            var next = accounts
            let perDay = min(max(1, perDay), accounts)
            for number in 0...days {
                let now = start + Double(number) * day
                if number > 0 {
                    living += try await fill(store, accounts: next..<next + perDay, hash: hash, now: now)
                    next += perDay
                    for id in living.prefix(perDay) { _ = try await store.deleteUser(id) }
                    living.removeFirst(perDay)
                }
                var counts = try await store.purge(
                    cutoff: now - 30 * day, idleBefore: now - 14 * day, windowsBefore: now - 2 * day, notificationsBefore: now - 30 * day)
                counts.pagesReleased = try await store.reclaimSpace(pages: 50_000)
                func mib(_ file: String) -> Double {
                    let bytes = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
                    return (Double(bytes) / 1_048_576 * 10).rounded() / 10
                }
                var rows: [String: Int] = [:]
                for table in ["users", "sessions", "refresh_tokens", "audit_log", "events"] {
                    rows[table] = Int(try await database.query("SELECT COUNT(*) AS n FROM \(table)").first?.int("n") ?? 0)
                }
                let free = try await database.query("PRAGMA freelist_count").first?.int("freelist_count") ?? 0
                // Written at once, not through `print`'s buffer: a run of many days shows each
                // day as it ends, not only when the buffer fills.
                let line = json([
                    "benchmark": "churn", "day": number, "file_mib": mib(path), "wal_mib": mib(path + "-wal"), "free_pages": Int(free),
                    "swept": ["audit_rows": counts.auditRows, "events": counts.events, "sessions": counts.sessions, "refresh_tokens": counts.refreshTokens, "pages_released": counts.pagesReleased],
                    "rows": rows, "elapsed_s": Int((ContinuousClock.now - began).components.seconds),
                ])
                FileHandle.standardOutput.write(Data((line + "\n").utf8))
            }
        }
    }
}
