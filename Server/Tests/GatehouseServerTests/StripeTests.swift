import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Stripe beside the App Store in one plan ledger (issue 44), against the stand-in that checks
/// every call Gatehouse makes against Stripe's OpenAPI description (`StripeStandIn`), with
/// webhooks signed as Stripe signs them (checked by the `stripe` package before they are sent).
@Suite struct StripeTests {
    static let premium = "price_hannah_premium_monthly"
    static let nutritionist = "price_hannah_nutritionist_monthly"
    static let origin = "https://hannah.example"

    /// Points the server at the stand-in, with `secrets` as the webhook's signing secrets.
    static func configure(_ standIn: StripeStandIn, secrets: [String] = [StripeStandIn.webhookSecret]) -> (inout GatehouseConfig) -> Void {
        let url = URL(string: standIn.url)!
        return { config in
            config.stripe = StripeAPISettings(secretKey: StripeStandIn.secretKey, webhookSecrets: secrets, apiURL: url)
            config.redirectAllowlist = [Self.origin]
        }
    }

    static func deliver(_ client: any TestClientProtocol, _ signed: StripeStandIn.Signed, header: String? = nil) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        headers[HTTPField.Name("Stripe-Signature")!] = header ?? signed.header
        return try await client.execute(uri: "/webhooks/stripe", method: .post, headers: headers, body: ByteBuffer(string: signed.payload))
    }

    /// Makes `type`'s event now, signs it at `clock`'s time and delivers it; expects 200.
    @discardableResult
    static func send(
        _ client: any TestClientProtocol, _ standIn: StripeStandIn, _ type: String, subscription: String? = nil, session: String? = nil,
        at now: Date
    ) async throws -> StripeStandIn.Event {
        let event = try await standIn.event(type, subscription: subscription, session: session)
        let answer = try await deliver(client, try await standIn.sign(event, timestamp: now))
        #expect(answer.status == .ok, "\(type): \(answer.text)")
        return event
    }

    static func checkout(_ api: AuthClient, token: String, price: String = premium) async throws -> TestResponse {
        try await api.post(
            "/v1/purchases/stripe/checkout",
            #"{"price": "\#(price)", "success_url": "\#(origin)/paid", "cancel_url": "\#(origin)/cancelled"}"#, token: token)
    }

    /// Checkout, the customer paying, and `checkout.session.completed`: the subscription's id.
    static func subscribe(
        _ client: any TestClientProtocol, _ standIn: StripeStandIn, token: String, price: String = premium, now: Date, days: Double = 30
    ) async throws -> StripeStandIn.Subscription {
        let session = try await checkout(AuthClient(client: client), token: token, price: price).json(StripeCheckoutResponse.self)
        let subscription = try await standIn.completeCheckout(session.sessionID, periodStart: now, periodEnd: now + days * 86_400)
        try await send(client, standIn, "checkout.session.completed", session: session.sessionID, at: now)
        return subscription
    }

    static func snapshot(_ api: AuthClient, _ token: String) async throws -> EntitlementsPayload {
        try await api.get("/v1/entitlements", token: token).json(EntitlementsPayload.self)
    }

    static func noRejections(_ standIn: StripeStandIn) async throws {
        let rejected = try await standIn.rejections()
        #expect(rejected.isEmpty, "requests Stripe's description does not allow: \(rejected)")
    }

    /// The signature is Stripe's (the `stripe` package accepted each header before it was sent):
    /// a wrong secret, a stale timestamp, a changed byte and a missing header are refused with 400
    /// `invalid_signature` before anything is read; a second configured secret (a roll) is taken.
    @Test(arguments: Backend.available)
    func signatures(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let rolled = "whsec_rolled_secret_for_the_next_key_0123456789"
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: Self.configure(standIn, secrets: [StripeStandIn.webhookSecret, rolled])) {
            client, _ in
            // A subscription made in Stripe for a customer Gatehouse never made: acknowledged.
            let stranger = try await standIn.createSubscription(
                customer: "cus_stranger", price: Self.premium, status: "active", periodStart: clock.now, periodEnd: clock.now + 86_400)
            let event = try await standIn.event("customer.subscription.updated", subscription: stranger.id)
            func refused(_ answer: TestResponse, _ reason: String) {
                #expect(answer.status == .badRequest && answer.error?.code == .invalidSignature, "\(reason): \(answer.text)")
                #expect(answer.error?.message.contains(reason) == true, "\(answer.text)")
            }
            refused(try await Self.deliver(client, try await standIn.sign(event, secret: "whsec_not_one_we_know_0123456789", timestamp: clock.now)),
                    "no signature matches")
            refused(try await Self.deliver(client, try await standIn.sign(event, timestamp: clock.now - 301)), "outside the tolerance")
            refused(try await Self.deliver(client, try await standIn.sign(event, timestamp: clock.now + 301)), "outside the tolerance")
            let good = try await standIn.sign(event, timestamp: clock.now)
            var changed = Array(good.payload.utf8)
            changed[changed.count / 2] ^= 0x01
            refused(try await Self.deliver(client, StripeStandIn.Signed(payload: String(decoding: changed, as: UTF8.self), header: good.header)),
                    "no signature matches")
            let headers: HTTPFields = [.contentType: "application/json"]
            let missing = try await client.execute(uri: "/webhooks/stripe", method: .post, headers: headers, body: ByteBuffer(string: good.payload))
            refused(missing, "no Stripe-Signature header")
            refused(try await Self.deliver(client, good, header: "t=\(Int(clock.now.timeIntervalSince1970))"), "not t=")
            // The good one, then the rolled secret alone, then a header holding both (as Stripe
            // sends while a secret rolls): each taken.
            #expect(try await Self.deliver(client, good).status == .ok)
            #expect(try await Self.deliver(client, try await standIn.sign(event, secret: rolled, timestamp: clock.now)).status == .ok)
            let both = try await standIn.sign(event, secrets: ["whsec_retired_one_0123456789abcdef", rolled], timestamp: clock.now)
            #expect(try await Self.deliver(client, both).status == .ok)
        }
    }

    /// Checkout → `checkout.session.completed` → pro at the price's tier; `past_due` → billing grace;
    /// cancel at period end keeps the plan until the period ends, then the plan is what the
    /// other sources give (Hannah's trial has ended: free and read-only).
    @Test(arguments: Backend.available)
    func checkoutStatesAndCancelAtPeriodEnd(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: Self.configure(standIn)) { client, config in
            let api = AuthClient(client: client)
            let signedIn = try await VerifierTests.signIn(api, config, "web@example.com")
            let token = signedIn.session.accessToken
            // What the contract refuses, before any call to Stripe.
            let unknown = try await Self.checkout(api, token: token, price: "price_not_sold_here")
            #expect(unknown.status == .badRequest && unknown.error?.code == .unknownPrice, "\(unknown.text)")
            let elsewhere = try await api.post(
                "/v1/purchases/stripe/checkout", #"{"price": "\#(Self.premium)", "success_url": "https://evil.example/x", "cancel_url": "\#(Self.origin)/c"}"#,
                token: token)
            #expect(elsewhere.status == .badRequest && elsewhere.error?.code == .invalidRedirect, "\(elsewhere.text)")
            let noCustomer = try await api.post("/v1/purchases/stripe/portal", #"{"return_url": "\#(Self.origin)/settings"}"#, token: token)
            #expect(noCustomer.status == .notFound, "\(noCustomer.text)")

            let subscription = try await Self.subscribe(client, standIn, token: token, now: clock.now)
            #expect(subscription.metadata["gatehouse_user_id"] == signedIn.user.id)
            let requests = try await standIn.requests()
            let customer = try #require(requests.first { $0.path == "/v1/customers" })
            #expect(customer.idempotencyKey == "gatehouse-customer-\(signedIn.user.id)" && customer.form["metadata[gatehouse_user_id]"] == signedIn.user.id)
            let session = try #require(requests.first { $0.path == "/v1/checkout/sessions" })
            #expect(session.form["mode"] == "subscription" && session.form["client_reference_id"] == signedIn.user.id)
            #expect(session.form["line_items[0][price]"] == Self.premium && session.form["success_url"] == "\(Self.origin)/paid")
            #expect(requests.allSatisfy { $0.stripeVersion == StripeStandIn.apiVersion })
            var paid = try await Self.snapshot(api, token)
            #expect(paid.planState == "pro" && paid.tier == "premium" && !paid.readOnly, "\(paid)")
            #expect(paid.subscription?.source == "stripe" && paid.subscription?.productID == Self.premium && paid.subscription?.status == "active")
            #expect(paid.sources?.map(\.source) == ["stripe"])
            let portal = try await api.post("/v1/purchases/stripe/portal", #"{"return_url": "\#(Self.origin)/settings"}"#, token: token)
            #expect(portal.status == .ok, "\(portal.text)")
            #expect(try portal.json(StripePortalResponse.self).url.contains("/portal/"))
            let feed = try await client.execute(uri: "/admin/v1/events", method: .get, headers: TestApp.adminHeaders).json(EventList.self).events
            let purchase = try #require(feed.first { $0.type == "purchase.succeeded" && $0.userID == signedIn.user.id })
            // The one shape every source records (issue 59).
            #expect(purchase.data == ["source": "stripe", "kind": "purchase", "product_id": Self.premium, "purchase_id": subscription.id], "\(purchase.data)")

            // A failed renewal: billing grace, pro as the App Store's is (decision 17); the plan did
            // not change, so no plan.changed.
            _ = try await standIn.updateSubscription(subscription.id, status: "past_due")
            try await Self.send(client, standIn, "invoice.payment_failed", subscription: subscription.id, at: clock.now)
            paid = try await Self.snapshot(api, token)
            #expect(paid.planState == "pro" && paid.subscription?.status == "billing_grace", "\(paid)")
            let changed = try await client.execute(uri: "/admin/v1/events", method: .get, headers: TestApp.adminHeaders).json(EventList.self).events
            #expect(!changed.contains { $0.type == "plan.changed" && $0.userID == signedIn.user.id && $0.data["to"] != "pro" }, "\(changed)")

            // Paid again, then cancelled in the portal at the period's end: still pro until then.
            _ = try await standIn.updateSubscription(subscription.id, status: "active", cancelAtPeriodEnd: true)
            try await Self.send(client, standIn, "customer.subscription.updated", subscription: subscription.id, at: clock.now)
            paid = try await Self.snapshot(api, token)
            #expect(paid.planState == "pro" && paid.subscription?.willRenew == false && paid.subscription?.renewsAt == nil, "\(paid)")
            let refreshed = try await api.refresh(signedIn.session.refreshToken).json(SessionResponse.self).session
            let end = Int(subscription.periodEnd.timeIntervalSince1970)
            #expect(try jwtParts(refreshed.accessToken).claims["plan_expires_at"] as? Int == end)
            // A month on, the app refreshing its session every few days.
            var late = refreshed
            for _ in 0..<6 {
                clock.advance(by: 5 * 86_400 + 10)
                late = try await api.refresh(late.refreshToken).json(SessionResponse.self).session
            }
            let lapsed = try await Self.snapshot(api, late.accessToken)
            #expect(lapsed.planState == "free" && lapsed.readOnly && lapsed.sources == [], "\(lapsed)")
            try await Self.noRejections(standIn)
        }
    }

    /// One ledger: an App Store subscription and a Stripe one on the same account; ending either
    /// keeps the other (and its tier), and a grant over a lapsed subscription gives the plan back.
    @Test(arguments: Backend.available)
    func appStoreAndStripeSideBySide(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let apple = try FakeAppStore()
        let clock = ManualClock(Date())
        let adjust = Self.configure(standIn)
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: { adjust(&$0); TestApp.trusting(apple)(&$0) }) { client, config in
            let api = AuthClient(client: client)
            // Stripe ends, the App Store keeps the plan at its tier.
            let ann = try await VerifierTests.signIn(api, config, "ann@example.com")
            let annToken = ann.session.accessToken
            let jws = try apple.sign(
                FakeAppStore.transaction(
                    id: "a1", original: "orig-a1", product: "com.hannahhealth.premium.monthly", user: ann.user.id, purchased: clock.now,
                    expires: clock.now + 30 * 86_400, signed: clock.now))
            #expect(try await AppStoreTests.purchase(api, jws, token: annToken).status == .ok)
            let annStripe = try await Self.subscribe(client, standIn, token: annToken, price: Self.nutritionist, now: clock.now)
            var both = try await Self.snapshot(api, annToken)
            #expect(both.planState == "pro" && both.tier == "nutritionist" && both.subscription?.source == "stripe", "\(both)")
            #expect(Set(both.sources?.compactMap(\.source) ?? []) == ["app_store", "stripe"])
            _ = try await standIn.updateSubscription(annStripe.id, status: "canceled")
            try await Self.send(client, standIn, "customer.subscription.deleted", subscription: annStripe.id, at: clock.now)
            both = try await Self.snapshot(api, annToken)
            #expect(both.planState == "pro" && both.tier == "premium" && both.subscription?.source == "app_store", "\(both)")
            #expect(both.sources?.map(\.source) == ["app_store"])

            // The App Store's subscription ends by the clock, Stripe's keeps the plan.
            let bob = try await VerifierTests.signIn(api, config, "bob@example.com")
            let bobJWS = try apple.sign(
                FakeAppStore.transaction(
                    id: "b1", original: "orig-b1", product: "com.hannahhealth.premium.monthly", user: bob.user.id, purchased: clock.now,
                    expires: clock.now + 10 * 86_400, signed: clock.now))
            #expect(try await AppStoreTests.purchase(api, bobJWS, token: bob.session.accessToken).status == .ok)
            let bobStripe = try await Self.subscribe(client, standIn, token: bob.session.accessToken, now: clock.now, days: 30)
            clock.advance(by: 14 * 86_400)
            let bobToken = try await api.refresh(bob.session.refreshToken).json(SessionResponse.self).session
            let kept = try await Self.snapshot(api, bobToken.accessToken)
            #expect(kept.planState == "pro" && kept.subscription?.source == "stripe" && kept.sources?.map(\.source) == ["stripe"], "\(kept)")
            #expect(try jwtParts(bobToken.accessToken).claims["plan_expires_at"] as? Int
                == Int(bobStripe.periodEnd.timeIntervalSince1970) + 72 * 3600)

            // Bob's Stripe subscription lapses (unpaid): free, then an operator's grant gives the
            // plan back at a tier until a date; revoking it ends only the grant.
            _ = try await standIn.updateSubscription(bobStripe.id, status: "unpaid")
            try await Self.send(client, standIn, "customer.subscription.updated", subscription: bobStripe.id, at: clock.now)
            #expect(try await Self.snapshot(api, bobToken.accessToken).planState == "free")
            let until = (clock.now + 10 * 86_400).rfc3339
            let made = try await client.execute(
                uri: "/admin/v1/users/\(bob.user.id)/grants", method: .post, headers: TestApp.adminHeaders,
                body: jsonBody(#"{"plan": "pro", "tier": "nutritionist", "until": "\#(until)", "reason": "Support: billing mix-up"}"#))
            #expect(made.status == .created, "\(made.text)")
            let grant = try made.json(GrantResponse.self).grant
            #expect(grant.tier == "nutritionist" && grant.until == until && grant.reason == "Support: billing mix-up" && grant.revokedAt == nil)
            let granted = try await Self.snapshot(api, bobToken.accessToken)
            #expect(granted.planState == "pro" && granted.tier == "nutritionist" && granted.subscription?.source == "grant", "\(granted)")
            for bad in [#"{"plan": "trial", "until": "\#(until)", "reason": "x"}"#, #"{"tier": "gold", "until": "\#(until)", "reason": "x"}"#,
                        #"{"until": "2001-01-01T00:00:00Z", "reason": "x"}"#, #"{"until": "\#(until)", "reason": " "}"#] {
                let refused = try await client.execute(uri: "/admin/v1/users/\(bob.user.id)/grants", method: .post, headers: TestApp.adminHeaders, body: jsonBody(bad))
                #expect(refused.status == .badRequest && refused.error?.code == .invalidRequest, "\(bad): \(refused.text)")
            }
            let revoke = try await client.execute(uri: "/admin/v1/users/\(bob.user.id)/grants/\(grant.id)", method: .delete, headers: TestApp.adminHeaders)
            #expect(revoke.status == .noContent)
            let again = try await client.execute(uri: "/admin/v1/users/\(bob.user.id)/grants/\(grant.id)", method: .delete, headers: TestApp.adminHeaders)
            #expect(again.status == .notFound)
            let listed = try await client.execute(uri: "/admin/v1/users/\(bob.user.id)/grants", method: .get, headers: TestApp.adminHeaders).json(GrantList.self)
            #expect(listed.grants.count == 1 && listed.grants[0].revokedAt != nil)
            #expect(try await Self.snapshot(api, bobToken.accessToken).planState == "free")
            let audit = try await client.execute(uri: "/admin/v1/audit?user_id=\(bob.user.id)", method: .get, headers: TestApp.adminHeaders).text
            #expect(audit.contains("grant_created") && audit.contains("grant_revoked"))
            // The export carries every row of the ledger.
            let export = try await api.get("/v1/me/export", token: bobToken.accessToken).json(AccountExport.self)
            #expect(export.subscriptions.count == 1 && export.stripeSubscriptions.map(\.status) == ["unpaid"])
            #expect(export.planGrants.map(\.id) == [grant.id] && export.stripeCustomers.count == 1)
            try await Self.noRejections(standIn)
        }
    }

    /// A subscription bought on the web while anonymous stays with the person when the anonymous
    /// account is merged into the one they sign in to (every source of the ledger moves), and
    /// Stripe's later events still reach it.
    @Test(arguments: Backend.available)
    func aWebPurchaseMadeAnonymouslySurvivesTheMerge(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let clock = ManualClock(Date())
        let stripe = Self.configure(standIn)
        try await TestApp.run(backend, clock: clock, adjust: {
            stripe(&$0)
            $0.preset.stripe.prices = [Self.premium: ProductSettings(plan: .pro, tier: "premium")]
        }) { client, _ in
            let api = AuthClient(client: client)
            let owner = try await api.account("kept@example.com")
            let guest = try await AccountTests.anonymous(api)
            let subscription = try await Self.subscribe(client, standIn, token: guest.session.accessToken, now: clock.now)
            #expect(try await Self.snapshot(api, guest.session.accessToken).planState == "pro")
            let taken = try await api.post(
                "/v1/auth/identities/email", AuthClient.credentials("kept@example.com", "correct horse battery"), token: guest.session.accessToken)
            let mergeToken = try #require(taken.error?.details?["merge_token"].flatMap { if case .string(let t) = $0 { t } else { nil } })
            #expect(try await Self.snapshot(api, owner.session.accessToken).planState == "free")
            #expect(try await api.post("/v1/auth/merge", #"{"merge_token": "\#(mergeToken)"}"#, token: owner.session.accessToken).status == .ok)
            var kept = try await Self.snapshot(api, owner.session.accessToken)
            #expect(kept.planState == "pro" && kept.subscription?.source == "stripe", "\(kept)")
            // Stripe's next event for that subscription still reaches the account kept.
            _ = try await standIn.updateSubscription(subscription.id, status: "past_due")
            try await Self.send(client, standIn, "customer.subscription.updated", subscription: subscription.id, at: clock.now)
            kept = try await Self.snapshot(api, owner.session.accessToken)
            #expect(kept.planState == "pro" && kept.subscription?.status == "billing_grace", "\(kept)")
            // The customer came along: the portal opens for the account kept.
            let portal = try await api.post("/v1/purchases/stripe/portal", #"{"return_url": "\#(Self.origin)/settings"}"#, token: owner.session.accessToken)
            #expect(portal.status == .ok, "\(portal.text)")
            try await Self.noRejections(standIn)
        }
    }
}
