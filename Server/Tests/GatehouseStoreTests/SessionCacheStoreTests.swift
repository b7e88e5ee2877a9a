import Foundation
import GatehouseCore
@testable import GatehouseStore
import GatehouseTestSupport
import Synchronization
import Testing

/// The rules that bound how stale a `SessionCache` copy can be, and the store's own changes
/// dropping copies (the two-node behaviour over PostgreSQL is in `SessionCacheTests`).
@Suite struct SessionCacheStoreTests {
    static let t0 = Date(unixSeconds: 1_800_000_000)

    /// A cache that has heard its own heartbeat, as a listening node's has. Its bound and time to
    /// live are an hour unless a test is about them: under the parallel suite a database call can
    /// take seconds, and these tests are about what drops a copy, not about time.
    func listening(_ settings: SessionCache.Settings = .init(timeToLive: .seconds(3600), stalenessBound: .seconds(3600))) -> SessionCache {
        let cache = SessionCache(settings: settings)
        cache.apply(cache.heartbeat())
        return cache
    }

    func pair(_ user: User? = nil) -> (Session, User) {
        let owner = user ?? User(id: .random(), createdAt: Self.t0)
        return (Session(userID: owner.id, provider: "email", createdAt: Self.t0), owner)
    }

    /// A monotonic clock the test moves by hand.
    final class ManualTime: Sendable {
        let start = ContinuousClock.now
        private let elapsed = Mutex<Duration>(.zero)
        func now() -> ContinuousClock.Instant { start + elapsed.withLock { $0 } }
        func advance(_ duration: Duration) { elapsed.withLock { $0 += duration } }
    }

    @Test func copiesAreServedOnlyWhileTheNodesOwnHeartbeatsComeBack() {
        let time = ManualTime()
        let cache = SessionCache(settings: .init(stalenessBound: .milliseconds(500)), now: time.now)
        let (session, user) = pair()
        // Before any heartbeat has come back the node is not listening: nothing is kept.
        cache.keep(session, user, ticket: cache.ticket())
        // The first heartbeat back says so (the listener logs that copies are served from then on).
        #expect(cache.apply(cache.heartbeat()))
        #expect(cache.lookup(session.id) == nil)
        cache.keep(session, user, ticket: cache.ticket())
        #expect(cache.lookup(session.id)?.session == session)
        #expect(!cache.apply(cache.heartbeat()))
        // No heartbeat back for the bound: the copy is held but not served.
        let pending = cache.heartbeat()
        time.advance(.milliseconds(499))
        #expect(cache.lookup(session.id) != nil)
        time.advance(.milliseconds(1))
        #expect(cache.lookup(session.id) == nil)
        // Another node's heartbeat on the shared channel says nothing about this node's hearing.
        #expect(!cache.apply("h:another-node:\(pending.split(separator: ":").last!)"))
        #expect(cache.lookup(session.id) == nil)
        // This node's own heartbeat returns, but it was sent 500 ms ago: still too old.
        cache.apply(pending)
        #expect(cache.lookup(session.id) == nil)
        // One sent now comes back: what was held is served again.
        cache.apply(cache.heartbeat())
        #expect(cache.lookup(session.id)?.session == session)
        // A lost connection empties the cache and stops serving until a heartbeat returns.
        cache.restart()
        #expect(cache.lookup(session.id) == nil)
        #expect(cache.apply(cache.heartbeat()))
        #expect(cache.lookup(session.id) == nil)
    }

    @Test func aCopyLivesNoLongerThanItsTimeToLive() {
        let time = ManualTime()
        let cache = SessionCache(settings: .init(timeToLive: .seconds(5)), now: time.now)
        let (session, user) = pair()
        cache.apply(cache.heartbeat())
        cache.keep(session, user, ticket: cache.ticket())
        for _ in 0..<49 {
            time.advance(.milliseconds(100))
            cache.apply(cache.heartbeat())  // still hearing, every 100 ms
        }
        #expect(cache.lookup(session.id) != nil)
        time.advance(.milliseconds(100))
        cache.apply(cache.heartbeat())
        #expect(cache.lookup(session.id) == nil)
    }

    @Test func aReadThatBeganBeforeAChangeIsNotKept() {
        let cache = listening()
        let (session, user) = pair()
        let (other, otherUser) = pair()
        // The read began, then a change was heard (about anything): the read may predate it.
        let ticket = cache.ticket()
        cache.apply("s:\(other.id)")
        cache.keep(session, user, ticket: ticket)
        #expect(cache.lookup(session.id) == nil)

        // A change to an account drops all of its sessions and no other.
        let (second, _) = pair(user)
        for (session, user) in [(session, user), (second, user), (other, otherUser)] { cache.keep(session, user, ticket: cache.ticket()) }
        cache.apply("u:\(user.id)")
        #expect(cache.lookup(session.id) == nil && cache.lookup(second.id) == nil)
        #expect(cache.lookup(other.id) != nil)
        // An announcement of a form this version does not know drops everything.
        cache.apply("x:future-form")
        #expect(cache.lookup(other.id) == nil)
    }

    @Test func pastItsCapacityNewReadsAreNotKept() {
        let cache = listening(.init(timeToLive: .seconds(3600), stalenessBound: .seconds(3600), capacity: 2))
        let sessions = (0..<3).map { _ in pair() }
        for (session, user) in sessions { cache.keep(session, user, ticket: cache.ticket()) }
        #expect(sessions.map { cache.lookup($0.0.id) != nil } == [true, true, false])
        #expect(cache.counts.held == 2)
    }

    /// Read-your-writes on one node: a change this store makes drops the copies at once, or
    /// when its transaction ends; a copy of a refused session is never kept.
    @Test(arguments: Backend.available)
    func theStoresOwnChangesDropItsCopies(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { database, _ in
            try await Migrator(database: database).migrate(now: 1_800_000_000)
            let cache = listening()
            let store = SQLStore(database: database, sessionCache: cache)
            let (first, owner) = pair()
            let (second, _) = pair(owner)
            try await store.insertUser(owner)
            for session in [first, second] {
                try await store.insertSession(session)
                #expect(store.cachedSessionAndUser(id: session.id) == nil)
                _ = try await store.sessionAndUser(id: session.id)
                #expect(store.cachedSessionAndUser(id: session.id)?.session == session)
            }
            #expect(try await store.revokeSession(first.id, reason: .logout, at: Self.t0))
            #expect(store.cachedSessionAndUser(id: first.id) == nil)
            #expect(store.cachedSessionAndUser(id: second.id) != nil)
            // Read again, the revoked session is not kept.
            #expect(try await store.sessionAndUser(id: first.id)?.session.isRevoked == true)
            #expect(store.cachedSessionAndUser(id: first.id) == nil)

            // Inside a transaction the copy stays until the transaction has ended; a store in a
            // transaction never answers from the cache.
            try await store.transaction { tx in
                try await tx.updateProfile(owner.id, displayName: "New", handle: nil, avatarURL: nil, onboardingComplete: false, now: Self.t0)
                #expect(tx.cachedSessionAndUser(id: second.id) == nil)
                #expect(cache.lookup(second.id) != nil)
            }
            #expect(store.cachedSessionAndUser(id: second.id) == nil)
            #expect(try await store.sessionAndUser(id: second.id)?.user.displayName == "New")
            #expect(store.cachedSessionAndUser(id: second.id)?.user.displayName == "New")
        }
    }

    // MARK: An account's facts (issue 47)

    /// Reads every fact of `user` outside a transaction, so the cache keeps them all.
    func readFacts(_ store: SQLStore, _ user: UserID) async throws {
        _ = try await store.identities(of: user)
        _ = try await store.subscriptions(of: user)
        _ = try await store.stripeSubscriptions(of: user)
        _ = try await store.googlePlayPurchases(of: user)
        _ = try await store.grants(of: user)
        _ = try await store.creditsSpent(of: user, since: Self.t0)
    }

    /// Each write to a table an account's facts come from, as the store offers it. A new write
    /// method on those tables belongs here (scripts/structure-check.py names the tables).
    enum FactWrite: CaseIterable {
        case insertIdentity, updateIdentity, setProviderToken, deleteIdentities
        case saveSubscription, moveSubscriptions, saveStripeSubscription, moveStripeRows
        case saveGooglePlayPurchase, supersedeGooglePlayPurchase, voidGooglePlayPurchase, markGooglePlayPurchaseAcknowledged
        case moveGooglePlayPurchases
        case insertGrant, revokeGrant, moveGrants, insertCreditSpend
    }

    /// Every write above drops the facts of the account it touches (both, when rows move), at
    /// once outside a transaction and when the transaction ends inside one; a transaction never
    /// reads a fact from the cache.
    @Test(arguments: Backend.available)
    func everyWriteOfAnAccountsFactsDropsThem(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { database, _ in
            try await Migrator(database: database).migrate(now: 1_800_000_000)
            let cache = listening()
            let store = SQLStore(database: database, sessionCache: cache)
            let (owner, other) = (User(id: .random(), createdAt: Self.t0), User(id: .random(), createdAt: Self.t0))
            for user in [owner, other] { try await store.insertUser(user) }
            let identity = Identity(userID: owner.id, provider: .google, subject: "g-1", email: "a@example.com", createdAt: Self.t0)
            let grant = PlanGrant(userID: owner.id, tier: nil, startsAt: Self.t0, until: Self.t0 + 86_400, reason: "test", createdBy: "test")
            for write in FactWrite.allCases {
                try await readFacts(store, owner.id)
                try await readFacts(store, other.id)
                #expect(cache.facts(of: owner.id)?.grants != nil && cache.facts(of: owner.id)?.credits != nil)
                var moved = false
                switch write {
                case .insertIdentity: try await store.insertIdentity(identity)
                case .updateIdentity: try await store.updateIdentity(identity.id, email: "b@example.com", isPrivateRelay: false)
                case .setProviderToken:
                    try await store.setProviderToken(userID: owner.id, provider: .google, subject: "g-1", value: [1], encryption: "test")
                case .deleteIdentities: _ = try await store.deleteIdentities(of: owner.id, provider: .google)
                case .saveSubscription:
                    try await store.saveSubscription(
                        SubscriptionRecord(
                            originalTransactionID: "otx-1", userID: owner.id, productID: "pro", environment: "Sandbox", status: .active,
                            expiresAt: Self.t0 + 86_400, willRenew: true, introductory: false, signedAt: Self.t0, updatedAt: Self.t0))
                case .moveSubscriptions: try await store.moveSubscriptions(from: owner.id, to: other.id); moved = true
                case .saveStripeSubscription:
                    // Saved without an owner, as a webhook may: the row's owner is still dropped.
                    for user in [owner.id, nil] {
                        try await store.saveStripeSubscription(
                            StripeSubscriptionRecord(
                                subscriptionID: "sub_1", customerID: "cus_1", userID: user, priceID: "price_1", status: user == nil ? "past_due" : "active",
                                currentPeriodEnd: nil, cancelAtPeriodEnd: false, trialEnd: nil, readAt: Self.t0 + (user == nil ? 2 : 1), updatedAt: Self.t0))
                        if user != nil { try await readFacts(store, owner.id) }
                    }
                case .moveStripeRows: try await store.moveStripeRows(from: owner.id, to: other.id); moved = true
                case .saveGooglePlayPurchase:
                    try await store.saveGooglePlayPurchase(
                        GooglePlaySubscriptionRecord(
                            purchaseToken: "gp-1", userID: owner.id, productID: "premium", state: .active, expiresAt: Self.t0 + 86_400,
                            linkedPurchaseToken: nil, obfuscatedAccountID: nil, acknowledged: false, testPurchase: false, readAt: Self.t0))
                case .supersedeGooglePlayPurchase: #expect(try await store.supersedeGooglePlayPurchase("gp-1", by: "gp-2"))
                case .voidGooglePlayPurchase: #expect(try await store.voidGooglePlayPurchase("gp-1", at: Self.t0))
                case .markGooglePlayPurchaseAcknowledged: try await store.markGooglePlayPurchaseAcknowledged("gp-1")
                case .moveGooglePlayPurchases: try await store.moveGooglePlayPurchases(from: owner.id, to: other.id); moved = true
                case .insertGrant: try await store.insertGrant(grant)
                case .revokeGrant: #expect(try await store.revokeGrant(grant.id, of: owner.id, at: Self.t0))
                case .moveGrants: try await store.moveGrants(from: owner.id, to: other.id); moved = true
                case .insertCreditSpend:
                    try await store.transaction { tx in
                        try await tx.insertCreditSpend(
                            CreditSpend(
                                userID: owner.id, credit: "practice", action: "practice", subject: nil, idempotencyKey: "k-1", periodStart: Self.t0,
                                createdAt: Self.t0))
                        #expect(cache.facts(of: owner.id) != nil, "dropped before the transaction ended")
                        #expect(try await tx.creditsSpent(of: owner.id, since: Self.t0) == ["practice": 1], "a transaction read a copy")
                    }
                }
                #expect(cache.facts(of: owner.id) == nil, "\(write) left the owner's facts")
                #expect((cache.facts(of: other.id) == nil) == moved, "\(write): the other account's facts")
            }
            #expect(try await store.creditsSpent(of: owner.id, since: Self.t0) == ["practice": 1])
        }
    }

    /// SQLite: a write by another connection to the file (the CLI's) is not this store's to
    /// drop; `feedChanges` sees it through `PRAGMA data_version` and every copy goes within the
    /// bound. With the poll stopped, nothing is served past the bound.
    @Test func anotherProcesssWriteToTheSQLiteFileIsSeenWithinTheBound() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-facts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = DatabaseURL.sqlite(path: directory.appendingPathComponent("node.sqlite").path)
        let database = try await url.open(logger: TestDatabase.logger)
        let cli = try await url.open(logger: TestDatabase.logger)
        try await Migrator(database: database).migrate(now: 1_800_000_000)
        let cache = SessionCache(settings: .init(timeToLive: .seconds(3600), heartbeatInterval: .milliseconds(100), stalenessBound: .milliseconds(500)))
        let store = SQLStore(database: database, sessionCache: cache)
        let feed = Task { await (database as! SQLiteDatabase).feedChanges(into: cache) }
        let owner = User(id: .random(), createdAt: Self.t0)
        try await store.insertUser(owner)

        // Kept and served: the same read answers from the copy while the poll keeps coming.
        var served = false
        for _ in 0..<50 where !served {
            _ = try await store.grants(of: owner.id)
            served = cache.facts(of: owner.id)?.grants == []
            if !served { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(served, "the facts were never kept")

        try await SQLStore(database: cli).insertGrant(
            PlanGrant(userID: owner.id, tier: nil, startsAt: Self.t0, until: Self.t0 + 86_400, reason: "cli", createdBy: "cli"))
        // From the commit's answer; each read counts from when it began, as the bound is about
        // reads that begin after a change.
        let start = ContinuousClock.now
        var lastStale: Duration = .zero
        while true {
            let began = ContinuousClock.now - start
            guard try await store.grants(of: owner.id).isEmpty else { break }
            lastStale = began
            #expect(lastStale < .seconds(5), "the other connection's grant was never seen")
            if lastStale >= .seconds(5) { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(lastStale <= .milliseconds(500), "a read begun \(lastStale) after another process's write still saw the copy")

        // No poll, no copies: past the bound the cache reads afresh.
        feed.cancel()
        _ = await feed.value
        _ = try await store.grants(of: owner.id)
        #expect(cache.facts(of: owner.id) == nil)
        await cli.shutdown()
        await database.shutdown()
    }
}
