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
            #expect(try await store.recordStripeEvent(id: "evt_1", type: "invoice.paid", outcome: "applied", at: Self.now))
            #expect(try await store.recordStripeEvent(id: "evt_1", type: "invoice.paid", outcome: "applied", at: Self.now) == false)

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
}
