import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Hannah's web subscription end to end (HH-22, issue 44): the 7-day trial from sign-up, Stripe
/// premium bought on day 3, never read-only while paid (also after the trial's end), cancelled in
/// the portal at the period's end, read-only once the period is over; the example backend's
/// costly routes follow every step, from the token's claims.
@Suite struct HannahStripeJourneyTests {
    @Test(arguments: Backend.available)
    func trialThenStripePremiumThenCancelledThenReadOnly(_ backend: Backend) async throws {
        let standIn = try await StripeStandIn()
        defer { standIn.stop() }
        let clock = ManualClock(Date())
        let stripe = StripeTests.configure(standIn)
        try await TestApp.run(backend, preset: "hannah", clock: clock, setup: .live, adjust: { stripe(&$0); $0.serviceKey = AppBackendTests.serviceKey }) {
            gatehouse, config in
            let api = AuthClient(client: gatehouse)
            try await AppBackendTests.withBackend(gatehousePort: try #require(gatehouse.port), config, routes: [.assistant], clock: clock) { app in
                let signedIn = try await VerifierTests.signIn(api, config, "hannah.web@example.com")
                var session = signedIn.session
                func advance(days: Double) async throws {
                    // The app refreshes its session every few days, as a person opening it would.
                    var left = days * 86_400
                    while left > 0 {
                        let step = min(left, 4 * 86_400)
                        clock.advance(by: step)
                        left -= step
                        session = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
                    }
                }
                func state() async throws -> EntitlementsPayload { try await StripeTests.snapshot(api, session.accessToken) }
                func chat(_ token: String) async throws -> TestResponse { try await AppBackendTests.call(app, .post, "/ai/chat", token: token) }

                var now = try await state()
                #expect(now.planState == "trial" && !now.readOnly && now.trial?.daysLeft == 6, "\(now)")
                #expect(try await chat(session.accessToken).status == .ok)

                // Day 3: premium on the web.
                try await advance(days: 2)
                let subscription = try await StripeTests.subscribe(gatehouse, standIn, token: session.accessToken, now: clock.now, days: 30)
                session = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
                now = try await state()
                #expect(now.planState == "pro" && now.tier == "premium" && !now.readOnly && now.trial == nil, "\(now)")

                // Past the trial's end (day 9): still paid, never read-only, the costly routes open.
                try await advance(days: 6)
                now = try await state()
                #expect(now.planState == "pro" && !now.readOnly, "\(now)")
                #expect(try await chat(session.accessToken).status == .ok)
                let logFood = try await api.post("/v1/entitlements/check", #"{"action": "log_food"}"#, token: session.accessToken).json(GateDecision.self)
                #expect(logFood.allowed)

                // Day 10: cancelled in the portal at the period's end; the plan stays until then.
                try await advance(days: 1)
                _ = try await standIn.updateSubscription(subscription.id, cancelAtPeriodEnd: true)
                try await StripeTests.send(gatehouse, standIn, "customer.subscription.updated", subscription: subscription.id, at: clock.now)
                session = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
                now = try await state()
                #expect(now.planState == "pro" && !now.readOnly && now.subscription?.willRenew == false, "\(now)")
                #expect(try jwtParts(session.accessToken).claims["plan_expires_at"] as? Int == Int(subscription.periodEnd.timeIntervalSince1970))
                #expect(try await chat(session.accessToken).status == .ok)

                // A minute before the period ends: still paid. Two minutes later the backend
                // refuses that same token (its `plan_expires_at` has passed, its `exp` has not),
                // and Gatehouse answers read-only with the paywall's words.
                try await advance(days: subscription.periodEnd.timeIntervalSince(clock.now) / 86_400 - 60.0 / 86_400)
                let lastPaidToken = session.accessToken
                #expect(try await state().planState == "pro")
                #expect(try await chat(lastPaidToken).status == .ok)
                clock.advance(by: 120)
                session = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
                now = try await state()
                #expect(now.planState == "free" && now.readOnly && now.sources == [], "\(now)")
                for token in [lastPaidToken, session.accessToken] {
                    let refused = try await chat(token)
                    #expect(refused.status == .forbidden && refused.error?.code == .planRequired, "\(refused.text)")
                    #expect(refused.error?.message == "Your free trial has ended. Subscribe to keep using Hannah Health.")
                }
                let readOnly = try await api.post("/v1/entitlements/check", #"{"action": "log_food"}"#, token: session.accessToken).json(GateDecision.self)
                #expect(!readOnly.allowed && readOnly.reasonCode == "trial_expired")
                let history = try await api.post("/v1/entitlements/check", #"{"action": "view_history"}"#, token: session.accessToken).json(GateDecision.self)
                #expect(history.allowed)
            }
            try await StripeTests.noRejections(standIn)
        }
    }
}
