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
    /// The console's reads of a page of accounts at once (issue 65) answer what the reads of each
    /// account answer: 270 accounts (a statement of 200, then one of 70 padded to 200) and a page
    /// of 30 (one statement of 50), rows of every source, identities and passkeys in some, none
    /// in others, and only the sources asked for.
    @Test(arguments: Backend.available)
    func manyAccountsReadTogether(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            var users: [User] = []
            for index in 0..<270 {
                let user = StoreContractTests.user("many\(index)@example.com", at: 1_800_000_000 + Int64(index))
                users.append(user)
                try await store.insertUser(user)
                if index % 2 == 0 {
                    try await store.insertIdentity(Identity(userID: user.id, provider: .email, subject: "many\(index)@example.com", createdAt: Self.now))
                }
                if index % 3 == 0 {
                    try await store.insertIdentity(Identity(userID: user.id, provider: .apple, subject: "apple-\(index)", createdAt: Self.now + 1))
                }
                for key in 0..<(index % 8 == 5 ? 2 : 0) {
                    try await store.insertPasskey(
                        Passkey(
                            userID: user.id, credentialID: Array("credential-\(index)-\(key)".utf8), publicKey: Array(repeating: 1, count: 65),
                            signCount: 0, backupEligible: false, backedUp: false, transports: [], aaguid: Array(repeating: 0, count: 16),
                            name: "key \(key)", createdAt: Self.now + Double(key)))
                }
                if index % 4 == 1 {
                    _ = try await store.saveSubscription(
                        SubscriptionRecord(
                            originalTransactionID: "otx-\(index)", userID: user.id, productID: "pro_monthly", environment: "Production",
                            status: .active, expiresAt: Self.now + 86_400, willRenew: true, introductory: false, signedAt: Self.now, updatedAt: Self.now))
                }
                if index % 5 == 2 {
                    var record = Self.record("active", readAt: Self.now, user: user.id)
                    (record.subscriptionID, record.customerID) = ("sub-\(index)", "cus-\(index)")
                    #expect(try await store.saveStripeSubscription(record))
                }
                if index % 6 == 3 {
                    _ = try await store.saveGooglePlayPurchase(
                        GooglePlaySubscriptionRecord(
                            purchaseToken: "tok-\(index)", userID: user.id, productID: "premium_monthly", state: .active, expiresAt: Self.now + 86_400,
                            linkedPurchaseToken: nil, obfuscatedAccountID: nil, acknowledged: true, testPurchase: false, readAt: Self.now))
                }
                if index % 7 == 4 {
                    for grant in 0..<2 {
                        try await store.insertGrant(
                            PlanGrant(
                                userID: user.id, tier: nil, startsAt: Self.now + Double(grant), until: Self.now + 86_400, reason: "support",
                                createdBy: "operator"))
                    }
                }
            }
            let ids = users.map(\.id)
            let ledgers = try await store.ledgerRows(ofAccounts: ids + [ids[0]], sources: Set(PlanSource.allCases))
            let identities = try await store.identities(ofAccounts: ids)
            let passkeys = try await store.passkeys(ofAccounts: ids)
            for user in users {
                let ledger = try await store.ledgerRows(of: user.id)
                #expect((ledgers[user.id] ?? LedgerRows()) == ledger)
                #expect((identities[user.id] ?? []) == (try await store.identities(of: user.id)))
                #expect((passkeys[user.id] ?? []).map(\.name) == (try await store.passkeys(of: user.id)).map(\.name))
            }
            let page = Array(ids.prefix(30))
            #expect(try await store.identities(ofAccounts: page) == identities.filter { page.contains($0.key) })
            #expect(passkeys.count == users.indices.filter { $0 % 8 == 5 }.count && passkeys.values.allSatisfy { $0.map(\.name) == ["key 0", "key 1"] })
            // Every source is found somewhere, and the accounts without rows are absent.
            #expect(users.contains { !(ledgers[$0.id]?.appStore.isEmpty ?? true) })
            #expect(users.contains { !(ledgers[$0.id]?.stripe.isEmpty ?? true) })
            #expect(users.contains { !(ledgers[$0.id]?.googlePlay.isEmpty ?? true) })
            #expect(users.contains { (ledgers[$0.id]?.grants.count ?? 0) == 2 })
            #expect(ledgers.count == users.indices.filter { $0 % 4 == 1 || $0 % 5 == 2 || $0 % 6 == 3 || $0 % 7 == 4 }.count)
            #expect(identities.count == users.indices.filter { $0 % 2 == 0 || $0 % 3 == 0 }.count)
            // Only the sources asked for.
            let grantsOnly = try await store.ledgerRows(ofAccounts: ids, sources: [.grant])
            #expect(grantsOnly.count == users.indices.filter { $0 % 7 == 4 }.count)
            #expect(grantsOnly.values.allSatisfy { $0.appStore.isEmpty && $0.stripe.isEmpty && $0.googlePlay.isEmpty && $0.grants.count == 2 })
            #expect(try await store.ledgerRows(ofAccounts: [], sources: Set(PlanSource.allCases)).isEmpty)
        }
    }

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
