import Foundation
@testable import GatehouseClient
import GatehouseTestSupport
import GatehouseWire
import Testing

/// The Keychain before the device's first unlock: the first `lockedReads` reads answer
/// `errSecInteractionNotAllowed`, as iOS does while prewarming an app; then it answers as
/// `FakeKeychain` does.
final class LockedKeychain: KeychainCalls, @unchecked Sendable {
    let inner = FakeKeychain()
    private let lock = NSLock()
    private var lockedReads: Int
    private(set) var lockedAnswers = 0

    init(lockedReads: Int) { self.lockedReads = lockedReads }

    func copyMatching(_ query: KeychainItem.Query) -> (status: Int32, data: Data?) {
        let locked = lock.withLock {
            guard lockedReads > 0 else { return false }
            lockedReads -= 1
            lockedAnswers += 1
            return true
        }
        return locked ? (KeychainItem.Status.interactionNotAllowed, nil) : inner.copyMatching(query)
    }

    func update(_ query: KeychainItem.Query, _ attributes: KeychainItem.Query) -> Int32 { inner.update(query, attributes) }
    func add(_ attributes: KeychainItem.Query) -> Int32 { inner.add(attributes) }
    func delete(_ query: KeychainItem.Query) -> Int32 { inner.delete(query) }
}

/// Every state and event a client publishes, in order.
actor Recorder {
    private(set) var events: [AuthEvent] = []
    private var task: Task<Void, Never>?

    func record(_ client: Gatehouse) async {
        let stream = await client.authStateChanges
        task = Task { for await event in stream { self.append(event) } }
    }

    private func append(_ event: AuthEvent) { events.append(event) }

    /// The events once the client's stream has been read up to `count` of them (scheduling only).
    func events(atLeast count: Int) async -> [AuthEvent] {
        for _ in 0..<10_000 where events.count < count { await Task.yield() }
        return events
    }
}

/// Issue 64: a launch that knows before it draws, storage that is locked, and refreshes that
/// fail without the server ending the session. None of them ever signs the person out.
@Suite struct SessionResilienceTests {
    static let user = try! JSONDecoder().decode(UserPayload.self, from: Data(ScriptedTransportTests.user.utf8))
    static let me =
        #"{"user":\#(ScriptedTransportTests.user),"entitlements":{"plan_state":"free","capabilities":{},"limits":{},"credits":{},"trial":null,"read_only":false,"tier":null,"subscription":null,"evaluated_at":"2026-11-21T10:00:00Z"}}"#
    static let saved = StoredSession(refreshToken: "r1", sessionID: "s1", installID: "install-1", provider: "email", user: user)

    /// This install's storage: its id is the one the saved session was written by.
    static func storage() -> MemoryStorage {
        let storage = MemoryStorage()
        storage.set(Data("install-1".utf8), forKey: "install_id")
        return storage
    }

    static func client(_ store: any TokenStore, _ transport: ScriptedTransport, _ clock: TestClientClock) throws -> Gatehouse {
        Gatehouse(
            configuration: try ClientConfiguration(baseURL: URL(string: "https://auth.example.com")!), tokenStore: store,
            storage: storage(), transport: transport, clock: clock)
    }

    /// A saved session in a Keychain answering "locked" to its first `lockedReads` reads, and a
    /// server that refreshes it and answers `/v1/me`.
    static func lockedKeychain(_ lockedReads: Int) throws -> (LockedKeychain, KeychainSessionStore<LockedKeychain>, ScriptedTransport) {
        let keychain = LockedKeychain(lockedReads: lockedReads)
        let store = KeychainSessionStore(item: KeychainItem(service: "com.example.test"), calls: keychain)
        try store.save(saved)
        let transport = ScriptedTransport([
            "POST /v1/auth/refresh": [.respond(200, #"{"session":\#(ScriptedTransportTests.session("a2", "r2"))}"#)],
            "GET /v1/me": [.respond(200, me)],
        ])
        return (keychain, store, transport)
    }

    /// Waits (scheduling only) until the transport has been asked `count` refreshes.
    static func refreshes(_ transport: ScriptedTransport, reaching count: Int) async -> Int {
        for _ in 0..<10_000 where transport.paths.filter({ $0 == "POST /v1/auth/refresh" }).count < count { await Task.yield() }
        return transport.paths.filter { $0 == "POST /v1/auth/refresh" }.count
    }

    @Test func aLockedKeychainKeepsRestoringAndRestoresOnceItAnswers() async throws {
        let (keychain, store, transport) = try Self.lockedKeychain(3)
        let clock = TestClientClock()
        let client = try Self.client(store, transport, clock)
        let recorder = Recorder()
        await recorder.record(client)

        // Read before the first unlock: no session is known yet, and nobody is signed out.
        #expect(await client.hasSavedSession == false)
        #expect(await client.lastKnownUser == nil)
        #expect(await client.state == .restoring)
        // restore() waits with backoff while the Keychain answers "locked", then restores.
        #expect(await client.restore() == .restored(Self.user))
        // Two locked reads above; the third was restore()'s, which waited 0.5 s and read again.
        #expect(keychain.lockedAnswers == 3)
        #expect(clock.waits == [0.5])
        // Every event published: restoring, the refresh, the person, their plan; never signed out.
        let events = await recorder.events(atLeast: 4)
        let snapshot = try JSONDecoder().decode(MeResponse.self, from: Data(Self.me.utf8)).entitlements
        #expect(events == [.initial(.restoring), .tokenRefreshed, .signedIn(Self.user), .entitlementsChanged(snapshot)])
        #expect(try store.load()?.refreshToken == "r2")
    }

    /// iOS says when the device is unlocked: the wait for the Keychain ends then, not at its timer.
    @Test func aLockedKeychainIsReadAgainWhenTheDeviceIsUnlocked() async throws {
        let (keychain, store, transport) = try Self.lockedKeychain(1)
        var configuration = try ClientConfiguration(baseURL: URL(string: "https://auth.example.com")!)
        // The first wait is an hour: only the notification can end it within the test.
        configuration.retryDelay = 3600
        configuration.maxRetryDelay = 3600
        let client = Gatehouse(configuration: configuration, tokenStore: store, storage: Self.storage(), transport: transport, clock: SystemClientClock())
        let restoring = Task { await client.restore() }
        for _ in 0..<1_000 where keychain.lockedAnswers < 1 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(keychain.lockedAnswers == 1)
        #expect(await client.state == .restoring)
        // What UIKit posts once the device is unlocked (posted until heard: the observer is set
        // up just after the refused read).
        let unlocked = Notification.Name("UIApplicationProtectedDataDidBecomeAvailable")
        for _ in 0..<500 where transport.paths.isEmpty {
            NotificationCenter.default.post(name: unlocked, object: nil)
            try await Task.sleep(for: .milliseconds(10))
        }
        // Not heard within 5 s: the restore is cancelled (it would wait the hour) and fails below.
        if transport.paths.isEmpty { restoring.cancel() }
        #expect(await restoring.value == .restored(Self.user))
        #expect(await client.state == .signedIn(Self.user, offline: false))
    }

    @Test func aLaunchWithoutNetworkGoesFromRestoringToTheSavedPerson() async throws {
        let store = MemoryTokenStore(Self.saved)
        // Every request fails: no network.
        let transport = ScriptedTransport([:])
        let client = try Self.client(store, transport, TestClientClock())
        let recorder = Recorder()
        await recorder.record(client)
        // Before anything is sent, the saved person is known.
        #expect(await client.lastKnownUser == Self.user)
        #expect(transport.paths.isEmpty)

        #expect(await client.restore() == .offline(Self.user))
        #expect(await client.state == .signedIn(Self.user, offline: true))
        // The background retries run out (20, none answered): the session stays.
        #expect(await Self.refreshes(transport, reaching: 23) == 23)
        #expect(await recorder.events(atLeast: 2) == [.initial(.restoring), .signedIn(Self.user)])
        #expect(await client.state == .signedIn(Self.user, offline: true))
        #expect(try store.load() == Self.saved)
    }

    @Test func aRefreshFailingTenTimesWithServerErrorsKeepsTheSessionAndSucceedsOnTheEleventh() async throws {
        let error = ScriptedTransport.Step.respond(500, #"{"error":{"code":"internal_error","message":"Something went wrong."}}"#)
        let transport = ScriptedTransport([
            ScriptedTransportTests.login.0: ScriptedTransportTests.login.1,
            "POST /v1/auth/refresh": Array(repeating: error, count: 10) + [.respond(200, #"{"session":\#(ScriptedTransportTests.session("a2", "r2"))}"#)],
            "GET /v1/me": [.respond(200, Self.me)],
        ])
        let clock = TestClientClock()
        let store = MemoryTokenStore()
        let client = try await ScriptedTransportTests.signedIn(transport, clock: clock, store: store)
        let recorder = Recorder()
        await recorder.record(client)
        clock.advance(by: 900)  // The access token has run out.

        // The call that needed a token fails with the server's error; the session stays, and the
        // SDK goes on refreshing in the background, backing off, until the eleventh answers.
        await #expect(throws: GatehouseClientError.self) { try await client.refreshUser() }
        #expect(await Self.refreshes(transport, reaching: 11) == 11)
        let events = await recorder.events(atLeast: 2)
        #expect(events.count == 2 && events.last == .tokenRefreshed)
        #expect(clock.waits == [0.5, 1, 2, 4, 8, 16, 32, 60, 60, 60])
        #expect(try store.load()?.refreshToken == "r2")
        #expect(await client.state == .signedIn(Self.user, offline: false))
        #expect(await client.isOffline == false)
        // The token is fresh: the call goes through without another refresh.
        #expect(try await client.refreshUser() == Self.user)
        #expect(await Self.refreshes(transport, reaching: 11) == 11)
    }

    /// A 429's Retry-After is a floor for the next wait: the SDK does not knock sooner.
    @Test func aRefreshTooSoonWaitsWhatTheServerAsked() async throws {
        let transport = ScriptedTransport([
            ScriptedTransportTests.login.0: ScriptedTransportTests.login.1,
            "POST /v1/auth/refresh": [
                .respond(429, #"{"error":{"code":"rate_limited","message":"Slow down.","retry_after":30}}"#, ["retry-after": "30"]),
                .respond(429, #"{"error":{"code":"rate_limited","message":"Slow down.","retry_after":7}}"#, ["retry-after": "7"]),
                .respond(200, #"{"session":\#(ScriptedTransportTests.session("a2", "r2"))}"#),
            ],
        ])
        let clock = TestClientClock()
        let store = MemoryTokenStore()
        let client = try await ScriptedTransportTests.signedIn(transport, clock: clock, store: store)
        clock.advance(by: 900)
        await #expect(throws: GatehouseClientError.self) { try await client.refreshUser() }
        #expect(await Self.refreshes(transport, reaching: 3) == 3)
        for _ in 0..<10_000 where (try? store.load()?.refreshToken) != "r2" { await Task.yield() }
        // 30 s as asked (not 0.5), then 7 s as asked (more than the backoff's 1 s).
        #expect(clock.waits == [30, 7])
        #expect(try store.load()?.refreshToken == "r2")
    }

    @Test(arguments: [
        (#"{"error":{"code":"session_revoked","message":"Signed out.","details":{"reason":"refresh_token_reuse"}}}"#, SignOutReason.reuseDetected),
        (#"{"error":{"code":"session_revoked","message":"Signed out.","details":{"reason":"logout_global"}}}"#, .sessionRevoked),
        (#"{"error":{"code":"invalid_refresh_token","message":"No longer valid."}}"#, .sessionExpired),
    ])
    func eachWayTheServerEndsASessionHasItsReason(_ answer: String, _ reason: SignOutReason) async throws {
        let transport = ScriptedTransport([
            ScriptedTransportTests.login.0: ScriptedTransportTests.login.1,
            "POST /v1/auth/refresh": [.respond(401, answer)],
        ])
        let clock = TestClientClock()
        let client = try await ScriptedTransportTests.signedIn(transport, clock: clock)
        clock.advance(by: 900)
        await #expect(throws: GatehouseClientError.self) { try await client.refreshUser() }
        #expect(await client.state == .signedOut(reason))
    }

    @Test func aFileLockIsALeaseItsOwnerAloneReleases() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-lock-\(UUID())/session.lock")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let lock = FileSessionLock(url: url, lease: 0.3)
        #expect(try lock.tryAcquire(owner: "app"))
        #expect(try lock.tryAcquire(owner: "app"))
        #expect(try !lock.tryAcquire(owner: "widget"))
        try lock.release(owner: "widget")
        #expect(try !lock.tryAcquire(owner: "widget"))
        // The holder died: its lease lapses on its own.
        Thread.sleep(forTimeInterval: 0.4)
        #expect(try lock.tryAcquire(owner: "widget"))
        try lock.release(owner: "widget")
        #expect(try lock.tryAcquire(owner: "app"))
        // A lease ending further ahead than a lease can was written before a restart: lapsed.
        try Data("app \(ProcessInfo.processInfo.systemUptime + 3600)".utf8).write(to: url)
        #expect(try lock.tryAcquire(owner: "widget"))
        #expect(try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int == 0o600)
    }
}
