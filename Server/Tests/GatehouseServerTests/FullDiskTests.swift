import Foundation
import GatehouseStore
import GatehouseTestSupport
import Logging
import Testing

/// A full disk under SQLite (issue 25): a real server on a small tmpfs filled while it takes
/// sign-ups answers 503 (never 500) with a log line that says why, loses nothing it
/// acknowledged, corrupts nothing, and serves again by itself once space returns.
@Suite struct FullDiskTests {
    static func freeBytes(_ path: String) throws -> Int {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { throw ProcessError("statvfs \(path) failed") }
        return Int(stats.f_bavail) * Int(stats.f_frsize)
    }

    @Test(.requires(getuid() == 0, "root, to mount a tmpfs"))
    func aFullDiskAnswers503LosesNothingAcknowledgedAndRecovers() async throws {
        let mount = try ServerProcess.makeDirectory()
        try await Command.run("/bin/mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", mount.path])
        do {
            try await fillAndRecover(mount)
        } catch {
            _ = try? await Command.run("/bin/umount", ["-l", mount.path])
            throw error
        }
        _ = try? await Command.run("/bin/umount", ["-l", mount.path])
        try? FileManager.default.removeItem(at: mount)
    }

    private func fillAndRecover(_ mount: URL) async throws {
        let database = mount.appendingPathComponent("gatehouse.sqlite").path
        let environment = ServerProcess.environment(database: "sqlite://" + database, ["GATEHOUSE_IP_LIMITS": "off"])
        let server = try ServerProcess(["serve"], environment: environment, directory: mount)
        let base = try await server.baseURL()
        // Leave about 1 MiB: some sign-ups fit (each adds pages to the write-ahead log), then none.
        let filler = mount.appendingPathComponent("filler")
        try Data(count: max(0, try Self.freeBytes(mount.path) - 1_024 * 1024)).write(to: filler)

        var acknowledged: [(email: String, refresh: String)] = []
        var statuses: [Int: Int] = [:]
        var index = 0
        while statuses[503, default: 0] < 5, index < 3_000 {
            index += 1
            let email = "full-\(index)@example.com"
            let reply = try await BackupTests.post(base, "/v1/auth/signup", ["email": email, "password": BackupTests.password])
            statuses[reply.status, default: 0] += 1
            if reply.status == 201, let session = try BackupTests.json(reply)["session"] as? [String: Any], let refresh = session["refresh_token"] as? String {
                acknowledged.append((email, refresh))
            }
        }
        #expect(statuses[503, default: 0] == 5, "the disk never filled: \(statuses)")
        #expect(statuses.keys.allSatisfy { $0 == 201 || $0 == 503 }, "only 201 and 503: \(statuses)")
        #expect(acknowledged.count > 3)
        let log = server.standardOutput + server.standardError
        #expect(log.contains("service_unavailable") && log.contains("disk is full"), "the log says why: \(log.suffix(2_000))")
        // Reads still answer while the disk is full.
        let health = try await HTTP.request(base.appendingPathComponent("/health"))
        #expect(health.status == 200 || health.status == 503)

        // Space returns: the same server serves writes again, without a restart.
        try FileManager.default.removeItem(at: filler)
        var recovered = false
        for attempt in 0..<50 where !recovered {
            let reply = try await BackupTests.post(base, "/v1/auth/signup", ["email": "after-\(attempt)@example.com", "password": BackupTests.password])
            recovered = reply.status == 201
            if !recovered { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(recovered, "sign-ups work again once there is space")
        for account in acknowledged {
            let login = try await BackupTests.post(base, "/v1/auth/login", ["email": account.email, "password": BackupTests.password])
            #expect(login.status == 200, "\(account.email): \(login.text)")
            let refreshed = try await BackupTests.post(base, "/v1/auth/refresh", ["refresh_token": account.refresh])
            #expect(refreshed.status == 200, "\(account.email): \(refreshed.text)")
        }
        server.signal(SIGTERM)
        #expect(try await server.exitStatus() == 0)

        let check = try await SQLiteDatabase.open(path: database, logger: Logger(label: "full-disk-test"))
        let verdict = try await check.query("PRAGMA integrity_check").compactMap { try? $0.string("integrity_check") }
        await check.shutdown()
        #expect(verdict == ["ok"])
    }
}
