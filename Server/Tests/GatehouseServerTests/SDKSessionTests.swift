import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// A phone for the SDK tests: a "Keychain" (a 0600 file that outlives the app) and an app
/// container (deleted on uninstall), both in a temporary directory.
struct TestDevice: Sendable {
    let directory: URL
    let transport: CountingTransport
    let clock: TestClientClock

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-device-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        transport = CountingTransport()
        clock = TestClientClock()
    }

    var keychain: FileTokenStore { FileTokenStore(url: directory.appendingPathComponent("keychain/session.json")) }
    var container: DirectoryStorage { DirectoryStorage(directory: directory.appendingPathComponent("app")) }

    /// Starts the app: a new client, as after a cold start.
    /// `preset`: the app ships that preset's copy (`BundledCopy`) for a first launch offline.
    /// `refreshRetries`: the background refresh's tries after a failure, when not the default.
    func launch(port: Int, preset: String? = nil, refreshRetries: Int? = nil) throws -> Gatehouse {
        var configuration = try ClientConfiguration(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        configuration.retryDelay = 1
        if let refreshRetries { configuration.refreshRetries = refreshRetries }
        if let preset { configuration.bundledCopy = BundledCopy.preset(preset) }
        return Gatehouse(configuration: configuration, tokenStore: keychain, storage: container, transport: transport, clock: clock)
    }

    /// Deletes the app: its container goes, the Keychain stays. The running `apps` are closed
    /// first, as iOS ends an app before deleting it: their background sends (analytics) finish
    /// rather than write into a container being deleted.
    func uninstall(closing apps: Gatehouse...) async throws {
        for app in apps { await app.flushAnalytics() }
        try FileManager.default.removeItem(at: directory.appendingPathComponent("app"))
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// Collects what `authStateChanges` yields.
actor EventLog {
    private(set) var events: [AuthEvent] = []
    func append(_ event: AuthEvent) { events.append(event) }

    /// The events once `predicate` holds for them. The client has already put them in the
    /// stream; this only lets the watching task catch up (scheduling, not time).
    func settled(until predicate: @Sendable ([AuthEvent]) -> Bool) async -> [AuthEvent] {
        for _ in 0..<10_000 where !predicate(events) { await Task.yield() }
        return events
    }

    static func watch(_ client: Gatehouse) async -> (EventLog, Task<Void, Never>) {
        let log = EventLog()
        let stream = await client.authStateChanges
        let task = Task {
            for await event in stream { await log.append(event) }
        }
        return (log, task)
    }
}

/// The SDK against a live server on a loopback port: sessions that never drop.
@Suite struct SDKSessionTests {
    static let strongPassword = "Correct-Horse-42"

    /// SyncWell's refresh flow: the access token expires; the next call gets 401, refreshes once
    /// and is retried once, and the person never notices.
    @Test func anExpiredAccessTokenIsRefreshedOnceAndTheCallRetried() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "syncwell", clock: clock, setup: .live) { server, _ in
            let device = try TestDevice()
            defer { device.remove() }
            let client = try device.launch(port: try #require(server.port))
            try await client.signUp(email: "sync@example.com", password: Self.strongPassword)
            let (log, watcher) = await EventLog.watch(client)

            clock.advance(by: 16 * 60)  // The server now sees the access token as expired.
            device.transport.reset()
            let user = try await client.refreshUser()
            #expect(user.email == "sync@example.com")
            #expect(device.transport.requests == ["GET /v1/me", "POST /v1/auth/refresh", "GET /v1/me"])
            if case .signedIn = await client.state {} else { Issue.record("signed out by an expired access token") }
            let events = await log.settled { $0.contains(.tokenRefreshed) }
            watcher.cancel()
            #expect(events.contains(.tokenRefreshed) && !events.contains { if case .signedOut = $0 { true } else { false } })
        }
    }

    /// The cold-start race: ten calls at once with an expired token (and on a fresh launch with
    /// none) cause exactly one refresh and no sign-out.
    @Test func tenConcurrentCallsCauseOneRefresh() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "handz", clock: clock, setup: .live) { server, _ in
            let device = try TestDevice()
            defer { device.remove() }
            let port = try #require(server.port)
            let first = try device.launch(port: port)
            try await first.signUp(email: "race@example.com", password: "correct horse battery")

            // Expired on the server; the SDK's own clock says it is still fresh.
            clock.advance(by: 16 * 60)
            device.transport.reset()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<10 {
                    group.addTask { if index % 2 == 0 { _ = try await first.refreshUser() } else { _ = try await first.entitlements() } }
                }
                try await group.waitForAll()
            }
            #expect(device.transport.count("POST /v1/auth/refresh") == 1)

            // A cold start: a new client with the saved session and no access token.
            let relaunched = try device.launch(port: port)
            let (log, watcher) = await EventLog.watch(relaunched)
            device.transport.reset()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<10 { group.addTask { _ = await relaunched.restore() } }
                for _ in 0..<10 { group.addTask { _ = try await relaunched.entitlements() } }
                try await group.waitForAll()
            }
            #expect(device.transport.count("POST /v1/auth/refresh") == 1, "\(device.transport.requests)")
            let events = await log.settled { $0.contains { if case .signedIn = $0 { true } else { false } } }
            watcher.cancel()
            // The first thing seen is the restoring state, never a signed-out ghost.
            #expect(events.first == .initial(.restoring))
            #expect(!events.contains { if case .signedOut = $0 { true } else { false } })
            #expect(await relaunched.state.user?.email == "race@example.com")
        }
    }

    /// US-ONB-003 and the reinstall rule: a relaunch lands signed in without asking; a reinstall
    /// starts signed out although the Keychain kept the session.
    @Test func sessionsSurviveRelaunchButNotReinstall() async throws {
        try await TestApp.run(.sqlite, preset: "oklah", setup: .live) { server, _ in
            let device = try TestDevice()
            defer { device.remove() }
            let port = try #require(server.port)
            let client = try device.launch(port: port)
            let anonymous = try await client.signInAnonymously()
            #expect(anonymous.nameSuggestions.count == 3)

            let relaunched = try device.launch(port: port)
            #expect(await relaunched.state == .restoring)
            #expect(await relaunched.restore() == .restored(try #require(await relaunched.state.user)))
            #expect(await relaunched.state.user?.id == anonymous.user.id)

            try await device.uninstall(closing: client, relaunched)
            let reinstalled = try device.launch(port: port)
            var events = await reinstalled.authStateChanges.makeAsyncIterator()
            let reinstallOutcome = await reinstalled.restore()
            #expect(reinstallOutcome == .signedOut(.reinstalled), "\(reinstallOutcome)")
            // The splash, then the welcome: the view learns the launch ended signed out.
            #expect(await events.next() == .initial(.restoring))
            #expect(await events.next() == .signedOut(.reinstalled))
            #expect(try device.keychain.load() == nil)
        }
    }

    /// Only the server ends a session: with no network, calls fail but the session stays, the
    /// launch restore tries three times and keeps the person signed in offline; once the
    /// network is back it resumes. A session revoked elsewhere signs out, with its reason.
    @Test func onlyTheServerEndsASession() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "handz", clock: clock, setup: .live) { server, _ in
            let device = try TestDevice()
            defer { device.remove() }
            let port = try #require(server.port)
            let client = try device.launch(port: port)
            try await client.signUp(email: "steady@example.com", password: "correct horse battery")

            clock.advance(by: 16 * 60)
            device.transport.setNetworkDown(true)
            await #expect(throws: GatehouseClientError.self) { try await client.refreshUser() }
            #expect(await client.state.user != nil)
            #expect(try device.keychain.load() != nil)

            // No background retries after the restore gives up: with the test clock's instant
            // waits they would start at once, and on a loaded machine they were once counted
            // among the restore's own three (23 refreshes).
            let relaunched = try device.launch(port: port, refreshRetries: 0)
            device.transport.reset()
            let outcome = await relaunched.restore()
            #expect(outcome == .offline(try #require(try device.keychain.load()?.user)))
            #expect(device.transport.count("POST /v1/auth/refresh") == 3)
            #expect(await relaunched.state == .signedIn(try #require(try device.keychain.load()?.user), offline: true))
            // Waits between the attempts double.
            #expect(device.clock.waits.prefix(2) == [1, 2])

            device.transport.setNetworkDown(false)
            _ = try await relaunched.refreshUser()
            #expect(await relaunched.isOffline == false)

            // Signed out everywhere from another device: the next refresh is refused.
            let other = try device.launch(port: port)
            _ = other
            let api = AuthClient(client: server)
            let login = try await api.login("steady@example.com").json(AuthResponse.self)
            #expect(try await api.post("/v1/auth/logout", #"{"scope": "global"}"#, token: login.session.accessToken).status == .noContent)
            let (log, watcher) = await EventLog.watch(relaunched)
            clock.advance(by: 16 * 60)
            await #expect(throws: GatehouseClientError.self) { try await relaunched.refreshUser() }
            let ended = await relaunched.state
            #expect(ended == .signedOut(.sessionRevoked))
            #expect(try device.keychain.load() == nil)
            let events = await log.settled { $0.contains { if case .signedOut = $0 { true } else { false } } }
            watcher.cancel()
            #expect(events.contains { if case .signedOut = $0 { true } else { false } })
        }
    }

    /// OKLah edge case 1 with the idempotency key: the app dies after the server created the
    /// account but before the answer arrived; the next Start gets that same account.
    @Test func anAnonymousSignInLostMidwayIsNotDuplicated() async throws {
        try await TestApp.run(.sqlite, preset: "oklah", setup: .live) { server, config in
            let device = try TestDevice()
            defer { device.remove() }
            let port = try #require(server.port)
            let client = try device.launch(port: port)
            device.transport.loseAnswers(to: "/v1/auth/anonymous")
            await #expect(throws: GatehouseClientError.self) { try await client.signInAnonymously() }
            device.transport.loseAnswers(to: nil)

            let relaunched = try device.launch(port: port)
            #expect(await relaunched.restore() == .signedOut(nil))
            let account = try await relaunched.signInAnonymously()
            let users = try await TestApp.withStore(config) { try await $0.users(search: nil, before: nil, limit: 10).count }
            #expect(users == 1)
            #expect(device.transport.count("POST /v1/auth/anonymous") == 2)
            // A later, separate Start makes a new account (the key was used up).
            try await relaunched.signOut()
            let next = try await relaunched.signInAnonymously()
            #expect(next.user.id != account.user.id)
        }
    }
}
