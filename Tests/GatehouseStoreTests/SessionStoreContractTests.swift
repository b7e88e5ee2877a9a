import Foundation
import GatehouseCore
@testable import GatehouseStore
import GatehouseTestSupport
import Testing

/// Sessions, refresh tokens, throttles, audit and secrets: the same behaviour on both databases.
@Suite struct SessionStoreContractTests {
    func withStore(_ backend: Backend, _ body: @escaping @Sendable (SQLStore) async throws -> Void) async throws {
        try await TestDatabase.withStore(backend, body)
    }

    func user(_ store: SQLStore) async throws -> User {
        let user = User(id: .random(), createdAt: Date(unixSeconds: 1_800_000_000))
        try await store.insertUser(user)
        return user
    }

    @Test(arguments: Backend.available)
    func sessionsAndTheirRevocation(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let owner = try await user(store)
            let t0 = Date(unixSeconds: 1_800_000_000)
            let sessions = (0..<3).map {
                Session(userID: owner.id, provider: "email", createdAt: t0.addingTimeInterval(TimeInterval($0)), userAgent: "UA\($0)", ipAddress: "10.0.0.\($0)")
            }
            for session in sessions { try await store.insertSession(session) }
            #expect(try await store.session(id: sessions[0].id) == sessions[0])
            #expect(try await store.sessions(of: owner.id).map(\.id) == sessions.reversed().map(\.id))
            try await store.touchSession(sessions[0].id, at: t0.addingTimeInterval(100))
            #expect(try await store.session(id: sessions[0].id)?.lastActiveAt == t0.addingTimeInterval(100))
            #expect(try await store.revokeSession(sessions[0].id, reason: "logout", at: t0.addingTimeInterval(200)))
            #expect(try await store.revokeSession(sessions[0].id, reason: "again", at: t0) == false)
            let revoked = try await store.revokeSessions(of: owner.id, keeping: sessions[2].id, reason: "others", at: t0)
            #expect(revoked == [sessions[1].id])
            #expect(try await store.session(id: sessions[2].id)?.isRevoked == false)
            #expect(try await store.session(id: sessions[1].id)?.revokedReason == "others")
        }
    }

    @Test(arguments: Backend.available)
    func refreshTokensAreFoundByHashAndRotateOnce(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let owner = try await user(store)
            let session = Session(userID: owner.id, provider: "email", createdAt: Date(unixSeconds: 1_800_000_000))
            try await store.insertSession(session)
            let hash: [UInt8] = Array(repeating: 7, count: 32)
            let token = RefreshTokenRecord(hash: hash, sessionID: session.id, issuedAt: session.createdAt, expiresAt: session.createdAt.addingTimeInterval(60))
            try await store.insertRefreshToken(token)
            #expect(try await store.refreshToken(hash: hash) == token)
            #expect(try await store.refreshToken(hash: Array(repeating: 8, count: 32)) == nil)
            try await store.markRefreshTokenRotated(hash: hash, at: session.createdAt.addingTimeInterval(5))
            try await store.markRefreshTokenRotated(hash: hash, at: session.createdAt.addingTimeInterval(9))
            #expect(try await store.refreshToken(hash: hash)?.rotatedAt == session.createdAt.addingTimeInterval(5))
            await #expect(throws: StoreError.self) { try await store.insertRefreshToken(token) }
        }
    }

    @Test(arguments: Backend.available)
    func throttlesAndRateLimitsCountAtomically(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let now = Date(unixSeconds: 1_800_000_000)
            let counts = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 { group.addTask { try await store.recordFailure(key: "login:a@x.io", at: now) } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(counts.sorted() == Array(1...20))
            try await store.setLock(key: "login:a@x.io", until: now.addingTimeInterval(30))
            #expect(try await store.throttle(key: "login:a@x.io") == ThrottleState(failures: 20, lockedUntil: now.addingTimeInterval(30)))
            try await store.clearThrottle(key: "login:a@x.io")
            #expect(try await store.throttle(key: "login:a@x.io") == nil)
            #expect(try await store.hitRateLimit(key: "signup:1.2.3.4", windowStart: 100) == 1)
            #expect(try await store.hitRateLimit(key: "signup:1.2.3.4", windowStart: 100) == 2)
            #expect(try await store.hitRateLimit(key: "signup:1.2.3.4", windowStart: 200) == 1)
        }
    }

    @Test(arguments: Backend.available)
    func auditEventsPageInOrder(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let owner = try await user(store)
            let now = Date(unixSeconds: 1_800_000_000)
            for index in 0..<5 {
                try await store.insertAudit(
                    AuditEvent(createdAt: now, event: "e\(index)", outcome: "success", userID: index.isMultiple(of: 2) ? owner.id : nil,
                               details: ["n": String(index)]))
            }
            let firstPage = try await store.auditEvents(userID: nil, before: nil, limit: 3)
            #expect(firstPage.map(\.event) == ["e4", "e3", "e2"])
            #expect(firstPage[0].details == ["n": "4"])
            let secondPage = try await store.auditEvents(userID: nil, before: firstPage.last?.sequence, limit: 3)
            #expect(secondPage.map(\.event) == ["e1", "e0"])
            #expect(try await store.auditEvents(userID: owner.id, before: nil, limit: 10).map(\.event) == ["e4", "e2", "e0"])
        }
    }

    @Test(arguments: Backend.available)
    func secretsAreStoredOnce(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.insertSecret(named: "k", value: [1, 2, 3], encryption: "none", at: Date())
            await #expect(throws: StoreError.self) {
                try await store.insertSecret(named: "k", value: [9], encryption: "none", at: Date())
            }
            try await store.updateSecret(named: "k", value: [4], encryption: "aes-256-gcm")
            let stored = try await store.secret(named: "k")
            #expect(stored?.value == [4] && stored?.encryption == "aes-256-gcm")
            #expect(try await store.secret(named: "missing") == nil)
        }
    }
}

@Suite struct OutboxStoreContractTests {
    @Test(arguments: Backend.available)
    func claimsAreLeasedSoTwoWorkersNeverTakeOneMail(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let now = Date(unixSeconds: 1_800_000_000)
            for index in 0..<6 {
                try await store.enqueueMail(
                    OutboxMessage(createdAt: now.addingTimeInterval(TimeInterval(index)), kind: "test", recipient: "r\(index)@x.io",
                                  subject: "s", textBody: "t", htmlBody: nil))
            }
            let later = now.addingTimeInterval(10)
            let (a, b) = try await (store.claimDueMail(now: later, limit: 4, leaseSeconds: 60), store.claimDueMail(now: later, limit: 4, leaseSeconds: 60))
            #expect(a.count + b.count == 6)
            #expect(Set(a.map(\.id)).isDisjoint(with: Set(b.map(\.id))))
            #expect(try await store.claimDueMail(now: later, limit: 10, leaseSeconds: 60).isEmpty)
            // Sent mail is done; a failed attempt comes back when due; a lapsed lease frees the rest.
            try await store.markMailSent(a[0].id, at: later, keepBodies: false)
            try await store.markMailFailed(a[1].id, error: "boom", nextAttempt: later.addingTimeInterval(5), at: later)
            try await store.markMailFailed(a[2].id, error: "boom", nextAttempt: nil, at: later)
            let retried = try await store.claimDueMail(now: later.addingTimeInterval(6), limit: 10, leaseSeconds: 60)
            #expect(retried.map(\.id) == [a[1].id])
            #expect(retried.first?.attempts == 1 && retried.first?.lastError == "boom")
            let afterLease = try await store.claimDueMail(now: later.addingTimeInterval(61), limit: 10, leaseSeconds: 60)
            #expect(Set(afterLease.map(\.id)) == Set((a.dropFirst(3) + b).map(\.id)))
            let recent = try await store.recentMail(limit: 10)
            let sent = try #require(recent.first { $0.id == a[0].id })
            #expect(sent.status == "sent" && sent.textBody == nil && sent.sentAt == later)
            #expect(recent.first { $0.id == a[2].id }?.status == "failed")
        }
    }
}
