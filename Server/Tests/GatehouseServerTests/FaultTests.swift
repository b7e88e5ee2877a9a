import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import Synchronization
import Testing

/// Faults (issue 9, item 4): the server killed with SIGKILL in the middle of a write load.
@Suite struct FaultTests {
    /// Sign-ups and credit spends run in parallel while the server is killed. After a restart:
    /// every write that was answered 2xx is there; no spend is half-applied (each ledger row has
    /// its `credit.spent` event and the other way round); SQLite's integrity check passes.
    @Test(arguments: Backend.available)
    func killedDuringAWriteLoadLosesNothingAcknowledged(_ backend: Backend) async throws {
        let (url, directory, environment, first, cleanup) = try await Self.started(backend)
        defer { Task { await cleanup() } }
        let base = try await first.baseURL()
        let json = ["Content-Type": "application/json"]

        // One account whose credits are spent under load (3 a month on Free).
        let spender = try await HTTP.request(
            base.appendingPathComponent("v1/auth/signup"), method: "POST", headers: json,
            body: Data(#"{"email": "spender@example.com", "password": "correct horse battery"}"#.utf8))
        #expect(spender.status == 201)
        let token = try spender.json(AuthResponse.self).session.accessToken
        let spenderID = try #require(UserID(try spender.json(AuthResponse.self).user.id))

        let acknowledged = Acknowledged()
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        for index in 0..<200 {
                            let email = "load-\(worker)-\(index)@example.com"
                            let reply = try? await HTTP.request(
                                base.appendingPathComponent("v1/auth/signup"), method: "POST", headers: json,
                                body: Data(#"{"email": "\#(email)", "password": "correct horse battery"}"#.utf8))
                            guard let reply else { return }  // The server is gone.
                            if reply.status == 201 { acknowledged.state.withLock { $0.signups.append(email) } }
                            if worker < 2 {
                                let key = "spend-\(worker)-\(index)"
                                let spend = try? await HTTP.request(
                                    base.appendingPathComponent("v1/credits/practice/spend"), method: "POST",
                                    headers: json.merging(["Authorization": "Bearer \(token)"]) { $1 },
                                    body: Data(#"{"idempotency_key": "\#(key)", "action": "practice_saved_flow"}"#.utf8))
                                if spend?.status == 200, (try? spend?.json(CreditSpendResponse.self).spent) == 1 {
                                    acknowledged.state.withLock { $0.spends.append(key) }
                                }
                            }
                        }
                    }
                }
            }
        }
        // Kill it once some writes have been answered, while more are in flight.
        while acknowledged.state.withLock({ $0.signups.count }) < 20 { try await Task.sleep(for: .milliseconds(20)) }
        first.signal(SIGKILL)
        _ = try await first.exitStatus()
        await load.value

        let second = try ServerProcess(environment: environment, directory: directory)
        let restarted = try await second.baseURL()
        let (signups, spends) = acknowledged.state.withLock { ($0.signups, $0.spends) }
        #expect(signups.count >= 20)
        let config = try TestApp.config(url, directory: directory)
        try await TestApp.withStore(config) { store in
            for email in signups {
                #expect(try await store.user(normalizedEmail: email) != nil, "an acknowledged sign-up is missing: \(email)")
            }
            let ledger = try await store.creditLedger(of: spenderID)
            let keys = Set(ledger.map(\.idempotencyKey))
            for key in spends { #expect(keys.contains(key), "an acknowledged spend is missing: \(key)") }
            #expect(ledger.count <= 3, "more credits spent than granted")
            let spentEvents = try await store.events(after: nil, userID: spenderID, limit: 100).filter { $0.type == .creditSpent }
            #expect(spentEvents.count == ledger.count, "a spend without its event, or an event without its spend")
        }
        // The restarted server answers for the acknowledged accounts.
        let login = try await HTTP.request(
            restarted.appendingPathComponent("v1/auth/login"), method: "POST", headers: json,
            body: Data(#"{"email": "\#(signups[0])", "password": "correct horse battery"}"#.utf8))
        #expect(login.status == 200)
        second.signal(SIGTERM)
        #expect(try await second.exitStatus() == 0)
        if backend == .sqlite { #expect(try await url.sqliteIntegrity() == "ok") }
    }
}

extension FaultTests {
    /// A lockout's count is written without waiting for the disk (`ThrottleStore`), which a power
    /// cut may undo but the process ending may not: two wrong passwords, then SIGKILL at once,
    /// and the database still counts both.
    @Test(arguments: Backend.available)
    func aLockoutsCountOutlivesAKilledServer(_ backend: Backend) async throws {
        let (url, directory, _, server, cleanup) = try await Self.started(backend)
        defer { Task { await cleanup() } }
        let base = try await server.baseURL()
        let json = ["Content-Type": "application/json"]
        let signup = try await HTTP.request(
            base.appendingPathComponent("v1/auth/signup"), method: "POST", headers: json,
            body: Data(#"{"email": "counted@example.com", "password": "correct horse battery"}"#.utf8))
        #expect(signup.status == 201)
        for _ in 0..<2 {
            let wrong = try await HTTP.request(
                base.appendingPathComponent("v1/auth/login"), method: "POST", headers: json,
                body: Data(#"{"email": "counted@example.com", "password": "wrong horse battery"}"#.utf8))
            #expect(wrong.status == 401)
        }
        server.signal(SIGKILL)
        _ = try await server.exitStatus()
        let config = try TestApp.config(url, directory: directory)
        let counted = try await TestApp.withStore(config) { try await $0.throttle(key: "login:counted@example.com") }
        #expect(counted?.failures == 2)
        if backend == .sqlite { #expect(try await url.sqliteIntegrity() == "ok") }
    }

    /// A database of `backend`, a directory and a server of the Handz preset (no per-IP limits)
    /// on them, and what removes the database and the directory.
    static func started(_ backend: Backend) async throws -> (
        url: DatabaseURL, directory: URL, environment: [String: String], server: ServerProcess, cleanup: @Sendable () async -> Void
    ) {
        let (url, dropDatabase) = try await TestDatabase.make(backend)
        let directory = try ServerProcess.makeDirectory()
        let cleanup: @Sendable () async -> Void = {
            try? FileManager.default.removeItem(at: directory)
            await dropDatabase()
        }
        let environment = ServerProcess.environment(
            database: url.environmentValue, ["GATEHOUSE_PRESET": "handz", "GATEHOUSE_IP_LIMITS": "off"])
        do {
            return (url, directory, environment, try ServerProcess(environment: environment, directory: directory), cleanup)
        } catch {
            await cleanup()
            throw error
        }
    }
}

/// What the server answered 2xx to, from several tasks at once.
final class Acknowledged: Sendable {
    let state = Mutex<(signups: [String], spends: [String])>(([], []))
}
