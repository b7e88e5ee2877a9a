import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import Testing

/// The plan ledger's rows on SQLite and PostgreSQL alike (issue 44): one Stripe customer per
/// account, a subscription's state only ever replaced by a later read and never revived once
/// ended, events recorded once, grants revoked once.
@Suite struct PlanLedgerStoreContractTests {
    static let now = Date(unixSeconds: 1_800_000_000)

    static func record(_ status: String, readAt: Date, user: UserID?) -> StripeSubscriptionRecord {
        StripeSubscriptionRecord(
            subscriptionID: "sub_1", customerID: "cus_1", userID: user, priceID: "price_1", status: status, currentPeriodEnd: now + 86_400,
            cancelAtPeriodEnd: false, trialEnd: nil, readAt: readAt, updatedAt: readAt)
    }

    @Test(arguments: Backend.available)
    func stripeRowsAndGrants(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let ann = StoreContractTests.user("ann@example.com")
            let bob = StoreContractTests.user("bob@example.com")
            try await store.insertUser(ann)
            try await store.insertUser(bob)

            // The first customer stored for the account stays; the owner is found by customer.
            #expect(try await store.saveStripeCustomer(userID: ann.id, customerID: "cus_1", at: Self.now) == "cus_1")
            #expect(try await store.saveStripeCustomer(userID: ann.id, customerID: "cus_2", at: Self.now) == "cus_1")
            #expect(try await store.stripeCustomerOwner("cus_1") == ann.id)
            #expect(try await store.stripeCustomerOwner("cus_2") == nil)

            // A later read replaces an earlier one; an earlier one arriving late changes nothing.
            #expect(try await store.saveStripeSubscription(Self.record("active", readAt: Self.now, user: ann.id)))
            #expect(try await store.saveStripeSubscription(Self.record("past_due", readAt: Self.now + 10, user: ann.id)))
            #expect(try await store.saveStripeSubscription(Self.record("active", readAt: Self.now + 5, user: ann.id)) == false)
            #expect(try await store.stripeSubscriptions(of: ann.id).map(\.status) == ["past_due"])
            // Ended for good: not even a later read revives it; the owner is never replaced.
            #expect(try await store.saveStripeSubscription(Self.record("canceled", readAt: Self.now + 20, user: bob.id)))
            #expect(try await store.saveStripeSubscription(Self.record("active", readAt: Self.now + 30, user: ann.id)) == false)
            let stored = try await store.stripeSubscriptions(of: ann.id)
            #expect(stored.map(\.status) == ["canceled"] && stored.first?.userID == ann.id)
            #expect(try await store.stripeSubscriptions(of: bob.id).isEmpty)

            // Past due: billing grace counts from the first read that saw it, however many later
            // reads say so (a new period's start included); paid again, a new streak starts.
            func pastDue(_ status: String, since: Date?, readAt: Date) async throws -> Date? {
                var record = Self.record(status, readAt: readAt, user: bob.id)
                record.subscriptionID = "sub_2"
                record.pastDueSince = since
                #expect(try await store.saveStripeSubscription(record))
                return try await store.stripeSubscriptions(of: bob.id).first?.pastDueSince
            }
            #expect(try await pastDue("past_due", since: Self.now, readAt: Self.now) == Self.now)
            #expect(try await pastDue("past_due", since: Self.now + 30 * 86_400, readAt: Self.now + 1) == Self.now)
            #expect(try await pastDue("active", since: nil, readAt: Self.now + 2) == nil)
            #expect(try await pastDue("past_due", since: Self.now + 60 * 86_400, readAt: Self.now + 3) == Self.now + 60 * 86_400)

            // Events by id, once.
            #expect(try await store.recordLedgerEvent(source: .stripe, id: "evt_1", type: "invoice.paid", outcome: "applied", at: Self.now))
            #expect(try await store.recordLedgerEvent(source: .stripe, id: "evt_1", type: "invoice.paid", outcome: "applied", at: Self.now) == false)
            // Keyed by the source: another source's delivery with the same id is another delivery.
            #expect(try await store.recordLedgerEvent(source: .googlePlay, id: "evt_1", type: "subscription.2", outcome: "applied", at: Self.now))
            #expect(try await store.ledgerEventRecorded(source: .googlePlay, id: "evt_1"))
            #expect(try await store.ledgerEventRecorded(source: .appStore, id: "evt_1") == false)

            // Grants: listed oldest first, revoked once, only by their account.
            let grant = PlanGrant(userID: ann.id, tier: "premium", startsAt: Self.now, until: Self.now + 86_400, reason: "support", createdBy: "operator")
            try await store.insertGrant(grant)
            #expect(try await store.grants(of: ann.id) == [grant])
            #expect(try await store.revokeGrant(grant.id, of: bob.id, at: Self.now) == false)
            #expect(try await store.revokeGrant(grant.id, of: ann.id, at: Self.now + 1))
            #expect(try await store.revokeGrant(grant.id, of: ann.id, at: Self.now + 2) == false)
            #expect(try await store.grants(of: ann.id).first?.revokedAt == Self.now + 1)

            // The rows go with the account.
            #expect(try await store.deleteUser(ann.id))
            #expect(try await store.stripeCustomer(of: ann.id) == nil)
            #expect(try await store.grants(of: ann.id).isEmpty)
            #expect(try await store.stripeCustomerOwner("cus_1") == nil)
        }
    }

    /// Google Play's rows (issue 59): the token is the key (the first owner stays), a later read
    /// only replaces an earlier one, a replaced or voided token stays so, acknowledged stays.
    @Test(arguments: Backend.available)
    func googlePlayRows(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let ann = StoreContractTests.user("ann@example.com")
            let bob = StoreContractTests.user("bob@example.com")
            try await store.insertUser(ann)
            try await store.insertUser(bob)
            func record(_ state: GooglePlaySubscriptionRecord.State, readAt: Date, user: UserID?, acknowledged: Bool = false) -> GooglePlaySubscriptionRecord {
                GooglePlaySubscriptionRecord(
                    purchaseToken: "tok-1", userID: user, productID: "premium_monthly", state: state, expiresAt: Self.now + 86_400,
                    linkedPurchaseToken: nil, obfuscatedAccountID: nil, acknowledged: acknowledged, testPurchase: true, readAt: readAt)
            }
            #expect(try await store.saveGooglePlayPurchase(record(.active, readAt: Self.now, user: nil)) == nil)
            #expect(try await store.saveGooglePlayPurchase(record(.active, readAt: Self.now + 1, user: ann.id, acknowledged: true)) == ann.id)
            // Bob's claim does not replace Ann: the answer names her.
            #expect(try await store.saveGooglePlayPurchase(record(.active, readAt: Self.now + 2, user: bob.id)) == ann.id)
            // An older read changes nothing.
            #expect(try await store.saveGooglePlayPurchase(record(.expired, readAt: Self.now, user: nil)) == ann.id)
            var stored = try await store.googlePlayPurchase(token: "tok-1")
            #expect(stored?.state == .active && stored?.acknowledged == true && stored?.testPurchase == true, "\(String(describing: stored))")
            #expect(try await store.supersedeGooglePlayPurchase("tok-1", by: "tok-2"))
            #expect(try await store.supersedeGooglePlayPurchase("tok-1", by: "tok-3") == false)
            #expect(try await store.voidGooglePlayPurchase("tok-1", at: Self.now))
            #expect(try await store.voidGooglePlayPurchase("tok-1", at: Self.now + 5) == false)
            try await store.saveGooglePlayPurchase(record(.active, readAt: Self.now + 10, user: nil))
            stored = try await store.googlePlayPurchase(token: "tok-1")
            #expect(stored?.supersededBy == "tok-2" && stored?.voidedAt == Self.now && stored?.userID == ann.id && stored?.acknowledged == true)
            try await store.moveGooglePlayPurchases(from: ann.id, to: bob.id)
            #expect(try await store.googlePlayPurchases(of: bob.id).map(\.purchaseToken) == ["tok-1"])
            #expect(try await store.googlePlayPurchases(of: ann.id).isEmpty)
        }
    }
}
