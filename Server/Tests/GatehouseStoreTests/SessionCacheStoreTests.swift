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
        cache.apply(cache.heartbeat())
        #expect(cache.lookup(session.id) == nil)
        cache.keep(session, user, ticket: cache.ticket())
        #expect(cache.lookup(session.id)?.session == session)
        // No heartbeat back for the bound: the copy is held but not served.
        let pending = cache.heartbeat()
        time.advance(.milliseconds(499))
        #expect(cache.lookup(session.id) != nil)
        time.advance(.milliseconds(1))
        #expect(cache.lookup(session.id) == nil)
        // Another node's heartbeat on the shared channel says nothing about this node's hearing.
        cache.apply("h:another-node:\(pending.split(separator: ":").last!)")
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
        cache.apply(cache.heartbeat())
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
}
