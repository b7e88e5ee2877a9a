import Foundation
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import Synchronization
import Testing

/// Faults (issue 9, item 4): PostgreSQL stopped like a crash and started again while sign-ups
/// keep coming. Gatehouse answers 503 while it is down, recovers by itself, and the retries
/// clients make (same `Idempotency-Key`) leave no duplicate rows.
@Suite struct PostgresRestartTests {
    @Test(.requires(PrivatePostgres.binaries != nil, "GATEHOUSE_TEST_PG_BINDIR"))
    func restartedUnderLoadIs503ThenRecoversWithoutDuplicates() async throws {
        let postgres = try await PrivatePostgres()
        let directory = try ServerProcess.makeDirectory()
        let server = try ServerProcess(
            environment: ServerProcess.environment(database: postgres.url, [
                "GATEHOUSE_IP_LIMITS": "off", "GATEHOUSE_LOG_LEVEL": "debug", "GATEHOUSE_LOG_FORMAT": "text",
            ]), directory: directory)
        do {
            let base = try await server.baseURL()
            try await check(base: base, postgres: postgres)
            server.signal(SIGTERM)
            #expect(try await server.exitStatus() == 0)
        } catch {
            Issue.record(error, "server output: \(server.standardError)")
        }
        server.signal(SIGKILL)
        await postgres.remove()
        try? FileManager.default.removeItem(at: directory)
    }

    private func check(base: URL, postgres: PrivatePostgres) async throws {
        let log = LoadLog()
        // Four clients sign up one address after another. A 503 or a cut connection is retried
        // with the same address and Idempotency-Key until the answer is 201 (or 409: the address
        // is taken, which would mean a lost acknowledgement turned into a second account attempt).
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var index = 0
                        while !log.isStopped {
                            let email = "restart-\(worker)-\(index)@example.com"
                            let key = UUID().uuidString
                            index += 1
                            while true {
                                let status = await Self.signup(base, email: email, key: key)
                                log.record(status, email: email)
                                if status == 201 || status == 409 { break }
                                if status != 503 && status != nil { break }  // Recorded as unexpected.
                                try? await Task.sleep(for: .milliseconds(50))
                            }
                        }
                    }
                }
            }
        }
        defer { log.stop(); load.cancel() }

        try await waitUntil("20 sign-ups before the stop") { log.acknowledged.count >= 20 }
        try await postgres.stop(mode: "immediate")
        let beforeRestart = log.acknowledged.count
        try await waitUntil("/health to answer 503 while PostgreSQL is down") {
            (try? await HTTP.request(base.appendingPathComponent("health")).status) == 503
        }
        // Requests queued for a connection when it went down answer 503 after the lease time-out.
        try await waitUntil("the load to meet a 503", seconds: 45) { log.unavailable >= 1 }
        let down = try await HTTP.request(
            base.appendingPathComponent("v1/auth/signup"), method: "POST", headers: ["Content-Type": "application/json"],
            body: Data(#"{"email": "while-down@example.com", "password": "correct horse battery"}"#.utf8))
        #expect(down.status == 503)
        #expect(try down.json(ErrorBody.self).error.code == "service_unavailable")
        #expect(down.headers["retry-after"] != nil)

        try await postgres.start()
        try await waitUntil("/health to answer 200 after the restart", seconds: 30) {
            (try? await HTTP.request(base.appendingPathComponent("health")).status) == 200
        }
        try await waitUntil("20 more sign-ups after the restart", seconds: 30) { log.acknowledged.count >= beforeRestart + 20 }
        log.stop()
        await load.value

        #expect(log.unexpected.isEmpty, "answers other than 201 and 503: \(log.unexpected)")
        #expect(log.taken.isEmpty, "a retried sign-up found its address taken: \(log.taken)")

        // What is stored is exactly what was acknowledged, once each.
        let database = try PostgresDatabase(url: postgres.url, maximumConnections: 2, logger: TestDatabase.logger)
        try await database.withRunning {
            let emails = try await database.query("SELECT email_normalized FROM users").map { try $0.string("email_normalized") }
            #expect(emails.count == Set(emails).count)
            #expect(Set(emails) == log.acknowledged, "stored and acknowledged sign-ups differ")
            let identities = try await database.query(
                "SELECT user_id FROM identities GROUP BY user_id HAVING count(*) <> 1")
            #expect(identities.isEmpty, "an account with other than one identity")
            let created = try await database.query(
                "SELECT user_id FROM events WHERE type = 'user.created' GROUP BY user_id HAVING count(*) <> 1")
            #expect(created.isEmpty, "an account with other than one user.created event")
            let keys = try await database.query("SELECT user_id FROM idempotency_keys GROUP BY user_id HAVING count(*) <> 1")
            #expect(keys.isEmpty, "an account with more than one idempotency key")
        }
    }

    /// The status of one sign-up, or nil when the connection failed.
    private static func signup(_ base: URL, email: String, key: String) async -> Int? {
        try? await HTTP.request(
            base.appendingPathComponent("v1/auth/signup"), method: "POST",
            headers: ["Content-Type": "application/json", "Idempotency-Key": key],
            body: Data(#"{"email": "\#(email)", "password": "correct horse battery"}"#.utf8)
        ).status
    }

    private func waitUntil(_ what: String, seconds: Double = 15, _ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessError("timed out waiting for \(what)")
    }
}

/// What the load saw, from several tasks at once.
private final class LoadLog: Sendable {
    private let state = Mutex<(acknowledged: Set<String>, unavailable: Int, taken: [String], unexpected: [String])>(([], 0, [], []))
    private let stopped = Atomic<Bool>(false)

    func stop() { stopped.store(true, ordering: .relaxed) }
    var isStopped: Bool { stopped.load(ordering: .relaxed) }

    func record(_ status: Int?, email: String) {
        state.withLock {
            switch status {
            case 201: $0.acknowledged.insert(email)
            case 409: $0.taken.append(email)
            case 503, nil: $0.unavailable += 1
            default: $0.unexpected.append("\(status!) for \(email)")
            }
        }
    }

    var acknowledged: Set<String> { state.withLock { $0.acknowledged } }
    var unavailable: Int { state.withLock { $0.unavailable } }
    var taken: [String] { state.withLock { $0.taken } }
    var unexpected: [String] { state.withLock { $0.unexpected } }
}
