import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The same Handz gate table as the engine's unit test, through HTTP with real accounts put into
/// each plan state; credits, trials and Hannah's trial journey.
@Suite struct EntitlementTests {
    static func check(_ api: AuthClient, _ action: String, _ context: [String: Int] = [:], token: String?) async throws -> TestResponse {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["action": action, "context": context]), as: UTF8.self)
        return try await api.post("/v1/entitlements/check", body, token: token)
    }

    static func spend(_ api: AuthClient, key: String, token: String, action: String = "practice_saved_flow") async throws -> TestResponse {
        try await api.post("/v1/credits/practice/spend", #"{"idempotency_key": "\#(key)", "action": "\#(action)"}"#, token: token)
    }

    @Test(arguments: Backend.available)
    func everyHandzGateThroughHTTP(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "handz") { client, config in
            let api = AuthClient(client: client)
            var failures: [String] = []
            for (index, row) in try GateRow.load().enumerated() {
                var token: String?
                if row.plan != "guest" {
                    let account = try await api.account("gate\(index)@example.com")
                    token = account.session.accessToken
                    let id = UserID(account.user.id)!
                    if row.verified {
                        _ = try await TestApp.withStore(config) { try await $0.markEmailVerified(id, normalizedEmail: "gate\(index)@example.com", at: Date()) }
                    }
                    for spent in 0..<row.creditsSpent {
                        #expect(try await Self.spend(api, key: "k\(spent)", token: account.session.accessToken).status == .ok)
                    }
                    switch row.plan {
                    case "trial":
                        #expect(try await api.post("/v1/trial/start", "{}", token: token).status == .ok)
                    case "pro", "pro_grace":
                        let set = try await client.execute(
                            uri: "/admin/v1/users/\(account.user.id)/plan", method: .put, headers: TestApp.adminHeaders,
                            body: jsonBody(#"{"plan": "\#(row.plan)"}"#))
                        #expect(set.status == .ok)
                    default: break
                    }
                }
                let response = try await Self.check(api, row.action, row.context, token: token)
                let decision = try response.json(GateDecision.self)
                // Everything the fixture states, secondary message and action labels included.
                let problems = row.mismatches(decision)
                if !problems.isEmpty {
                    failures.append("\(row.name): \(problems.joined(separator: ", ")): \(response.text)")
                }
            }
            #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
            let unknown = try await Self.check(api, "fly_to_the_moon", token: nil)
            #expect(unknown.status == .badRequest && unknown.error?.code == .unknownAction)
        }
    }

    /// 40 concurrent spends with one credit left: exactly one succeeds, the balance never goes
    /// below zero and the ledger reconciles.
    @Test(arguments: Backend.available)
    func concurrentSpendsNeverOverdraw(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "handz") { client, config in
            let api = AuthClient(client: client)
            let account = try await api.account("spender@example.com")
            let token = account.session.accessToken
            for key in ["a", "b"] {
                let response = try await Self.spend(api, key: key, token: token)
                #expect(response.status == .ok, "\(response.text)")
            }
            // The same key again: the same answer, nothing more spent.
            let repeated = try await Self.spend(api, key: "b", token: token)
            #expect(try repeated.json(CreditSpendResponse.self) == CreditSpendResponse(remaining: 1, spent: 1))
            let statuses = try await BurstGate.exclusive {
                try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    // 40 together: with 100 on two cores beside the rest of the suite, some waited
                    // past the 10 s connection lease and got 503 (safe, but not what this measures).
                    for index in 0..<40 {
                        group.addTask { try await Self.spend(api, key: "race-\(index)", token: token).status }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            #expect(statuses.filter { $0 == .ok }.count == 1)
            #expect(statuses.filter { $0 == .forbidden }.count == 39, "\(statuses.filter { $0 != .forbidden && $0 != .ok })")
            let refused = try await Self.spend(api, key: "after", token: token)
            #expect(refused.status == .forbidden && refused.error?.code == .planRequired)
            #expect(refused.error?.details?["reason_code"] == .string("credits_exhausted"))
            let ledger = try await TestApp.withStore(config) { try await $0.creditLedger(of: UserID(account.user.id)!) }
            #expect(ledger.count == 3 && ledger.allSatisfy { $0.amount == 1 && $0.credit == "practice" })
            let snapshot = try await api.get("/v1/entitlements", token: token).json(EntitlementsPayload.self)
            #expect(snapshot.credits["practice"]?.remaining == 0 && snapshot.credits["practice"]?.granted == 3)
            // Inbox practice may not spend a credit (decision 19).
            let other = try await api.account("inbox@example.com")
            let inbox = try await Self.spend(api, key: "x", token: other.session.accessToken, action: "practice_inbox_item")
            #expect(inbox.status == .forbidden && inbox.error?.details?["reason_code"] == .string("inbox_practice_requires_save"))
        }
    }

    @Test func theSnapshotAndTokensFollowThePlan() async throws {
        try await TestApp.run(.sqlite, preset: "handz") { client, _ in
            let api = AuthClient(client: client)
            let guest = try await api.get("/v1/entitlements", token: nil).json(EntitlementsPayload.self)
            #expect(guest.planState == "guest" && guest.capabilities["can_persist"] == false && guest.credits.isEmpty)
            let account = try await api.account("snapshot@example.com")
            let free = try await api.get("/v1/entitlements", token: account.session.accessToken).json(EntitlementsPayload.self)
            #expect(free.planState == "free" && free.limits["saved_flow_cap"] == .some(2) && free.credits["practice"]?.remaining == 3)
            // CH08's Free plan in full (H8.2-9, H8.BP-1): caps 2 / 10 / 10, no uploads, 3 share links a
            // day, 3 practice credits, and the capability booleans.
            #expect(
                free.limits == [
                    "saved_flow_cap": 2, "inbox_cap": 10, "branch_cap_per_move": 10, "media_cap_bytes": 0, "share_links_per_day": 3,
                ])
            #expect(
                free.capabilities == [
                    "can_persist": true, "can_practice": false, "can_practice_inbox_items": false, "can_upload_media": false,
                    "can_create_share_links": true,
                ])
            #expect(free.credits["practice"]?.granted == 3)
            #expect(try jwtParts(account.session.accessToken).claims["plan"] as? String == "free")
            let trial = try await api.post("/v1/trial/start", "{}", token: account.session.accessToken)
            let started = try trial.json(EntitlementsPayload.self)
            #expect(started.planState == "trial" && started.trial?.daysLeft == 6 && started.limits["saved_flow_cap"] == .some(nil))
            let again = try await api.post("/v1/trial/start", "{}", token: account.session.accessToken)
            #expect(again.status == .conflict && again.error?.code == .trialAlreadyUsed)
            let refreshed = try await api.refresh(account.session.refreshToken).json(SessionResponse.self)
            let claims = try jwtParts(refreshed.session.accessToken).claims
            #expect(claims["plan"] as? String == "trial" && claims["plan_expires_at"] as? Int != nil)
        }
    }

    /// Hannah: the trial starts with the account; day 1 full access, day 5 banner data, day 8
    /// paywall and read-only; an App Store subscription restores it.
    @Test(arguments: Backend.available)
    func hannahsTrialJourney(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        let apple = try FakeAppStore()
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: TestApp.trusting(apple)) { client, config in
            let api = AuthClient(client: client)
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "journey@example.com"}"#).status == .accepted)
            let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link")
            let link = try EmailFlowTests.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/magic-link")
            let session = try await api.post("/v1/auth/magic-link/verify", #"{"token": "\#(link)"}"#).json(SignInResponse.self)
            let token = session.session.accessToken
            let day1 = try await api.get("/v1/entitlements", token: token).json(EntitlementsPayload.self)
            #expect(day1.planState == "trial" && day1.trial?.daysLeft == 6 && !day1.readOnly && day1.capabilities["can_use_ai"] == true)
            #expect(try await Self.check(api, "ai_chat", token: token).json(GateDecision.self).allowed)
            #expect(try await Self.check(api, "send_sms", token: token).json(GateDecision.self).allowed)
            #expect(try jwtParts(token).claims["plan_expires_at"] as? Int == Int(clock.now.unixSeconds) + 7 * 86_400)

            clock.advance(by: 4 * 86_400 + 60)
            let refreshed = try await api.refresh(session.session.refreshToken).json(SessionResponse.self)
            let day5 = try await api.get("/v1/entitlements", token: refreshed.session.accessToken).json(EntitlementsPayload.self)
            #expect(day5.trial?.daysLeft == 2)

            clock.advance(by: 3 * 86_400)
            let late = try await api.refresh(refreshed.session.refreshToken).json(SessionResponse.self)
            let day8 = try await api.get("/v1/entitlements", token: late.session.accessToken).json(EntitlementsPayload.self)
            #expect(day8.planState == "free" && day8.readOnly && day8.trial == nil)
            let chat = try await Self.check(api, "ai_chat", token: late.session.accessToken).json(GateDecision.self)
            #expect(!chat.allowed && chat.gate == "paywall" && chat.reasonCode == "trial_expired")
            // Texting a meal costs like AI: gated the same way once the trial is over.
            let sms = try await Self.check(api, "send_sms", token: late.session.accessToken).json(GateDecision.self)
            #expect(!sms.allowed && sms.reasonCode == "trial_expired")
            #expect(try await Self.check(api, "log_food", token: late.session.accessToken).json(GateDecision.self).allowed == false)
            #expect(try await Self.check(api, "view_history", token: late.session.accessToken).json(GateDecision.self).allowed)

            let purchase = try apple.sign(
                FakeAppStore.transaction(
                    id: "h1", original: "h1", product: "com.hannahhealth.nutritionist.monthly", user: session.user.id, purchased: clock.now,
                    expires: clock.now + 30 * 86_400, signed: clock.now))
            let restored = try await AppStoreTests.purchase(api, purchase, token: late.session.accessToken).json(EntitlementsPayload.self)
            #expect(restored.planState == "pro" && !restored.readOnly && restored.tier == "nutritionist")
            #expect(restored.subscription?.productID == "com.hannahhealth.nutritionist.monthly")
            #expect(try await Self.check(api, "ai_chat", token: late.session.accessToken).json(GateDecision.self).allowed)
            let feed = try await AccountTests.events(api).events.map(\.type)
            #expect(feed.contains("trial.started") && feed.contains("purchase.succeeded") && feed.contains("plan.changed"))
        }
    }
}

@Suite struct AnalyticsTests {
    static func batch(_ events: [[String: Any]]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: ["events": events]), as: UTF8.self)
    }

    /// Handz CH08 §9: every analytics event the seed names, with its properties, is accepted and
    /// stored under the signed-in user (decision 23).
    @Test func everyHandzAnalyticsEventIsAccepted() async throws {
        try await TestApp.run(.sqlite, preset: "handz") { client, config in
            let api = AuthClient(client: client)
            let account = try await api.account("analytics@example.com")
            let now = Date().rfc3339
            let events: [[String: Any]] = [
                ["name": "entitlement_snapshot_loaded", "properties": ["planState": "free", "creditsRemaining": 3, "caps": "flows:3"]],
                ["name": "gate_shown", "properties": ["reasonCode": "flow_cap_reached", "planState": "free", "surface": "flow_save"]],
                ["name": "upgrade_clicked", "properties": ["surface": "flow_save", "planState": "free"]],
                ["name": "trial_started", "properties": [:]],
                ["name": "purchase_started", "properties": ["productId": "com.handz.pro.monthly"]],
                ["name": "purchase_success", "properties": ["productId": "com.handz.pro.monthly"]],
                ["name": "purchase_failed", "properties": ["productId": "com.handz.pro.monthly", "errorCode": "payment_declined"]],
                ["name": "restore_clicked", "properties": [:]],
                ["name": "restore_success", "properties": [:]],
                ["name": "restore_failed", "properties": ["errorCode": "nothing_to_restore"]],
                ["name": "credit_spent", "properties": ["flowId": "flow-1", "sessionId": "practice-1"]],
                ["name": "downgrade_detected", "properties": ["previousPlan": "pro", "newPlan": "free", "hasOverCapFlows": true]],
            ].map { $0.merging(["occurred_at": now]) { old, _ in old } }
            let response = try await api.post("/v1/events", Self.batch(events), token: account.session.accessToken)
            #expect(response.status == .accepted, "\(response.text)")
            let stored = try await TestApp.withStore(config) { try await $0.events(after: nil, userID: UserID(account.user.id)!, limit: 100) }
            let analytics = stored.filter { $0.type == .analytics }
            #expect(analytics.compactMap { $0.data["name"] } == events.map { $0["name"] as! String })
            #expect(analytics.first { $0.data["name"] == "credit_spent" }?.data["flowId"] == "flow-1")
            #expect(analytics.first { $0.data["name"] == "downgrade_detected" }?.data["newPlan"] == "free")
        }
    }

    @Test(arguments: Backend.available)
    func clientEventsAreValidatedAndJoinTheirUser(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "oklah") { client, config in
            let api = AuthClient(client: client)
            let now = Date().rfc3339
            let device = "device-7c1e-42"
            // Before any account: the privacy screen shows (decision 24).
            let start = try await api.post(
                "/v1/events", Self.batch([["name": "onboarding_start", "occurred_at": now, "anonymous_id": device, "properties": ["app_version": "1.0"]]]))
            #expect(start.status == .accepted, "\(start.text)")
            let account = try await AccountTests.anonymous(api)
            let complete = try await api.post(
                "/v1/events",
                Self.batch([["name": "onboarding_complete", "occurred_at": now, "anonymous_id": device,
                             "properties": ["app_version": "1.0", "duration_ms": 5400]]]),
                token: account.session.accessToken)
            #expect(complete.status == .accepted, "\(complete.text)")
            let userID = UserID(account.user.id)!
            let mine = try await TestApp.withStore(config) { try await $0.events(after: nil, userID: userID, limit: 50) }
            #expect(mine.filter { $0.type == .analytics }.compactMap { $0.data["name"] } == ["onboarding_start", "onboarding_complete"])
            #expect(mine.first { $0.data["name"] == "onboarding_complete" }?.data["duration_ms"] == "5400")

            let bad: [[String: Any]] = [
                ["name": "made_up_event", "occurred_at": now],
                ["name": "gate_shown", "occurred_at": now, "properties": ["reasonCode": "flow_cap_reached"]],
                ["name": "gate_shown", "occurred_at": now, "properties": ["reasonCode": "x", "planState": "free", "surface": "kitchen"]],
                ["name": "onboarding_complete", "occurred_at": now, "properties": ["duration_ms": "fast"]],
                ["name": "onboarding_complete", "occurred_at": now, "properties": ["unknown": 1]],
                ["name": "onboarding_complete", "occurred_at": "yesterday"],
            ]
            for event in bad {
                let response = try await api.post("/v1/events", Self.batch([event]))
                #expect(response.status == .badRequest && response.error?.code == .invalidRequest, "\(event)")
            }
            let tooMany = try await api.post("/v1/events", Self.batch(Array(repeating: ["name": "restore_clicked", "occurred_at": now], count: 51)))
            #expect(tooMany.status == .badRequest)
            let gate = try await api.post(
                "/v1/events",
                Self.batch([["name": "gate_shown", "occurred_at": now,
                             "properties": ["reasonCode": "flow_cap_reached", "planState": "free", "surface": "flow_save"]]]))
            #expect(gate.status == .accepted)
        }
    }
}
