import AppBackendExample
import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import ServiceLifecycle
import Testing

/// Caps enforced where the counts live (issue 19, item 1): the example app backend
/// (`Examples/AppBackend`) in front of a live Gatehouse, both on loopback ports, driven over
/// HTTP. The client's own counts never decide anything there.
@Suite struct AppBackendTests {
    static let serviceKey = "example-service-key-0123456789"

    /// Runs the example backend on a loopback port against the Gatehouse at `gatehousePort`,
    /// with its own SQLite file.
    static func withBackend(
        gatehousePort: Int, _ config: GatehouseConfig, routes: Set<AppBackendSettings.Routes>, clock: any WallClock, port: Int = 0,
        hookSecret: String? = nil, _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("app-backend-\(UUID().uuidString).sqlite")
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file.path + suffix) }
        }
        let app = try await buildAppBackend(
            AppBackendSettings(
                gatehouseURL: URL(string: "http://127.0.0.1:\(gatehousePort)")!, audience: config.audience, issuer: config.issuer,
                serviceKey: serviceKey, databasePath: file.path, routes: routes, port: port, clock: clock, hookSecret: hookSecret),
            logger: TestApp.quietLogger)
        try await app.test(.live) { backend in try await body(backend) }
    }

    static func call(
        _ backend: any TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, token: String, json: String? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> TestResponse {
        var headers: HTTPFields = [.authorization: "Bearer \(token)", .contentType: "application/json"]
        for field in extra { headers.append(field) }
        return try await backend.execute(uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) })
    }

    static func setPlan(_ gatehouse: any TestClientProtocol, _ user: String, _ plan: String) async throws {
        let response = try await gatehouse.execute(
            uri: "/admin/v1/users/\(user)/plan", method: .put, headers: TestApp.adminHeaders, body: jsonBody(#"{"plan": \#(plan)}"#))
        #expect(response.status == .ok, "\(response.text)")
    }

    /// The backend as Gatehouse's `CUSTOM_ACCESS_TOKEN` hook (issue 63: a verified receiver in
    /// Swift): it checks each call's Standard Webhooks signature with `HookSignature` and answers
    /// the user's saved flows from its own table; every token carries the count under `app`,
    /// `/whoami` reads it typed, and a call that is not Gatehouse's is refused.
    @Test func theBackendAnswersGatehousesClaimsHook() async throws {
        let secret = SMSReceiver.newHookSecret()
        // The backend serves on a port chosen first, so that Gatehouse's settings can name it.
        let backendPort = try SMTPSink.freePort()
        let backendURL = "http://127.0.0.1:\(backendPort)"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("app-backend-\(UUID().uuidString).sqlite")
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file.path + suffix) }
        }
        try await TestApp.run(.sqlite, preset: "handz", setup: .live, adjust: {
            $0.hooks[.customAccessToken] = HookEndpoint(
                url: URL(string: "\(backendURL)/hooks/custom-access-token")!, secret: secret, failOpen: false, format: .gatehouse)
        }) { gatehouse, config in
            let api = AuthClient(client: gatehouse)
            let gatehousePort = try #require(gatehouse.port)
            let backend = try await buildAppBackend(
                AppBackendSettings(
                    gatehouseURL: URL(string: "http://127.0.0.1:\(gatehousePort)")!, audience: config.audience, issuer: config.issuer,
                    databasePath: file.path, routes: [.flows], port: backendPort, hookSecret: secret),
                logger: TestApp.quietLogger)
            // Run as a service group, so its end is graceful: the backend's own store is closed.
            let group = ServiceGroup(configuration: .init(services: [backend], logger: TestApp.quietLogger))
            let serving = Task { try await group.run() }
            func call(_ method: String, _ path: String, token: String? = nil, json: String? = nil, headers: [String: String] = [:]) async throws
                -> HTTP.Reply
            {
                var fields = headers
                fields["Content-Type"] = "application/json"
                if let token { fields["Authorization"] = "Bearer \(token)" }
                return try await HTTP.request(URL(string: backendURL + path)!, method: method, headers: fields, body: json.map { Data($0.utf8) })
            }
            for _ in 0..<200 {
                if (try? await call("GET", "/whoami"))?.status == 401 { break }
                try await Task.sleep(for: .milliseconds(25))
            }

            // Whatever the checks come to, the backend ends gracefully (its store closed).
            var failure: (any Error)?
            do {
                let made = try await api.account("hooked@example.com")
                #expect(try jwtParts(made.session.accessToken).claims["app"] as? [String: Int] == ["saved_flows": 0])
                for title in ["Warm-up", "Scales"] {
                    #expect(try await call("POST", "/flows", token: made.session.accessToken, json: #"{"title": "\#(title)"}"#).status == 201)
                }
                let refreshed = try await api.refresh(made.session.refreshToken).json(SessionResponse.self).session
                #expect(try jwtParts(refreshed.accessToken).claims["app"] as? [String: Int] == ["saved_flows": 2])
                let whoami = try await call("GET", "/whoami", token: refreshed.accessToken)
                #expect((try JSONSerialization.jsonObject(with: whoami.body) as? [String: Any])?["saved_flows"] as? Int == 2, "\(whoami.text)")
                // A call not signed with the secret is refused before its body is read.
                let forged = try await call(
                    "POST", "/hooks/custom-access-token", json: #"{"type": "custom_access_token", "data": {"user": {"id": "\#(made.user.id)"}}}"#,
                    headers: ["webhook-id": "msg_forged", "webhook-timestamp": String(Int(Date().timeIntervalSince1970)), "webhook-signature": "v1,AAAA"])
                #expect(forged.status == 401)
            } catch {
                failure = error
            }
            await group.triggerGracefulShutdown()
            _ = await serving.result
            if let failure { throw failure }
        }
    }

    /// Handz: a Free user's third saved flow is refused whatever the client claims; the same
    /// user on Pro saves it; back on Free every flow stays readable and ranked, and the flow
    /// beyond the cap is read-only (H8.10-7).
    @Test func freeFlowCapHoldsWhateverTheClientClaims() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "handz", clock: clock, setup: .live) { gatehouse, config in
            let api = AuthClient(client: gatehouse)
            let port = try #require(gatehouse.port)
            let start = try await api.account("flows@example.com").session
            let user = try await api.get("/v1/me", token: start.accessToken).json(MeResponse.self).user.id
            try await Self.withBackend(gatehousePort: port, config, routes: [.flows], clock: clock) { backend in
                var session = start
                // No token: the flows are nobody's business.
                #expect(try await backend.execute(uri: "/flows", method: .get).status == .unauthorized)

                for title in ["Closed guard", "Half guard"] {
                    let saved = try await Self.call(backend, .post, "/flows", token: session.accessToken, json: #"{"title": "\#(title)"}"#)
                    #expect(saved.status == .created, "\(saved.text)")
                }
                // The client can make Gatehouse's advisory check say yes by claiming no flows…
                let claimed = try await api.post(
                    "/v1/entitlements/check", #"{"action": "save_flow", "context": {"saved_count": 0}}"#, token: session.accessToken)
                #expect(try claimed.json(GateDecision.self).allowed == true)
                // …but the backend counts its own rows: the third flow is refused.
                let third = try await Self.call(
                    backend, .post, "/flows", token: session.accessToken, json: #"{"title": "Mount", "saved_count": 0}"#)
                #expect(third.status == .forbidden && third.error?.code == .planRequired, "\(third.text)")
                #expect(third.error?.message == "You've reached the Free limit (2 saved flows).")
                #expect(third.error?.details?["reason_code"] == .string("flow_cap_reached"))
                #expect(third.error?.details?["gate"] == .string("cap"))

                // Upgraded to Pro (a fresh token carries the plan): the third flow is saved.
                try await Self.setPlan(gatehouse, user, #""pro""#)
                session = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
                let upgraded = try await Self.call(backend, .post, "/flows", token: session.accessToken, json: #"{"title": "Mount"}"#)
                #expect(upgraded.status == .created, "\(upgraded.text)")
                let mount = try upgraded.json(FlowStore.Flow.self)
                #expect(mount.rank == 3)

                // Back on Free: all three are listed and readable, ranked oldest first; the third
                // is read-only and the first two stay editable.
                try await Self.setPlan(gatehouse, user, "null")
                session = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
                let list = try await Self.call(backend, .get, "/flows", token: session.accessToken)
                let rows = try #require(try JSONSerialization.jsonObject(with: Data(buffer: list.body)) as? [String: Any])["flows"] as? [[String: Any]]
                #expect(rows?.map { $0["title"] as? String } == ["Closed guard", "Half guard", "Mount"])
                #expect(rows?.map { $0["rank"] as? Int } == [1, 2, 3])
                #expect(rows?.map { $0["editable"] as? Bool } == [true, true, false])
                #expect(try await Self.call(backend, .get, "/flows/\(mount.id)", token: session.accessToken).status == .ok)
                let edit = try await Self.call(backend, .patch, "/flows/\(mount.id)", token: session.accessToken, json: #"{"title": "Full mount"}"#)
                #expect(edit.status == .forbidden && edit.error?.code == .planRequired, "\(edit.text)")
                #expect(edit.error?.message == "This flow is read-only on Free. Upgrade to Pro or manage your flows to edit it.")
                #expect(edit.error?.details?["reason_code"] == .string("read_only_beyond_cap"))
                let first = try #require(rows?.first?["id"] as? String)
                let renamed = try await Self.call(backend, .patch, "/flows/\(first)", token: session.accessToken, json: #"{"title": "Closed guard 2"}"#)
                #expect(renamed.status == .ok)
                #expect(try renamed.json(FlowStore.Flow.self).title == "Closed guard 2")
                let fourth = try await Self.call(backend, .post, "/flows", token: session.accessToken, json: #"{"title": "Back take"}"#)
                #expect(fourth.status == .forbidden && fourth.error?.details?["reason_code"] == .string("flow_cap_reached"))
                // The inbox: ten imports on Free, the eleventh refused until one is cleared.
                var imported: [String] = []
                for index in 1...10 {
                    let accepted = try await Self.call(backend, .post, "/inbox", token: session.accessToken, json: #"{"title": "Shared \#(index)"}"#)
                    #expect(accepted.status == .created, "\(accepted.text)")
                    imported.append(try accepted.json(FlowStore.Flow.self).id)
                }
                let full = try await Self.call(
                    backend, .post, "/inbox", token: session.accessToken, json: #"{"title": "Shared 11", "inbox_count": 0}"#)
                #expect(full.status == .forbidden && full.error?.code == .planRequired, "\(full.text)")
                #expect(full.error?.message == "Your inbox is full (10 items). Clear some items or upgrade to receive more.")
                #expect(full.error?.details?["reason_code"] == .string("inbox_cap_reached"))
                #expect(try await Self.call(backend, .delete, "/inbox/\(imported[0])", token: session.accessToken).status == .noContent)
                #expect(try await Self.call(backend, .post, "/inbox", token: session.accessToken, json: #"{"title": "Shared 11"}"#).status == .created)

                // Another person's flow is not found, not merely refused.
                let other = try await api.account("other@example.com").session
                #expect(try await Self.call(backend, .patch, "/flows/\(first)", token: other.accessToken, json: #"{"title": "x"}"#).status == .notFound)
            }
        }
    }

    /// Saves released together cannot pass the cap between them: the backend inserts only
    /// while the count it decided on stands.
    @Test func flowSavesReleasedTogetherStopAtTheCap() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "handz", clock: clock, setup: .live, adjust: ConcurrentLimitTests.patient) { gatehouse, config in
            let api = AuthClient(client: gatehouse)
            let session = try await api.account("burst@example.com").session
            try await Self.withBackend(gatehousePort: try #require(gatehouse.port), config, routes: [.flows], clock: clock) { backend in
                let request = LastByteRace.request(
                    "POST", "/flows", json: #"{"title": "Burst"}"#, headers: ["Authorization": "Bearer \(session.accessToken)"])
                let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(backend.port), request, copies: 12) }
                #expect(answers.filter { $0.status == 201 }.count == 2, "\(answers.map(\.status))")
                #expect(answers.filter { $0.status == 403 && $0.error?.code == .planRequired }.count == 10)
                let list = try await Self.call(backend, .get, "/flows", token: session.accessToken)
                #expect((try JSONSerialization.jsonObject(with: Data(buffer: list.body)) as? [String: Any])?["flows"].map { ($0 as? [Any])?.count } == 2)
            }
        }
    }

    /// Hannah: two instances of the backend share one AI limit per user through Gatehouse's
    /// meter. The end user's `Idempotency-Key` is not the meter's (finding 3 of issue 40: the
    /// same header on every call was counted once, 25 of 25 answered with a limit of 3): every
    /// request is a use, and a key replayed after the limit is refused like any other.
    @Test func twoInstancesShareOneAILimit() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(
            .sqlite, preset: "hannah", clock: clock, setup: .live,
            adjust: {
                $0.serviceKey = Self.serviceKey
                $0.preset.entitlements.plans["pro"]?.limits["ai_chats_per_day"] = 4
            }
        ) { gatehouse, config in
            let api = AuthClient(client: gatehouse)
            let port = try #require(gatehouse.port)
            let session = try await VerifierTests.signIn(api, config, "share@example.com").session
            try await Self.withBackend(gatehousePort: port, config, routes: [.assistant], clock: clock) { first in
                try await Self.withBackend(gatehousePort: port, config, routes: [.assistant], clock: clock) { second in
                    func chat(_ backend: any TestClientProtocol, key: String? = nil) async throws -> TestResponse {
                        try await Self.call(backend, .post, "/ai/chat", token: session.accessToken, headers: key.map { [HTTPField.Name("Idempotency-Key")!: $0] } ?? [:])
                    }
                    #expect(try await chat(first).status == .ok)
                    #expect(try await chat(second).status == .ok)
                    #expect(try await chat(first, key: "retry-1").status == .ok)
                    // The same header on the other instance: a use of its own, the fourth.
                    #expect(try await chat(second, key: "retry-1").status == .ok)
                    // Four uses in all: the fifth is refused on either instance, with the header
                    // used before or without one.
                    for (backend, key) in [(first, nil), (second, nil), (first, "retry-1"), (second, "retry-1")] {
                        let refused = try await chat(backend, key: key)
                        #expect(refused.status == .forbidden && refused.error?.code == .planRequired, "\(refused.text)")
                        #expect(refused.error?.message == "You've had today's 100 AI chats. They're back tomorrow.")
                        #expect(refused.error?.details?["reason_code"] == .string("usage_limit_reached"))
                    }
                    // Searches have their own meter.
                    #expect(try await Self.call(first, .post, "/search", token: session.accessToken).status == .ok)
                    // The next UTC day the count starts again (a fresh token: the old one expired).
                    clock.advance(by: 86_400)
                    let fresh = try await api.refresh(session.refreshToken).json(SessionResponse.self).session
                    #expect(try await Self.call(second, .post, "/ai/chat", token: fresh.accessToken).status == .ok)
                }
            }
        }
    }

    /// Finding 3 of issue 40 as found: through the example backend's `/ai/chat` with a limit of
    /// 3 a day, twelve calls carrying one client `Idempotency-Key`, released on their last byte:
    /// three answer 200 and nine are refused (before: all twelve answered 200, the meter said 1).
    @Test func oneClientHeaderOnEveryCallDoesNotLiftTheLimit() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(
            .sqlite, preset: "hannah", clock: clock, setup: .live,
            adjust: {
                $0.serviceKey = Self.serviceKey
                $0.preset.entitlements.plans["pro"]?.limits["ai_chats_per_day"] = 3
                ConcurrentLimitTests.patient(&$0)
            }
        ) { gatehouse, config in
            let session = try await VerifierTests.signIn(AuthClient(client: gatehouse), config, "header@example.com").session
            try await Self.withBackend(gatehousePort: try #require(gatehouse.port), config, routes: [.assistant], clock: clock) { backend in
                let chat = LastByteRace.request(
                    "POST", "/ai/chat", json: "{}", headers: ["Authorization": "Bearer \(session.accessToken)", "Idempotency-Key": "same-every-time"])
                let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(backend.port), chat, copies: 12) }
                let statuses = answers.map(\.status)
                #expect(statuses.count { $0 == 200 } == 3, "\(statuses)")
                #expect(statuses.count { $0 == 403 } == 9, "\(statuses)")
                // After the limit, the early key again: refused like any other call.
                let replay = try await Self.call(backend, .post, "/ai/chat", token: session.accessToken, headers: [HTTPField.Name("Idempotency-Key")!: "same-every-time"])
                #expect(replay.status == .forbidden && replay.error?.code == .planRequired, "\(replay.text)")
            }
        }
    }

    /// Hannah's costly routes (HH-40, HH-62): AI chat, search and SMS answer during the trial
    /// and are refused, each with the paywall's words, once it has ended; Gatehouse's meter
    /// refuses too, from its own record of the plan, whatever token the backend holds.
    @Test func hannahsCostlyRoutesCloseWhenTheTrialEnds() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "hannah", clock: clock, setup: .live, adjust: { $0.serviceKey = Self.serviceKey }) {
            gatehouse, config in
            let api = AuthClient(client: gatehouse)
            let signedIn = try await VerifierTests.signIn(api, config, "trial@example.com")
            try await Self.withBackend(gatehousePort: try #require(gatehouse.port), config, routes: [.assistant], clock: clock) { backend in
                let routes = ["/ai/chat", "/search", "/sms"]
                for route in routes {
                    let answer = try await Self.call(backend, .post, route, token: signedIn.session.accessToken)
                    #expect(answer.status == .ok, "\(route): \(answer.text)")
                }
                clock.advance(by: 7 * 86_400 + 60)
                let late = try await api.refresh(signedIn.session.refreshToken).json(SessionResponse.self).session
                for route in routes {
                    let refused = try await Self.call(backend, .post, route, token: late.accessToken)
                    #expect(refused.status == .forbidden && refused.error?.code == .planRequired, "\(route): \(refused.text)")
                    #expect(refused.error?.message == "Your free trial has ended. Subscribe to keep using Hannah Health.")
                    #expect(refused.error?.details?["reason_code"] == .string("trial_expired"))
                }
                let meter = try await gatehouse.execute(
                    uri: "/v1/usage/ai_chat", method: .post,
                    headers: [.authorization: "Bearer \(Self.serviceKey)", .contentType: "application/json"],
                    body: jsonBody(#"{"user_id": "\#(signedIn.user.id)", "idempotency_key": "after-trial"}"#))
                #expect(meter.status == .forbidden && meter.error?.details?["reason_code"] == .string("trial_expired"), "\(meter.text)")
            }
        }
    }
}

/// `POST /v1/usage/{meter}` itself, on each database: the service key, the contract's shape,
/// and uses released together reserved against the limit.
@Suite struct UsageMeterTests {
    static func use(_ user: String, key: String, amount: Int? = nil) -> String {
        var body = #"{"user_id": "\#(user)", "idempotency_key": "\#(key)""#
        if let amount { body += #", "amount": \#(amount)"# }
        return body + "}"
    }

    /// Handz's share links (decision 16: Free 3 a day) counted by the app's backend in
    /// Gatehouse: the fourth of the day is refused with the preset's words, Pro has no limit.
    @Test func handzShareLinksAreMeteredPerDay() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        try await TestApp.run(.sqlite, preset: "handz", clock: clock, adjust: { $0.serviceKey = AppBackendTests.serviceKey }) { gatehouse, config in
            let api = AuthClient(client: gatehouse)
            let account = try await api.account("share@example.com")
            let id = try #require(UserID(account.user.id))
            func share(_ key: String) async throws -> TestResponse {
                try await gatehouse.execute(
                    uri: "/v1/usage/share_links", method: .post,
                    headers: [.authorization: "Bearer \(AppBackendTests.serviceKey)", .contentType: "application/json"],
                    body: jsonBody(Self.use(account.user.id, key: key)))
            }
            // Unverified: the verification gate comes first, from Gatehouse's own record.
            let unverified = try await share("s0")
            #expect(unverified.status == .forbidden && unverified.error?.details?["reason_code"] == .string("verification_required"))
            _ = try await TestApp.withStore(config) { store in try await store.markEmailVerified(id, normalizedEmail: "share@example.com", at: clock.now) }
            for (index, key) in ["s1", "s2", "s3"].enumerated() {
                #expect(try await share(key).json(UsageResponse.self) == UsageResponse(used: index + 1, limit: 3, resetsAt: "2027-01-16T00:00:00Z"))
            }
            let fourth = try await share("s4")
            #expect(fourth.status == .forbidden && fourth.error?.code == .planRequired)
            #expect(fourth.error?.message == "You've created today's share links. Try again tomorrow or upgrade to Pro.")
            #expect(fourth.error?.details?["reason_code"] == .string("share_limit_reached"))
            try await AppBackendTests.setPlan(gatehouse, account.user.id, #""pro""#)
            #expect(try await share("s5").json(UsageResponse.self) == UsageResponse(used: 4, limit: nil, resetsAt: "2027-01-16T00:00:00Z"))
            // The person's export holds the uses and the day's count.
            let export = try await api.get("/v1/me/export", token: account.session.accessToken).json(AccountExport.self)
            #expect(export.usageMeters == [ExportedUsageCount(meter: "share_links", periodStart: "2027-01-15T00:00:00Z", used: 4)])
            #expect(export.usageRecords.map(\.amount) == [1, 1, 1, 1] && export.usageRecords.allSatisfy { $0.meter == "share_links" })
        }
    }

    @Test(arguments: Backend.available)
    func usesReleasedTogetherStopAtTheLimit(_ backend: Backend) async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))  // 2027-01-15T08:00:00Z
        try await TestApp.run(
            backend, preset: "hannah", clock: clock, setup: .live,
            adjust: {
                $0.serviceKey = AppBackendTests.serviceKey
                ConcurrentLimitTests.patient(&$0)
            }
        ) { gatehouse, config in
            let api = AuthClient(client: gatehouse)
            let port = try #require(gatehouse.port)
            let user = try await VerifierTests.signIn(api, config, "meter@example.com").user.id
            let key: HTTPFields = [.authorization: "Bearer \(AppBackendTests.serviceKey)", .contentType: "application/json"]
            func use(_ body: String, meter: String = "ai_chat", headers: HTTPFields = key) async throws -> TestResponse {
                try await gatehouse.execute(uri: "/v1/usage/\(meter)", method: .post, headers: headers, body: jsonBody(body))
            }

            // Only the app's backend may count: no key, a wrong key, a user's own token.
            #expect(try await use(Self.use(user, key: "k0"), headers: [.contentType: "application/json"]).status == .unauthorized)
            #expect(try await use(Self.use(user, key: "k0"), headers: [.authorization: "Bearer wrong-key-0123456789012345"]).status == .unauthorized)
            // The preset's limit and the end of the UTC day.
            let first = try await use(Self.use(user, key: "k1", amount: 95))
            #expect(first.status == .ok, "\(first.text)")
            #expect(try first.json(UsageResponse.self) == UsageResponse(used: 95, limit: 100, resetsAt: "2027-01-16T00:00:00Z"))
            // The same key again: the same use, nothing added; another amount under it: 409.
            #expect(try await use(Self.use(user, key: "k1", amount: 95)).json(UsageResponse.self).used == 95)
            let reused = try await use(Self.use(user, key: "k1", amount: 2))
            #expect(reused.status == .conflict && reused.error?.code == .idempotencyKeyReused)
            #expect(try await use(Self.use(user, key: "k2"), meter: "nope").status == .notFound)
            #expect(try await use(Self.use(user, key: "k2", amount: 0)).status == .badRequest)

            // Twenty uses released together with five left: five counted, fifteen refused.
            let burst = (0..<20).map { index in
                LastByteRace.request(
                    "POST", "/v1/usage/ai_chat", json: Self.use(user, key: "burst-\(index)"),
                    headers: ["Authorization": "Bearer \(AppBackendTests.serviceKey)"])
            }
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: port, burst) }
            let counted = answers.filter { $0.status == 200 }.compactMap { $0.json?["used"] as? Int }.sorted()
            #expect(counted == [96, 97, 98, 99, 100], "\(answers.map(\.status))")
            let refused = answers.filter { $0.status == 403 }
            #expect(refused.count == 15)
            #expect(refused.allSatisfy { $0.error?.code == .planRequired && $0.error?.message == "You've had today's 100 AI chats. They're back tomorrow." })

            // The same key released ten times together counts once.
            let search = LastByteRace.request(
                "POST", "/v1/usage/search", json: Self.use(user, key: "same"), headers: ["Authorization": "Bearer \(AppBackendTests.serviceKey)"])
            let same = try await BurstGate.exclusive { try await LastByteRace.send(port: port, search, copies: 10) }
            #expect(same.allSatisfy { $0.status == 200 && $0.json?["used"] as? Int == 1 }, "\(same.map(\.status))")
            let stored = try await TestApp.withStore(config) { store in
                try await store.usage(of: try #require(UserID(user)), meter: "search", periodStart: Date(timeIntervalSince1970: 1_799_971_200))
            }
            #expect(stored == 1)

            // A key is a use's within its period: the next UTC day, "k1" is a new use (before:
            // the earlier answer was replayed, and another amount under it was refused).
            clock.advance(by: 86_400)
            let nextDay = try await use(Self.use(user, key: "k1", amount: 2))
            #expect(nextDay.status == .ok, "\(nextDay.text)")
            #expect(try nextDay.json(UsageResponse.self) == UsageResponse(used: 2, limit: 100, resetsAt: "2027-01-17T00:00:00Z"))
        }
    }
}
