import Crypto
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

/// Issue 59's findings against the Stripe stand-in, each as it was found, on both databases.
@Suite struct StripeFindingsTests {
    /// Finding 1: an anonymous payer merged into an account that has a customer of its own kept
    /// the subscription but lost its customer: the portal could not reach the subscription, and
    /// deleting the account did not cancel it (it kept billing). Every customer now comes along.
    @Test(arguments: Backend.available)
    func aMergedPayersCustomerComesAlongAndIsCancelledAtDeletion(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let clock = ManualClock(Date())
        let stripe = StripeTests.configure(standIn)
        try await TestApp.run(backend, clock: clock, adjust: {
            stripe(&$0)
            $0.preset.stripe.prices = [StripeTests.premium: ProductSettings(plan: .pro, tier: "premium")]
        }) { client, _ in
            let api = AuthClient(client: client)
            let owner = try await api.account("owner.59@example.com")
            // The owner's own customer: a checkout it never paid.
            #expect(try await StripeTests.checkout(api, token: owner.session.accessToken).status == .ok)
            let guest = try await AccountTests.anonymous(api)
            let subscription = try await StripeTests.subscribe(client, standIn, token: guest.session.accessToken, now: clock.now)
            let taken = try await api.post(
                "/v1/auth/identities/email", AuthClient.credentials("owner.59@example.com", "correct horse battery"), token: guest.session.accessToken)
            let mergeToken = try #require(taken.error?.details?["merge_token"].flatMap { if case .string(let t) = $0 { t } else { nil } })
            #expect(try await api.post("/v1/auth/merge", #"{"merge_token": "\#(mergeToken)"}"#, token: owner.session.accessToken).status == .ok)
            let export = try await api.get("/v1/me/export", token: owner.session.accessToken).json(AccountExport.self)
            #expect(export.stripeCustomers.count == 2 && export.stripeCustomers.contains(subscription.customer), "\(export.stripeCustomers)")
            // The portal opens for the customer whose subscription runs.
            let portal = try await api.post("/v1/purchases/stripe/portal", #"{"return_url": "\#(StripeTests.origin)/settings"}"#, token: owner.session.accessToken)
            #expect(portal.status == .ok, "\(portal.text)")
            let opened = try #require(try await standIn.requests().last { $0.path == "/v1/billing_portal/sessions" })
            #expect(opened.form["customer"] == subscription.customer)
            // Deleting the account cancels the merged customer's subscription at Stripe.
            let deleted = try await client.execute(uri: "/admin/v1/users/\(owner.user.id)", method: .delete, headers: TestApp.adminHeaders)
            #expect(deleted.status == .noContent)
            func cancelled() async throws -> Bool {
                try await standIn.requests().contains { $0.method == "DELETE" && $0.path == "/v1/subscriptions/\(subscription.id)" && $0.status == 200 }
            }
            for _ in 0..<600 where try await !cancelled() { try await Task.sleep(for: .milliseconds(50)) }
            #expect(try await cancelled(), "the merged customer's subscription was not cancelled")
            try await StripeTests.noRejections(standIn)
        }
    }

    /// Finding 2: Stripe keeps a 500 that happened once a request began under its idempotency key
    /// and replays it for 24 hours, longer than the cancel job retries. The stand-in stores the
    /// first DELETE's 500 under its key: the job's next attempt re-reads the subscription (still
    /// active) and cancels under its own key; a first customer creation that got a stored 500
    /// does not make every later checkout fail.
    @Test(arguments: Backend.available)
    func aFailureStripeKeepsUnderItsKeyIsNotAllARetryGets(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: StripeTests.configure(standIn)) { client, config in
            let api = AuthClient(client: client)
            // The customer: the first checkout's creation fails, and Stripe keeps that 500.
            let payer = try await VerifierTests.signIn(api, config, "payer.59@example.com")
            try await standIn.failNext(method: "POST", pathPrefix: "/v1/customers", count: 1, stored: true)
            let first = try await StripeTests.checkout(api, token: payer.session.accessToken)
            #expect(first.status == .serviceUnavailable && first.error?.code == .providerUnavailable, "\(first.text)")
            let second = try await StripeTests.checkout(api, token: payer.session.accessToken)
            #expect(second.status == .ok, "\(second.text)")
            let made = try await standIn.requests().filter { $0.method == "POST" && $0.path == "/v1/customers" }
            let key = "gatehouse-customer-\(payer.user.id)"
            #expect(made.map(\.idempotencyKey) == [key, key + "-r1"] && made.map(\.replayed) == [true, false], "\(made)")

            // The cancel at deletion: its first DELETE gets a 500 Stripe keeps.
            let leaving = try await VerifierTests.signIn(api, config, "leaving.59@example.com")
            let subscription = try await StripeTests.subscribe(client, standIn, token: leaving.session.accessToken, now: clock.now)
            try await standIn.failNext(method: "DELETE", pathPrefix: "/v1/subscriptions/", count: 1, stored: true)
            let deleted = try await client.execute(uri: "/admin/v1/users/\(leaving.user.id)", method: .delete, headers: TestApp.adminHeaders)
            #expect(deleted.status == .noContent)
            for _ in 0..<600 where try await standIn.failures() < 2 { try await Task.sleep(for: .milliseconds(50)) }
            #expect(try await standIn.failures() == 2, "the cancel's first attempt did not reach Stripe")
            clock.advance(by: 3_600)
            func cancelled() async throws -> [StripeStandIn.APIRequest] {
                try await standIn.requests().filter { $0.method == "DELETE" && $0.status == 200 }
            }
            for _ in 0..<600 where try await cancelled().isEmpty { try await Task.sleep(for: .milliseconds(50)) }
            let cancel = try #require(try await cancelled().first)
            #expect(cancel.path == "/v1/subscriptions/\(subscription.id)" && cancel.idempotencyKey == "gatehouse-cancel-\(subscription.id)-a1")
            try await StripeTests.noRejections(standIn)
        }
    }

    /// Finding 3: `past_due` gave the paid plan for the whole unpaid period, and again each cycle
    /// Stripe kept it past due. Billing grace is now `pro` (as the App Store's, decision 17) for the
    /// preset's `stripe.billing_grace_days` from when it went past due, once per streak: a second
    /// past-due cycle gives nothing more; paid again, it is pro again.
    @Test(arguments: Backend.available)
    func pastDueGivesBillingGraceOnceAndNotTheWholePeriod(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let clock = ManualClock(Date())
        let day: TimeInterval = 86_400
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: {
            StripeTests.configure(standIn)(&$0)
            $0.preset.stripe.billingGraceDays = 10
        }) { client, config in
            let api = AuthClient(client: client)
            let payer = try await VerifierTests.signIn(api, config, "pastdue.59@example.com")
            let start = clock.now
            let subscription = try await StripeTests.subscribe(client, standIn, token: payer.session.accessToken, now: start)
            // The renewal at day 30 fails: Stripe opens the next period and marks it past due.
            clock.advance(by: 25 * day)
            var session = try await api.refresh(payer.session.refreshToken).json(SessionResponse.self).session
            clock.advance(by: 5 * day + 3_600)
            _ = try await standIn.updateSubscription(subscription.id, status: "past_due", periodStart: start + 30 * day, periodEnd: start + 60 * day)
            try await StripeTests.send(client, standIn, "invoice.payment_failed", subscription: subscription.id, at: clock.now)
            session = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
            var snapshot = try await StripeTests.snapshot(api, session.accessToken)
            #expect(snapshot.planState == "pro" && snapshot.tier == "premium" && snapshot.subscription?.status == "billing_grace", "\(snapshot)")
            #expect(try jwtParts(session.accessToken).claims["plan_expires_at"] as? Int == Int((start + 40 * day).timeIntervalSince1970))
            // Ten days on, the unpaid period still runs: grace is over.
            clock.advance(by: 10 * day)
            session = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
            snapshot = try await StripeTests.snapshot(api, session.accessToken)
            #expect(snapshot.planState == "free" && snapshot.readOnly, "\(snapshot)")
            // Stripe keeps it past due into the next period: no grace again.
            clock.advance(by: 20 * day)
            session = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
            _ = try await standIn.updateSubscription(subscription.id, status: "past_due", periodStart: start + 60 * day, periodEnd: start + 90 * day)
            try await StripeTests.send(client, standIn, "customer.subscription.updated", subscription: subscription.id, at: clock.now)
            session = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
            snapshot = try await StripeTests.snapshot(api, session.accessToken)
            #expect(snapshot.planState == "free", "\(snapshot)")
            // The card is fixed: paid, pro again; a later failure starts a grace of its own.
            _ = try await standIn.updateSubscription(subscription.id, status: "active")
            try await StripeTests.send(client, standIn, "invoice.paid", subscription: subscription.id, at: clock.now)
            #expect(try await StripeTests.snapshot(api, session.accessToken).planState == "pro")
            clock.advance(by: 25 * day)
            session = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
            clock.advance(by: 5 * day)
            _ = try await standIn.updateSubscription(subscription.id, status: "past_due", periodStart: start + 90 * day, periodEnd: start + 120 * day)
            try await StripeTests.send(client, standIn, "invoice.payment_failed", subscription: subscription.id, at: clock.now)
            session = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
            snapshot = try await StripeTests.snapshot(api, session.accessToken)
            #expect(snapshot.planState == "pro" && snapshot.subscription?.status == "billing_grace", "\(snapshot)")
            try await StripeTests.noRejections(standIn)
        }
    }

    /// Finding 4: a genuine event can be larger than the API's 64 KiB (a subscription of many
    /// items, each with its price): Stripe's route takes it, its signature still checked first.
    @Test(arguments: Backend.available)
    func aLargeGenuineEventIsApplied(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: StripeTests.configure(standIn)) { client, config in
            let api = AuthClient(client: client)
            let payer = try await VerifierTests.signIn(api, config, "large.59@example.com")
            let subscription = try await StripeTests.subscribe(client, standIn, token: payer.session.accessToken, now: clock.now)
            #expect(try await StripeTests.snapshot(api, payer.session.accessToken).planState == "pro")
            _ = try await standIn.updateSubscription(subscription.id, status: "canceled")
            let event = try await standIn.event("customer.subscription.deleted", subscription: subscription.id)
            // The event for a subscription of many items, signed with the secret. The stand-in's
            // items are trimmed; Stripe's carry the whole price and plan (about 3 KB each), so
            // its own events pass 64 KiB with fewer.
            var object = try #require(try JSONSerialization.jsonObject(with: Data(event.payload.utf8)) as? [String: Any])
            var data = try #require(object["data"] as? [String: Any])
            var subscriptionObject = try #require(data["object"] as? [String: Any])
            var items = try #require(subscriptionObject["items"] as? [String: Any])
            let item = try #require((items["data"] as? [[String: Any]])?.first)
            items["data"] = Array(repeating: item, count: 100)
            subscriptionObject["items"] = items
            data["object"] = subscriptionObject
            object["data"] = data
            let body = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
            #expect(body.utf8.count > 65_536, "\(body.utf8.count) bytes")
            let timestamp = Int(clock.now.timeIntervalSince1970)
            let mac = StripeService.hmac(Array(StripeStandIn.webhookSecret.utf8), Array("\(timestamp).\(body)".utf8))
            let signed = StripeStandIn.Signed(payload: body, header: "t=\(timestamp),v1=\(mac.map { String(format: "%02x", $0) }.joined())")
            let forged = StripeStandIn.Signed(payload: body, header: "t=\(timestamp),v1=\(String(repeating: "0", count: 64))")
            let refused = try await StripeTests.deliver(client, forged)
            #expect(refused.status == .badRequest && refused.error?.code == .invalidSignature, "\(refused.text)")
            let answer = try await StripeTests.deliver(client, signed)
            #expect(answer.status == .ok, "\(answer.status): \(answer.text.prefix(200))")
            // Stripe's right has ended (Hannah's sign-up trial, still running, is all that is left).
            let after = try await StripeTests.snapshot(api, payer.session.accessToken)
            #expect(after.subscription?.source != "stripe" && !(after.sources ?? []).contains { $0.source == "stripe" }, "\(after)")
            // Other routes keep the configured limit.
            let big = String(repeating: "x", count: 70_000)
            let other = try await api.post("/v1/auth/login", #"{"email": "\#(big)@example.com", "password": "x"}"#)
            #expect(other.status == .contentTooLarge && other.error?.code == .payloadTooLarge, "\(other.status)")
            try await StripeTests.noRejections(standIn)
        }
    }

    /// Finding 6: a second checkout while the account's web subscription runs would bill twice:
    /// 409 `already_subscribed`; once it has ended, a checkout opens again.
    @Test(arguments: Backend.available)
    func aSecondCheckoutWhileOneRunsIsRefused(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: StripeTests.configure(standIn)) { client, config in
            let api = AuthClient(client: client)
            let payer = try await VerifierTests.signIn(api, config, "twice.59@example.com")
            let token = payer.session.accessToken
            let subscription = try await StripeTests.subscribe(client, standIn, token: token, now: clock.now)
            for status in ["active", "past_due", "unpaid"] {
                _ = try await standIn.updateSubscription(subscription.id, status: status)
                try await StripeTests.send(client, standIn, "customer.subscription.updated", subscription: subscription.id, at: clock.now)
                let again = try await StripeTests.checkout(api, token: token, price: StripeTests.nutritionist)
                #expect(again.status == .conflict && again.error?.code == .alreadySubscribed, "\(status): \(again.text)")
            }
            _ = try await standIn.updateSubscription(subscription.id, status: "canceled")
            try await StripeTests.send(client, standIn, "customer.subscription.deleted", subscription: subscription.id, at: clock.now)
            #expect(try await StripeTests.checkout(api, token: token, price: StripeTests.nutritionist).status == .ok)
            try await StripeTests.noRejections(standIn)
        }
    }

    /// Finding 7: a grant until year 10000 was stored and listed as `0000-01-01` (it never ends but
    /// looks expired), and a NUL byte in a reason was stored. Both are refused, nothing stored.
    @Test(arguments: Backend.available)
    func aGrantThatCannotBeShownAsItIsIsRefused(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "hannah") { client, config in
            let api = AuthClient(client: client)
            let bob = try await VerifierTests.signIn(api, config, "bob.59@example.com")
            let uri = "/admin/v1/users/\(bob.user.id)/grants"
            for body in [
                #"{"plan": "pro", "until": "10000-01-01T00:00:00Z", "reason": "forever"}"#,
                #"{"plan": "pro", "until": "+12026-01-01T00:00:00Z", "reason": "forever"}"#,
                #"{"plan": "pro", "until": "2030-01-01T00:00:00Z", "reason": "before\u0000after"}"#,
                #"{"plan": "pro", "until": "2030-01-01T00:00:00Z", "reason": "two\nlines"}"#,
            ] {
                let refused = try await client.execute(uri: uri, method: .post, headers: TestApp.adminHeaders, body: jsonBody(body))
                #expect(refused.status == .badRequest && refused.error?.code == .invalidRequest, "\(body): \(refused.text)")
            }
            let listed = try await client.execute(uri: uri, method: .get, headers: TestApp.adminHeaders).json(GrantList.self)
            #expect(listed.grants.isEmpty)
            let farthest = try await client.execute(
                uri: uri, method: .post, headers: TestApp.adminHeaders, body: jsonBody(#"{"plan": "pro", "until": "9999-12-31T23:59:59Z", "reason": "long"}"#))
            #expect(farthest.status == .created, "\(farthest.text)")
            let until = try farthest.json(GrantResponse.self).grant.until
            #expect(until == "9999-12-31T23:59:59Z")
        }
    }
}

/// Finding 5: the stale-account cleanup deleted an anonymous account that was paying (and its
/// deletion cancelled the subscription). Walked source by source (`LedgerRows` walks
/// `PlanSource.allCases`): an account holding a live right of any paid source stays; one whose
/// right has ended, or that has only the server trial, goes.
@Suite struct CleanupSparesPaidRightsTests {
    @Test(arguments: Backend.available)
    func anAccountWithALiveRightIsNeverStale(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let clock = ManualClock(Date())
            let jobs = JobWorker(store: store, sealer: SecretSealer(secret: nil), clock: clock, logger: TestApp.quietLogger, handlers: [:])
            let events = EventRecorder(jobs: jobs, webhookConfigured: false, clock: clock)
            var kept: [UserID] = []
            var gone: [UserID] = []
            func anonymous() async throws -> UserID {
                let user = User(id: .random(), isAnonymous: true, createdAt: clock.now)
                try await store.insertUser(user)
                return user.id
            }
            let later = clock.now.addingTimeInterval(60 * 86_400)
            let earlier = clock.now.addingTimeInterval(10 * 86_400)
            for source in PlanSource.allCases {
                let (live, ended) = (try await anonymous(), try await anonymous())
                switch source {
                case .appStore:
                    for (id, expiry) in [(live, later), (ended, earlier)] {
                        _ = try await store.saveSubscription(
                            SubscriptionRecord(
                                originalTransactionID: "orig-\(id)", userID: id, productID: "com.hannahhealth.premium.monthly", environment: "Sandbox",
                                status: .active, expiresAt: expiry, willRenew: true, introductory: false, signedAt: clock.now, updatedAt: clock.now))
                    }
                    (kept, gone) = (kept + [live], gone + [ended])
                case .stripe:
                    for (id, status) in [(live, "unpaid"), (ended, "canceled")] {
                        _ = try await store.saveStripeSubscription(
                            StripeSubscriptionRecord(
                                subscriptionID: "sub_\(id)", customerID: "cus_\(id)", userID: id, priceID: "price_hannah_premium_monthly", status: status,
                                currentPeriodEnd: earlier, cancelAtPeriodEnd: false, trialEnd: nil, readAt: clock.now, updatedAt: clock.now))
                    }
                    (kept, gone) = (kept + [live], gone + [ended])
                case .googlePlay:
                    // On hold: no right now, but Google may still bill; expired: nothing.
                    for (id, state) in [(live, GooglePlaySubscriptionRecord.State.onHold), (ended, .expired)] {
                        try await store.saveGooglePlayPurchase(
                            GooglePlaySubscriptionRecord(
                                purchaseToken: "play-\(id)", userID: id, productID: "premium_monthly", state: state, expiresAt: earlier,
                                linkedPurchaseToken: nil, obfuscatedAccountID: id.description, acknowledged: true, testPurchase: false, readAt: clock.now))
                    }
                    (kept, gone) = (kept + [live], gone + [ended])
                case .grant:
                    for (id, until) in [(live, later), (ended, earlier)] {
                        try await store.insertGrant(PlanGrant(userID: id, tier: nil, startsAt: clock.now, until: until, reason: "test", createdBy: "test"))
                    }
                    (kept, gone) = (kept + [live], gone + [ended])
                case .trial:
                    // The server trial is not bought: it keeps nobody.
                    for id in [live, ended] { _ = try await store.startTrial(id, at: clock.now.addingTimeInterval(25 * 86_400)) }
                    gone += [live, ended]
                }
            }
            clock.advance(by: 31 * 86_400)
            let unitOfWork = UnitOfWork(
                store: store, narrow: { $0 as AccountCleanup.Stores }, events: events, mail: nil, jobs: jobs, privacy: PrivacySettings(), clock: clock)
            let cleanup = AccountCleanup(
                store: store, unitOfWork: unitOfWork, lifecycle: AccountLifecycle(handles: HandleSettings()),
                rules: [.inactiveAnonymous(days: 30)], grace: LedgerGrace(proGraceHours: 72), clock: clock, logger: TestApp.quietLogger)
            #expect(await cleanup.sweep() == gone.count)
            for id in kept { #expect(try await store.user(id: id) != nil, "\(id) holds a live right and was removed") }
            for id in gone { #expect(try await store.user(id: id) == nil, "\(id) has no live right and stayed") }
            // Spared accounts are not listed again and again: a second sweep removes nothing and ends.
            #expect(await cleanup.sweep() == 0)
        }
    }
}
