import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import Hummingbird
import HummingbirdTesting
import Testing

/// Issue 59: every source of the ledger walked through a merge, the export, the snapshot, a
/// second purchase and a deletion, on both databases. The switch over `PlanSource` makes a new
/// source name what each step does with it before this compiles. An anonymous payer holds a right
/// of every paid source at once (App Store, Stripe, Google Play, a grant); merged into an account,
/// the account holds all four, the snapshot lists all four, the export lists every row; ending the
/// grant leaves the others; a second purchase does what its source says; deleting the account
/// cancels at Stripe and at Google Play and leaves no row.
@Suite struct LedgerWalkTests {
    static let appStoreProduct = "com.hannahhealth.premium.monthly"

    @Test(arguments: Backend.available)
    func everySourceThroughMergeExportAndDeletion(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let play = try await GooglePlayStandIn()
        defer { play.stop() }
        let clock = ManualClock(Date(timeIntervalSince1970: TimeInterval(Int(Date().timeIntervalSince1970))))
        try await play.setClock(clock.now)
        let stripe = StripeTests.configure(standIn)
        let googlePlay = try await GooglePlayTests.configure(play)
        try await TestApp.run(backend, clock: clock, adjust: {
            stripe(&$0)
            googlePlay(&$0)
            $0.preset.entitlements.tiers = ["premium", "nutritionist"]
            $0.preset.entitlements.products = [Self.appStoreProduct: ProductSettings(plan: .pro, tier: "premium")]
            $0.preset.stripe.prices = [StripeTests.premium: ProductSettings(plan: .pro, tier: "premium")]
        }) { client, config in
            let api = AuthClient(client: client)
            let owner = try await api.account("walk.59@example.com")
            let guest = try await AccountTests.anonymous(api)
            let guestID = try #require(UserID(guest.user.id))
            var expected: [PlanSource: String] = [:]
            var stripeSubscription: String?
            for source in PlanSource.allCases {
                switch source {
                case .appStore:
                    let record = SubscriptionRecord(
                        originalTransactionID: "walk-59", userID: guestID, productID: Self.appStoreProduct, environment: "Sandbox", status: .active,
                        expiresAt: clock.now + 30 * 86_400, willRenew: true, introductory: false, signedAt: clock.now, updatedAt: clock.now)
                    _ = try await TestApp.withStore(config) { try await $0.saveSubscription(record) }
                    expected[source] = "walk-59"
                case .stripe:
                    let subscription = try await StripeTests.subscribe(client, standIn, token: guest.session.accessToken, now: clock.now)
                    stripeSubscription = subscription.id
                    expected[source] = subscription.id
                case .googlePlay:
                    let token = try await play.purchase([
                        "product_id": GooglePlayTests.premium, "expiry": GooglePlayTests.at(clock.now + 30 * 86_400), "obfuscated_account_id": guest.user.id,
                    ])
                    let claimed = try await GooglePlayTests.claim(api, token, session: guest.session.accessToken)
                    #expect(claimed.status == .ok, "\(claimed.text)")
                    expected[source] = token
                case .grant:
                    let until = (clock.now + 60 * 86_400).rfc3339
                    let made = try await api.post(
                        "/admin/v1/users/\(guest.user.id)/grants", #"{"until": "\#(until)", "reason": "walk", "tier": "nutritionist"}"#,
                        headers: [.authorization: "Bearer \(TestApp.adminKey)"])
                    #expect(made.status == .created, "\(made.text)")
                    expected[source] = try made.json(GrantResponse.self).grant.id
                case .trial:
                    continue  // The account's own fields: a merge keeps the kept account's.
                }
            }
            let paid = Set(PlanSource.allCases.filter { $0 != .trial }.map(\.rawValue))
            #expect(try await StripeTests.snapshot(api, guest.session.accessToken).sources.map { Set($0.compactMap(\.source)) } == paid)

            // The merge moves every row of every source.
            let taken = try await api.post(
                "/v1/auth/identities/email", AuthClient.credentials("walk.59@example.com", "correct horse battery"), token: guest.session.accessToken)
            let mergeToken = try #require(taken.error?.details?["merge_token"].flatMap { if case .string(let t) = $0 { t } else { nil } })
            #expect(try await api.post("/v1/auth/merge", #"{"merge_token": "\#(mergeToken)"}"#, token: owner.session.accessToken).status == .ok)
            let token = owner.session.accessToken
            let ownerID = try #require(UserID(owner.user.id))
            let snapshot = try await StripeTests.snapshot(api, token)
            #expect(Set(snapshot.sources?.compactMap(\.source) ?? []) == paid, "\(snapshot)")
            #expect(snapshot.planState == "pro" && snapshot.tier == "nutritionist", "\(snapshot)")
            let export = try await api.get("/v1/me/export", token: token).json(AccountExport.self)
            for source in PlanSource.allCases {
                switch source {
                case .appStore: #expect(export.subscriptions.map(\.originalTransactionID) == [expected[source]])
                case .stripe: #expect(export.stripeSubscriptions.map(\.subscriptionID) == [expected[source]] && export.stripeCustomers.count == 1)
                case .googlePlay: #expect(export.googlePlayPurchases.map(\.purchaseToken) == [expected[source]])
                case .grant: #expect(export.planGrants.map(\.id) == [expected[source]])
                case .trial: continue
                }
            }

            // Ending one source keeps the others: the grant revoked, the App Store's and Stripe's stay.
            let revoked = try await client.execute(
                uri: "/admin/v1/users/\(owner.user.id)/grants/\(expected[.grant] ?? "")", method: .delete, headers: TestApp.adminHeaders)
            #expect(revoked.status == .noContent, "\(revoked.status)")
            let after = try await StripeTests.snapshot(api, token)
            #expect(
                Set(after.sources?.compactMap(\.source) ?? []) == ["app_store", "stripe", "google_play"] && after.planState == "pro"
                    && after.tier == "premium")

            // A second purchase on each source does what that source's rule says.
            var secondPlayToken: String?
            for source in PlanSource.allCases {
                switch source {
                case .appStore:
                    // Another subscription is a row of its own beside the first.
                    let second = SubscriptionRecord(
                        originalTransactionID: "walk-59-second", userID: ownerID, productID: Self.appStoreProduct, environment: "Sandbox",
                        status: .active, expiresAt: clock.now + 20 * 86_400, willRenew: true, introductory: false, signedAt: clock.now,
                        updatedAt: clock.now)
                    _ = try await TestApp.withStore(config) { try await $0.saveSubscription(second) }
                case .stripe:
                    // A second web subscription would bill twice: refused while one runs.
                    let again = try await StripeTests.checkout(api, token: token)
                    #expect(again.status == .conflict && again.error?.code == "already_subscribed", "\(again.text)")
                case .googlePlay:
                    // Another purchase token is a right of its own beside the first.
                    let second = try await play.purchase([
                        "product_id": GooglePlayTests.premium, "expiry": GooglePlayTests.at(clock.now + 20 * 86_400),
                        "obfuscated_account_id": owner.user.id,
                    ])
                    #expect(try await GooglePlayTests.claim(api, second, session: token).status == .ok)
                    secondPlayToken = second
                case .grant:
                    let until = (clock.now + 10 * 86_400).rfc3339
                    let made = try await api.post(
                        "/admin/v1/users/\(owner.user.id)/grants", #"{"until": "\#(until)", "reason": "again"}"#,
                        headers: [.authorization: "Bearer \(TestApp.adminKey)"])
                    #expect(made.status == .created, "\(made.text)")
                case .trial:
                    continue  // Once per account: TrialBannerTests and EntitlementTests.
                }
            }
            let doubled = try await StripeTests.snapshot(api, token).sources?.compactMap(\.source) ?? []
            #expect(doubled.sorted() == ["app_store", "app_store", "google_play", "google_play", "grant", "stripe"], "\(doubled)")

            // Deletion ends each source's live right where it lives.
            let deleted = try await client.execute(uri: "/admin/v1/users/\(owner.user.id)", method: .delete, headers: TestApp.adminHeaders)
            #expect(deleted.status == .noContent)
            for source in PlanSource.allCases {
                switch source {
                case .appStore:
                    // Apple bills through the person's Apple account: the row goes with the account.
                    #expect(try await TestApp.withStore(config) { try await $0.subscriptions(of: ownerID) }.isEmpty)
                case .stripe:
                    let id = try #require(stripeSubscription)
                    func cancelled() async throws -> Bool {
                        try await standIn.requests().contains { $0.method == "DELETE" && $0.path == "/v1/subscriptions/\(id)" && $0.status == 200 }
                    }
                    for _ in 0..<600 where try await !cancelled() { try await Task.sleep(for: .milliseconds(50)) }
                    #expect(try await cancelled(), "the Stripe subscription was not cancelled at deletion")
                    #expect(try await TestApp.withStore(config) { try await $0.stripeSubscriptions(of: ownerID) }.isEmpty)
                case .googlePlay:
                    // Every purchase that may still bill is cancelled at Google as the developer's; the rows go.
                    let tokens = Set([expected[source], secondPlayToken].compactMap { $0 })
                    func cancelled() async throws -> Set<String> {
                        Set(try await play.cancellations().filter {
                            $0["status"] as? Int == 200 && $0["cancellation_type"] as? String == "DEVELOPER_REQUESTED_STOP_PAYMENTS"
                        }.compactMap { $0["token"] as? String })
                    }
                    for _ in 0..<600 where try await cancelled() != tokens { try await Task.sleep(for: .milliseconds(50)) }
                    #expect(try await cancelled() == tokens && tokens.count == 2, "the Google Play purchases were not cancelled at deletion")
                    #expect(try await TestApp.withStore(config) { try await $0.googlePlayPurchases(of: ownerID) }.isEmpty)
                case .grant:
                    #expect(try await TestApp.withStore(config) { try await $0.grants(of: ownerID) }.isEmpty)
                case .trial: continue
                }
            }
            try await StripeTests.noRejections(standIn)
            try await GooglePlayTests.noViolations(play)
        }
    }
}
