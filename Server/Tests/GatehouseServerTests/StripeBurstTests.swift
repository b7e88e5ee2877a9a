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

/// What Stripe's webhook and checkout must survive: bursts, redelivery, events out of order, and
/// an account deleted while a subscription runs (issue 44).
@Suite struct StripeBurstTests {
    /// 20 deliveries of one event released together: all acknowledged, applied once.
    @Test(arguments: Backend.available)
    func oneEventTwentyTimesAtOnce(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        try await TestApp.run(backend, preset: "hannah", setup: .live, adjust: StripeTests.configure(standIn)) { client, config in
            let api = AuthClient(client: client)
            let signedIn = try await VerifierTests.signIn(api, config, "burst@example.com")
            let session = try await StripeTests.checkout(api, token: signedIn.session.accessToken).json(StripeCheckoutResponse.self)
            _ = try await standIn.completeCheckout(session.sessionID, periodStart: Date(), periodEnd: Date() + 30 * 86_400)
            let event = try await standIn.event("checkout.session.completed", session: session.sessionID)
            let signed = try await standIn.sign(event)
            let request = LastByteRace.request("POST", "/webhooks/stripe", json: signed.payload, headers: ["Stripe-Signature": signed.header])
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(client.port), request, copies: 20) }
            #expect(answers.map(\.status) == Array(repeating: 200, count: 20), "\(answers.map(\.status))")
            let feed = try await client.execute(uri: "/admin/v1/events", method: .get, headers: TestApp.adminHeaders).json(EventList.self).events
            #expect(feed.filter { $0.type == "purchase.succeeded" && $0.userID == signedIn.user.id }.count == 1)
            #expect(feed.filter { $0.type == "plan.changed" && $0.userID == signedIn.user.id }.count == 1)
            #expect(try await StripeTests.snapshot(api, signedIn.session.accessToken).planState == "pro")
            try await StripeTests.noRejections(standIn)
        }
    }

    /// Events delivered newest first: whatever arrives last, the stored state is Stripe's current
    /// one (a late `created` or `updated` never undoes the `deleted`).
    @Test(arguments: Backend.available)
    func eventsInReverseOrder(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: StripeTests.configure(standIn)) { client, config in
            let api = AuthClient(client: client)
            let signedIn = try await VerifierTests.signIn(api, config, "order@example.com")
            let session = try await StripeTests.checkout(api, token: signedIn.session.accessToken).json(StripeCheckoutResponse.self)
            let subscription = try await standIn.completeCheckout(session.sessionID, periodStart: clock.now, periodEnd: clock.now + 30 * 86_400)
            var events = [try await standIn.event("customer.subscription.created", subscription: subscription.id)]
            events.append(try await standIn.event("checkout.session.completed", session: session.sessionID))
            _ = try await standIn.updateSubscription(subscription.id, status: "past_due")
            events.append(try await standIn.event("customer.subscription.updated", subscription: subscription.id))
            _ = try await standIn.updateSubscription(subscription.id, status: "canceled")
            events.append(try await standIn.event("customer.subscription.deleted", subscription: subscription.id))
            for event in events.reversed() {
                #expect(try await StripeTests.deliver(client, try await standIn.sign(event, timestamp: clock.now)).status == .ok)
            }
            let snapshot = try await StripeTests.snapshot(api, signedIn.session.accessToken)
            #expect(snapshot.planState == "trial" && snapshot.sources == [], "\(snapshot)")
            let stored = try await TestApp.withStore(config) { try await $0.stripeSubscriptions(of: UserID(signedIn.user.id)!) }
            #expect(stored.map(\.status) == ["canceled"])
            try await StripeTests.noRejections(standIn)
        }
    }

    /// 10 first checkouts of one account released together: one Stripe customer, stored once.
    @Test(arguments: Backend.available)
    func tenCheckoutsOneCustomer(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        try await TestApp.run(backend, preset: "hannah", setup: .live, adjust: StripeTests.configure(standIn)) { client, config in
            let api = AuthClient(client: client)
            let signedIn = try await VerifierTests.signIn(api, config, "ten@example.com")
            let body = #"{"price": "\#(StripeTests.premium)", "success_url": "\#(StripeTests.origin)/ok", "cancel_url": "\#(StripeTests.origin)/no"}"#
            let request = LastByteRace.request(
                "POST", "/v1/purchases/stripe/checkout", json: body, headers: ["Authorization": "Bearer \(signedIn.session.accessToken)"])
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(client.port), request, copies: 10) }
            #expect(answers.map(\.status) == Array(repeating: 200, count: 10), "\(answers.map { String(decoding: $0.body, as: UTF8.self) })")
            let sessions = try await standIn.requests().filter { $0.path == "/v1/checkout/sessions" && $0.status == 200 }
            #expect(sessions.count == 10 && Set(sessions.compactMap { $0.form["customer"] }).count == 1)
            let customers = try await standIn.requests().filter { $0.path == "/v1/customers" && $0.status == 200 }
            #expect(Set(customers.map(\.idempotencyKey)) == ["gatehouse-customer-\(signedIn.user.id)"])
            let stored = try await TestApp.withStore(config) { try await $0.stripeCustomer(of: UserID(signedIn.user.id)!) }
            #expect(stored == sessions.first?.form["customer"])
            try await StripeTests.noRejections(standIn)
        }
    }

    /// Deleting an account cancels its Stripe subscription at Stripe, by a job that outlives the
    /// account: while Stripe fails, the job waits; after a restart of the server on the same
    /// database, the cancel reaches Stripe.
    @Test(arguments: Backend.available)
    func deletionCancelsAtStripeAcrossARestart(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let (url, cleanup) = try await TestDatabase.make(backend)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-stripe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var config = try TestApp.config(url, preset: "hannah", directory: directory)
        StripeTests.configure(standIn)(&config)
        let frozen = config
        let clock = ManualClock(Date())
        do {
            let first = try await buildApplication(config: frozen, dependencies: AppDependencies(clock: clock, logger: TestApp.quietLogger))
            let subscriptionID = try await first.test(.router) { client -> String in
                let api = AuthClient(client: client)
                let signedIn = try await VerifierTests.signIn(api, frozen, "leaving@example.com")
                let id = try await StripeTests.subscribe(client, standIn, token: signedIn.session.accessToken, now: clock.now).id
                // Stripe is down for the cancel's first attempts.
                try await standIn.failNext(method: "GET", pathPrefix: "/v1/subscriptions", count: 1)
                let deleted = try await client.execute(uri: "/admin/v1/users/\(signedIn.user.id)", method: .delete, headers: TestApp.adminHeaders)
                #expect(deleted.status == .noContent)
                for _ in 0..<200 where try await standIn.failures() == 0 { try await Task.sleep(for: .milliseconds(50)) }
                return id
            }
            #expect(try await standIn.failures() == 1, "the first attempt did not reach Stripe")
            #expect(!(try await standIn.requests()).contains { $0.method == "DELETE" })
            clock.advance(by: 3_600)
            let second = try await buildApplication(config: frozen, dependencies: AppDependencies(clock: clock, logger: TestApp.quietLogger))
            try await second.test(.router) { _ in
                for _ in 0..<200 where try await standIn.requests().contains(where: { $0.method == "DELETE" }) == false {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            let cancel = try #require(try await standIn.requests().first { $0.method == "DELETE" })
            #expect(cancel.path == "/v1/subscriptions/\(subscriptionID)" && cancel.status == 200 && cancel.idempotencyKey == "gatehouse-cancel-\(subscriptionID)-a1")
            try await StripeTests.noRejections(standIn)
        } catch {
            await cleanup()
            throw error
        }
        await cleanup()
    }
}
