import Foundation
import GatehouseCore
@testable import GatehouseStore
import GatehouseTestSupport
import Testing

/// Mailed links and queued requests behave the same on both databases.
@Suite struct EmailTokenStoreContractTests {
    static let now = Date(unixSeconds: 1_800_000_000)

    static func token(_ byte: UInt8, user: UserID?, email: String = "ann@example.com", purpose: EmailTokenPurpose = .magicLink, at offset: TimeInterval = 0) -> EmailToken {
        EmailToken(
            hash: Array(repeating: byte, count: 32), purpose: purpose, userID: user, email: email, normalizedEmail: email,
            codeHash: [9, 9], redirectTo: "myapp://auth", passwordStamp: 42, createdAt: now.addingTimeInterval(offset),
            expiresAt: now.addingTimeInterval(offset + 900))
    }

    @Test(arguments: Backend.available)
    func aTokenIsUsedOnceAndRetiredByPurpose(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let user = StoreContractTests.user("ann@example.com")
            try await store.insertUser(user)
            let first = Self.token(1, user: user.id)
            try await store.insertEmailToken(first)
            #expect(try await store.emailToken(hash: first.hash) == first)
            #expect(try await store.useEmailToken(hash: first.hash, at: Self.now))
            #expect(try await store.useEmailToken(hash: first.hash, at: Self.now) == false)
            #expect(try await store.emailToken(hash: first.hash)?.usedAt == Self.now)

            // The newest unused one comes first; a used newer one does not hide it.
            let second = Self.token(2, user: user.id, at: 10)
            let third = Self.token(3, user: nil, at: 20)
            try await store.insertEmailToken(second)
            try await store.insertEmailToken(third)
            #expect(try await store.newestEmailToken(normalizedEmail: "ann@example.com", purpose: .magicLink)?.hash == third.hash)
            _ = try await store.useEmailToken(hash: third.hash, at: Self.now)
            #expect(try await store.newestEmailToken(normalizedEmail: "ann@example.com", purpose: .magicLink)?.hash == second.hash)
            // Code attempts are reserved up to the limit, never past it, and only on a live token.
            #expect(try await store.reserveCodeAttempt(hash: second.hash, limit: 2, now: Self.now) == 1)
            #expect(try await store.reserveCodeAttempt(hash: second.hash, limit: 2, now: Self.now) == 2)
            #expect(try await store.reserveCodeAttempt(hash: second.hash, limit: 2, now: Self.now) == nil)
            #expect(try await store.emailToken(hash: second.hash)?.codeAttempts == 2)
            #expect(try await store.reserveCodeAttempt(hash: third.hash, limit: 5, now: Self.now) == nil)

            let reset = Self.token(4, user: user.id, purpose: .passwordReset)
            try await store.insertEmailToken(reset)
            try await store.retireEmailTokens(userID: user.id, normalizedEmail: nil, purpose: .magicLink, at: Self.now)
            #expect(try await store.emailToken(hash: second.hash)?.usedAt != nil)
            #expect(try await store.emailToken(hash: reset.hash)?.usedAt == nil)
            #expect(try await store.emailTokenTimes(userID: user.id, purpose: .magicLink, since: Self.now.addingTimeInterval(5)).count == 1)
        }
    }

    @Test(arguments: Backend.available)
    func aQueuedRequestIsComposedOrDropped(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let request = OutboxMessage(
                createdAt: Self.now, kind: "magic_link", recipient: "Typed@Example.com", subject: "magic_link", textBody: nil,
                htmlBody: nil, payload: ["email": "Typed@Example.com", "redirect_to": "myapp://auth"])
            try await store.enqueueMail(request)
            let claimed = try await store.claimDueMail(now: Self.now, limit: 1, leaseSeconds: 40)
            #expect(claimed.first?.isRequest == true && claimed.first?.payload?["redirect_to"] == "myapp://auth")
            try await store.composeMail(
                request.id, recipient: "typed@example.com", subject: "Hi", text: "t", html: "<p>h</p>", linkHost: "x",
                payload: ["link": "https://x/verify?token=abc", "code": "123456"])
            let composed = try await store.recentMail(limit: 1).first
            // The request's parameters are replaced by the mail's link and code, kept until it is sent.
            #expect(composed?.isRequest == false && composed?.textBody == "t" && composed?.payload == ["link": "https://x/verify?token=abc", "code": "123456"])

            let unknown = OutboxMessage(
                createdAt: Self.now, kind: "password_reset", recipient: "nobody@example.com", subject: "password_reset", textBody: nil,
                htmlBody: nil, payload: ["email": "nobody@example.com"])
            try await store.enqueueMail(unknown)
            try await store.dropMail(unknown.id, reason: "no account", at: Self.now)
            let dropped = try await store.recentMail(limit: 5).first { $0.id == unknown.id }
            #expect(dropped?.status == "dropped" && dropped?.recipient == "" && dropped?.payload == nil)
        }
    }
}

/// App Store subscriptions behave the same on both databases.
@Suite struct SubscriptionStoreContractTests {
    static let now = Date(unixSeconds: 1_800_000_000)

    /// `signed`: milliseconds after `now`, as App Store dates are kept.
    static func record(_ id: String, user: UserID?, signed offset: Int64, status: SubscriptionRecord.Status = .active) -> SubscriptionRecord {
        SubscriptionRecord(
            originalTransactionID: id, userID: user, productID: "p", environment: "Production", status: status,
            expiresAt: now + 86_400, graceExpiresAt: nil, willRenew: true, introductory: false,
            signedAt: Date(unixMilliseconds: now.unixMilliseconds + offset), updatedAt: now)
    }

    @Test(arguments: Backend.available)
    func theNewestSignedFactsWin(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let ann = StoreContractTests.user("ann@example.com")
            let bob = StoreContractTests.user("bob@example.com")
            try await store.insertUser(ann)
            try await store.insertUser(bob)
            try await store.saveSubscription(Self.record("1", user: nil, signed: 10_000))
            #expect(try await store.subscription(originalTransactionID: "1", forUpdate: false) == Self.record("1", user: nil, signed: 10_000))
            // An older one arriving late does not overwrite; a newer one does, to the millisecond.
            try await store.saveSubscription(Self.record("1", user: ann.id, signed: 5_000, status: .expired))
            #expect(try await store.subscription(originalTransactionID: "1", forUpdate: false)?.status == .active)
            try await store.saveSubscription(Self.record("1", user: ann.id, signed: 10_001, status: .billingGrace))
            #expect(try await store.subscription(originalTransactionID: "1", forUpdate: false) == Self.record("1", user: ann.id, signed: 10_001, status: .billingGrace))
            #expect(try await store.subscriptions(of: ann.id).map(\.originalTransactionID) == ["1"])

            // A merge moves them; deleting the account deletes them.
            try await store.moveSubscriptions(from: ann.id, to: bob.id)
            #expect(try await store.subscriptions(of: ann.id).isEmpty)
            #expect(try await store.subscriptions(of: bob.id).count == 1)
            _ = try await store.deleteUser(bob.id)
            #expect(try await store.subscription(originalTransactionID: "1", forUpdate: false) == nil)

            #expect(try await store.recordLedgerEvent(source: .appStore, id: "n-1", type: "DID_RENEW", outcome: "applied", at: Self.now))
            #expect(try await store.recordLedgerEvent(source: .appStore, id: "n-1", type: "DID_RENEW", outcome: "applied", at: Self.now) == false)
        }
    }
}
