import Foundation
@testable import GatehouseClient
import GatehouseTestSupport
import Testing

/// A Keychain in memory that answers as `SecItem…` does for generic passwords: items keyed by
/// class, service, account and synchronizable; not found and duplicate answers; it records what
/// it was asked.
final class FakeKeychain: KeychainCalls, @unchecked Sendable {
    private let lock = NSLock()
    private var items: [[KeychainItem.Key: KeychainItem.Value]] = []
    private(set) var calls: [String] = []
    static let duplicateItem: Int32 = -25299  // errSecDuplicateItem

    /// As iOS does: a query without an access group matches the item in any of the app's groups.
    private static let identityKeys: [KeychainItem.Key] = [.itemClass, .service, .account, .synchronizable, .accessGroup]

    private func index(_ query: KeychainItem.Query) -> Int? {
        items.firstIndex { item in Self.identityKeys.allSatisfy { query[$0] == nil || query[$0] == item[$0] } }
    }

    func copyMatching(_ query: KeychainItem.Query) -> (status: Int32, data: Data?) {
        lock.withLock {
            calls.append("copyMatching")
            guard let index = index(query) else { return (KeychainItem.Status.itemNotFound, nil) }
            guard query[.returnData] == .bool(true), case .data(let data)? = items[index][.valueData] else { return (0, nil) }
            return (KeychainItem.Status.success, data)
        }
    }

    func update(_ query: KeychainItem.Query, _ attributes: KeychainItem.Query) -> Int32 {
        lock.withLock {
            calls.append("update")
            guard let index = index(query) else { return KeychainItem.Status.itemNotFound }
            items[index].merge(attributes) { $1 }
            return KeychainItem.Status.success
        }
    }

    func add(_ attributes: KeychainItem.Query) -> Int32 {
        lock.withLock {
            calls.append("add")
            guard index(attributes) == nil else { return Self.duplicateItem }
            items.append(attributes)
            return KeychainItem.Status.success
        }
    }

    func delete(_ query: KeychainItem.Query) -> Int32 {
        lock.withLock {
            calls.append("delete")
            guard let index = index(query) else { return KeychainItem.Status.itemNotFound }
            items.remove(at: index)
            return KeychainItem.Status.success
        }
    }

    var stored: [KeychainItem.Query] { lock.withLock { items } }
}

/// Issue 19, item 6: every decision of the Keychain store, checked on Linux. Only the `SecItem…`
/// calls themselves and the `kSec…` names (`SecItemCalls` in Storage.swift) are not verifiable
/// here.
@Suite struct KeychainItemTests {
    static let session = StoredSession(refreshToken: "r1", sessionID: "s1", installID: "install-1", provider: "email", user: nil)

    /// The item, its protection and each call's query, exactly.
    @Test func theQueriesAreExactly() throws {
        let item = KeychainItem(service: "com.example.app.gatehouse")
        #expect(item.account == "session" && KeychainItem.defaultAccount == "session")
        let identity: KeychainItem.Query = [
            .itemClass: .genericPassword, .service: .string("com.example.app.gatehouse"), .account: .string("session"),
            .synchronizable: .bool(false),
        ]
        #expect(item.identity == identity)
        #expect(item.load == identity.merging([.returnData: .bool(true), .matchLimit: .matchOne]) { $1 })
        let data = Data("secret".utf8)
        #expect(item.update(data) == [.valueData: .data(data), .accessible: .afterFirstUnlockThisDeviceOnly])
        #expect(item.add(data) == identity.merging([.valueData: .data(data), .accessible: .afterFirstUnlockThisDeviceOnly]) { $1 })
        #expect(item.delete == identity)
        // Never synchronised, whatever the call.
        for query in [item.identity, item.load, item.add(data), item.delete] { #expect(query[.synchronizable] == .bool(false)) }
        #expect(KeychainItem(service: "svc", account: "other").identity[.account] == .string("other"))
    }

    /// What each `OSStatus` means: not found is no session (load) and nothing to clear (clear);
    /// a save adds only when the update found nothing; every other status is an error with it.
    @Test func theAnswersMeanExactly() throws {
        #expect(KeychainItem.Status.success == 0 && KeychainItem.Status.itemNotFound == -25300)
        #expect(try KeychainItem.loaded(status: -25300, data: nil) == nil)
        #expect(try KeychainItem.loaded(status: 0, data: try JSONEncoder().encode(Self.session)) == Self.session)
        #expect(throws: KeychainStatusError(status: -25308)) { try KeychainItem.loaded(status: -25308, data: nil) }  // interaction not allowed (locked)
        #expect(throws: KeychainStatusError(status: 0)) { try KeychainItem.loaded(status: 0, data: nil) }
        #expect(KeychainItem.addsAfterUpdate(status: -25300) && !KeychainItem.addsAfterUpdate(status: 0))
        #expect(!KeychainItem.addsAfterUpdate(status: -34018))
        #expect(throws: KeychainStatusError(status: -25299)) { try KeychainItem.saved(status: -25299) }
        try KeychainItem.saved(status: 0)
        try KeychainItem.cleared(status: 0)
        try KeychainItem.cleared(status: -25300)
        #expect(throws: KeychainStatusError(status: -25308)) { try KeychainItem.cleared(status: -25308) }
    }

    /// The store over a Keychain that answers as Apple's does: the first save adds, the next
    /// updates in place (one item), load reads it back, clear removes it and clearing again is fine.
    @Test func theStoreSavesLoadsAndClears() throws {
        let keychain = FakeKeychain()
        let store = KeychainSessionStore(item: KeychainItem(service: "com.example.app.gatehouse"), calls: keychain)
        #expect(try store.load() == nil)
        try store.save(Self.session)
        #expect(keychain.calls == ["copyMatching", "update", "add"])
        var next = Self.session
        next.refreshToken = "r2"
        try store.save(next)
        #expect(keychain.calls.suffix(1) == ["update"])
        #expect(keychain.stored.count == 1)
        #expect(keychain.stored.first?[.accessible] == .afterFirstUnlockThisDeviceOnly)
        #expect(keychain.stored.first?[.synchronizable] == .bool(false))
        #expect(try store.load() == next)
        try store.clear()
        #expect(try store.load() == nil && keychain.stored.isEmpty)
        try store.clear()
    }

    /// Issue 64: sharing the session with extensions puts the item in an access group. An app
    /// updated to share it finds the item its earlier version saved in the app's own group,
    /// moves it into the shared group, and nobody is signed out by the update.
    @Test func anUpdateThatSharesTheSessionMovesTheItemIntoTheGroup() throws {
        let keychain = FakeKeychain()
        let group = "ABCDE12345.com.example.handz.shared"
        try KeychainSessionStore(item: KeychainItem(service: "com.example.handz.gatehouse"), calls: keychain).save(Self.session)
        #expect(KeychainItem(service: "s", accessGroup: group).identity[.accessGroup] == .string(group))
        #expect(KeychainItem(service: "s").identity[.accessGroup] == nil)

        let shared = KeychainSessionStore(item: KeychainItem(service: "com.example.handz.gatehouse", accessGroup: group), calls: keychain)
        #expect(try shared.load() == Self.session)
        #expect(keychain.stored.count == 1)
        #expect(keychain.stored.first?[.accessGroup] == .string(group))
        // From now on it is read from the group, and a sign-out leaves nothing to move back.
        #expect(try shared.load() == Self.session)
        try shared.clear()
        #expect(try shared.load() == nil && keychain.stored.isEmpty)
    }

    /// HH-47 with the Keychain's shape: the Keychain outlives the app, the app's storage does not;
    /// a session saved by an earlier install is discarded at launch and removed from the Keychain.
    @Test func aReinstallDiscardsTheKeychainsSession() async throws {
        let keychain = FakeKeychain()
        let store = KeychainSessionStore(item: KeychainItem(service: "com.example.app.gatehouse"), calls: keychain)
        let transport = ScriptedTransport([ScriptedTransportTests.login.0: ScriptedTransportTests.login.1])
        let configuration = try ClientConfiguration(baseURL: URL(string: "https://auth.example.com")!)
        let first = Gatehouse(configuration: configuration, tokenStore: store, storage: MemoryStorage(), transport: transport, clock: TestClientClock())
        try await first.signIn(email: "ann@example.com", password: "pw")
        #expect(try store.load()?.refreshToken == "r1" && keychain.stored.count == 1)

        // Reinstalled: new app storage (a new install id), the same Keychain.
        let reinstalled = Gatehouse(
            configuration: configuration, tokenStore: store, storage: MemoryStorage(), transport: transport, clock: TestClientClock())
        #expect(await reinstalled.restore() == .signedOut(.reinstalled))
        #expect(keychain.stored.isEmpty)
        #expect(transport.paths == ["POST /v1/auth/login"], "nothing was sent with the old session")
    }
}
