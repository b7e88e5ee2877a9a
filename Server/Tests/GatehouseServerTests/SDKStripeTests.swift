import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HummingbirdTesting
import Testing

/// Issue 44's SDK part against a live server with Hannah's preset and the Stripe stand-in: the
/// checkout page's URL for a price (returning to the app's own address), the plan read again
/// when the person comes back, billing trouble as billing grace, and the portal.
@MainActor @Suite struct SDKStripeTests {
    @Test func checkoutOnTheWebThenBackInTheApp() async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "hannah", clock: clock, setup: .live, adjust: StripeTests.configure(standIn)) { server, config in
            try await Self.body(server, config, standIn, clock)
        }
    }

    static func body(_ server: any TestClientProtocol, _ config: GatehouseConfig, _ standIn: StripeStandIn, _ clock: ManualClock) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(server.port))
        // What the app sells on the web, from the preset (`/v1/config`'s `stripe.prices`).
        let configuration = try await client.loadConfiguration()
        #expect(configuration.stripe.prices[StripeTests.premium]?.tier == "premium")
        #expect(configuration.stripe.prices[StripeTests.nutritionist]?.tier == "nutritionist")
        try await client.sendMagicLink(email: "web.buyer@example.com")
        let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link")
        let token = try EmailFlowTests.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/magic-link")
        guard case .signedIn = try await client.handle(url: URL(string: "hannahhealth://auth?token=\(token)")!) else {
            Issue.record("the magic link did not sign in")
            return
        }
        let status = PlanStatus(client: client)
        await status.update()
        #expect(status.planState == "trial")

        // A price the preset does not sell: the server's words, nothing opened.
        do {
            _ = try await client.stripeCheckoutURL(price: "price_not_sold")
            Issue.record("an unknown price gave a checkout page")
        } catch {
            #expect(error.code == .unknownPrice && error.status == 400, "\(error)")
            // Words for a person, not the price's id (issue 64); the id is for the developer.
            #expect(error.message == "This plan is not available. Please choose another one.")
            #expect(error.details?["price"] == .string("price_not_sold"))
        }
        // The checkout page, returning to the app's own address (the preset's open_app_url).
        let page = try await client.stripeCheckoutURL(price: StripeTests.premium)
        #expect(page.absoluteString.hasPrefix("\(standIn.url)/pay/cs_"))
        let sent = try #require(try await standIn.requests().last { $0.path == "/v1/checkout/sessions" })
        #expect(sent.form["success_url"] == "hannahhealth://auth" && sent.form["cancel_url"] == "hannahhealth://auth")

        // The person pays; Stripe's webhook reaches the server; the app, back, reads the plan.
        let sessionID = String(page.lastPathComponent)
        let subscription = try await standIn.completeCheckout(sessionID, periodStart: clock.now, periodEnd: clock.now + 30 * 86_400)
        try await StripeTests.send(server, standIn, "checkout.session.completed", session: sessionID, at: clock.now)
        let back = try #require(await client.didReturnFromStripe())
        #expect(back.planState == "pro" && back.tier == "premium" && back.subscription?.source == "stripe", "\(back)")
        await status.update()
        #expect(status.planState == "pro" && !status.showsPaywall && !status.isReadOnly)

        // A failed renewal: billing grace, still pro as the App Store's is (decision 17), no banner.
        _ = try await standIn.updateSubscription(subscription.id, status: "past_due")
        try await StripeTests.send(server, standIn, "invoice.payment_failed", subscription: subscription.id, at: clock.now)
        await status.update()
        #expect(status.planState == "pro" && !status.showsPaywall && status.banner == nil)
        #expect(status.snapshot?.subscription?.status == "billing_grace")

        // The portal, to fix the card or cancel.
        let portal = try await client.stripePortalURL()
        #expect(portal.absoluteString.hasPrefix("\(standIn.url)/portal/bps_"))
        try await StripeTests.noRejections(standIn)
    }
}
