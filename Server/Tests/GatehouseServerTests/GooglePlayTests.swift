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
import Synchronization
import Testing

/// Issue 59: Google Play as the ledger's fourth source, end to end through HTTP on both
/// databases, against the Play stand-in (every call to Google checked against the pinned
/// androidpublisher v3 discovery document; its key server signs the Pub/Sub push tokens).
@Suite struct GooglePlayTests {
    static let premium = "premium_monthly"
    static let nutritionist = "nutritionist_monthly"

    /// The stand-in's service account, push audience and e-mail, and key server as the server's
    /// settings; the preset sells two products at two tiers.
    static func configure(_ standIn: GooglePlayStandIn) async throws -> @Sendable (inout GatehouseConfig) -> Void {
        var account = try GooglePlayServiceAccount(keyFile: try await standIn.serviceAccountKeyFile())
        let info = try await standIn.info()
        let jwks = try #require((info["jwks_uri"] as? String).flatMap(URL.init(string:)))
        let audience = try #require(info["push_audience"] as? String)
        let email = try #require(info["push_email"] as? String)
        account.tokenURI = try #require(URL(string: "\(standIn.url)/token"))
        let settings = GooglePlayAPISettings(
            account: account, apiURL: try #require(URL(string: standIn.url)), pushAudience: audience, pushServiceAccount: email)
        return { config in
            config.googlePlay = settings
            config.googleJWKSURL = jwks
            config.preset.entitlements.tiers = ["premium", "nutritionist"]
            config.preset.googlePlay.packageName = GooglePlayStandIn.packageName
            config.preset.googlePlay.products = [
                Self.premium: ProductSettings(plan: .pro, tier: "premium"), Self.nutritionist: ProductSettings(plan: .pro, tier: "nutritionist"),
            ]
        }
    }

    static func claim(_ api: AuthClient, _ token: String, product: String = premium, session: String) async throws -> TestResponse {
        try await api.post("/v1/purchases/google-play", #"{"purchase_token": "\#(token)", "product_id": "\#(product)"}"#, token: session)
    }

    /// Delivers a push the stand-in made (Google's body and token) to the webhook.
    @discardableResult
    static func deliver(_ client: any TestClientProtocol, _ push: (body: String, authorization: String, messageID: String)) async throws
        -> TestResponse
    {
        try await client.execute(
            uri: "/webhooks/google-play", method: .post, headers: [.authorization: push.authorization, .contentType: "application/json"],
            body: ByteBuffer(string: push.body))
    }

    /// A subscription notification of `type` (Google's number) for `token`, pushed and expected 204.
    static func notify(_ client: any TestClientProtocol, _ standIn: GooglePlayStandIn, _ token: String, type: Int, at now: Date) async throws {
        let push = try await standIn.push(
            ["kind": "subscription", "subscription_id": Self.premium, "purchase_token": token, "notification_type": type], at: now)
        let answer = try await deliver(client, push)
        #expect(answer.status == .noContent, "type \(type): \(answer.status) \(answer.text)")
    }

    static func noViolations(_ standIn: GooglePlayStandIn) async throws {
        let violations = try await standIn.violations()
        #expect(violations.isEmpty, "requests the discovery document does not describe: \(violations)")
    }

    static func events(_ client: any TestClientProtocol, _ user: String, _ type: String) async throws -> [EventEntry] {
        try await client.execute(uri: "/admin/v1/events", method: .get, headers: TestApp.adminHeaders).json(EventList.self).events
            .filter { $0.type == type && $0.userID == user }
    }

    static func at(_ date: Date) -> Int { Int(date.timeIntervalSince1970) }

    /// Runs `body` against an app selling on Google Play through a fresh stand-in whose clock is
    /// the app's (whole seconds), and checks the stand-in saw nothing its document does not describe.
    static func run(
        _ backend: Backend, setup: TestingSetup = .router,
        _ body: @escaping @Sendable (any TestClientProtocol, GatehouseConfig, GooglePlayStandIn, ManualClock) async throws -> Void
    ) async throws {
        let standIn = try await GooglePlayStandIn()
        defer { standIn.stop() }
        let now = Date(timeIntervalSince1970: TimeInterval(Int(Date().timeIntervalSince1970)))
        try await standIn.setClock(now)
        let clock = ManualClock(now)
        try await TestApp.run(backend, clock: clock, setup: setup, adjust: try await configure(standIn)) { client, config in
            try await body(client, config, standIn, clock)
            try await noViolations(standIn)
        }
    }

    /// Purchase → pro at the product's tier → acknowledged → renewal → grace → on hold (the
    /// right ends) → recovered.
    @Test(arguments: Backend.available)
    func purchaseRenewalGraceHoldAndRecovery(_ backend: Backend) async throws {
        try await Self.run(backend) { client, config, standIn, clock in
            let now = clock.now
            let api = AuthClient(client: client)
            let account = try await api.account("play.59@example.com")
            let session = account.session.accessToken
            let expiry = now + 30 * 86_400
            // A license tester's purchase: marked as a test purchase in the ledger and the console.
            let token = try await standIn.purchase([
                "product_id": Self.premium, "expiry": Self.at(expiry), "obfuscated_account_id": account.user.id, "test_purchase": true,
            ])
            let bought = try await Self.claim(api, token, session: session)
            #expect(bought.status == .ok, "\(bought.text)")
            let snapshot = try bought.json(EntitlementsPayload.self)
            #expect(snapshot.planState == "pro" && snapshot.tier == "premium", "\(snapshot)")
            #expect(snapshot.subscription?.source == "google_play" && snapshot.subscription?.status == "active")
            #expect(snapshot.subscription?.expiresAt == expiry.rfc3339 && snapshot.subscription?.productID == Self.premium)
            #expect(snapshot.subscription?.testPurchase == true)
            let (_, console) = try await ConsoleTests.Console.signIn(client)
            let page = try await #require(console).get("/admin/users/\(account.user.id)").text
            #expect(page.contains(#"<tr data-source="google_play"><td>google_play <span class="muted" data-test-purchase>test purchase</span>"#), "\(page)")
            let purchases = try await Self.events(client, account.user.id, "purchase.succeeded")
            #expect(purchases.map(\.data) == [["source": "google_play", "kind": "purchase", "product_id": Self.premium, "purchase_id": token]])

            // Acknowledged by the job, within Google's three days.
            func acknowledged() async throws -> Bool {
                try await TestApp.withStore(config) { try await $0.googlePlayPurchase(token: token)?.acknowledged == true }
            }
            for _ in 0..<600 where try await !acknowledged() { try await Task.sleep(for: .milliseconds(50)) }
            #expect(try await acknowledged())
            #expect(try await standIn.acknowledgements().filter { $0["token"] as? String == token }.count == 1)

            // A renewal: the notification is a reason to read again; the new expiry is Google's.
            let renewed = expiry + 30 * 86_400
            try await standIn.update(token, ["renew": true, "expiry": Self.at(renewed)])
            try await Self.notify(client, standIn, token, type: 2, at: clock.now)
            var after = try await StripeTests.snapshot(api, session)
            #expect(after.planState == "pro" && after.subscription?.expiresAt == renewed.rfc3339, "\(after)")
            #expect(try await Self.events(client, account.user.id, "purchase.succeeded").last?.data["kind"] == "renewal")

            // Grace: Google retries the payment; the right holds (billing grace is paid, decision 17).
            try await standIn.update(token, ["state": "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"])
            try await Self.notify(client, standIn, token, type: 6, at: clock.now)
            after = try await StripeTests.snapshot(api, session)
            #expect(after.planState == "pro" && after.subscription?.status == "billing_grace", "\(after)")

            // On hold: the right ends.
            try await standIn.update(token, ["state": "SUBSCRIPTION_STATE_ON_HOLD"])
            try await Self.notify(client, standIn, token, type: 5, at: clock.now)
            after = try await StripeTests.snapshot(api, session)
            #expect(after.planState == "free" && after.sources == [], "\(after)")

            // Recovered: paid again.
            try await standIn.update(token, ["state": "SUBSCRIPTION_STATE_ACTIVE"])
            try await Self.notify(client, standIn, token, type: 1, at: clock.now)
            after = try await StripeTests.snapshot(api, session)
            #expect(after.planState == "pro" && after.tier == "premium" && after.subscription?.status == "active", "\(after)")
            #expect(try await Self.events(client, account.user.id, "plan.changed").count == 3)
        }
    }

    /// An upgrade through a linked token (one right, on the new token); a lapsed re-subscribe with
    /// no linked token, bound by the obfuscated id from its notification alone; a voided purchase
    /// ends the right; a token another account's obfuscated id names is refused.
    @Test(arguments: Backend.available)
    func upgradeResubscribeVoidAndBinding(_ backend: Backend) async throws {
        try await Self.run(backend) { client, config, standIn, clock in
            let now = clock.now
            let api = AuthClient(client: client)
            let account = try await api.account("upgrade.59@example.com")
            let other = try await api.account("other.59@example.com")
            let session = account.session.accessToken
            let expiry = now + 30 * 86_400
            let first = try await standIn.purchase(["product_id": Self.premium, "expiry": Self.at(expiry), "obfuscated_account_id": account.user.id])
            #expect(try await Self.claim(api, first, session: session).status == .ok)

            // Another account cannot claim it: its obfuscated id names the first account.
            let refused = try await Self.claim(api, first, session: other.session.accessToken)
            #expect(refused.status == .conflict && refused.error?.code == "subscription_in_use", "\(refused.text)")
            #expect(try await StripeTests.snapshot(api, other.session.accessToken).planState == "free")

            // The upgrade: Google ends the old token and names it in the new one's linkedPurchaseToken.
            try await standIn.update(first, ["state": "SUBSCRIPTION_STATE_EXPIRED"])
            let upgrade = try await standIn.purchase([
                "product_id": Self.nutritionist, "expiry": Self.at(expiry), "linked_token": first, "obfuscated_account_id": account.user.id,
            ])
            let upgraded = try await Self.claim(api, upgrade, product: Self.nutritionist, session: session).json(EntitlementsPayload.self)
            #expect(upgraded.planState == "pro" && upgraded.tier == "nutritionist", "\(upgraded)")
            #expect(upgraded.sources?.count == 1 && upgraded.sources?.first?.productID == Self.nutritionist, "\(upgraded)")
            let replaced = try await TestApp.withStore(config) { try await $0.googlePlayPurchase(token: first) }
            #expect(replaced?.supersededBy == upgrade)
            // A late read of the old token (Google still says ACTIVE to a stale cache) gives nothing: it was replaced.
            try await standIn.update(first, ["state": "SUBSCRIPTION_STATE_ACTIVE"])
            try await Self.notify(client, standIn, first, type: 2, at: clock.now)
            #expect(try await StripeTests.snapshot(api, session).sources?.count == 1)

            // It lapses; a re-subscribe later has no linked token and arrives only as a notification.
            try await standIn.update(upgrade, ["state": "SUBSCRIPTION_STATE_EXPIRED"])
            try await Self.notify(client, standIn, upgrade, type: 13, at: clock.now)
            #expect(try await StripeTests.snapshot(api, session).planState == "free")
            let again = try await standIn.purchase(["product_id": Self.premium, "expiry": Self.at(expiry), "obfuscated_account_id": account.user.id])
            try await Self.notify(client, standIn, again, type: 4, at: clock.now)
            let resubscribed = try await StripeTests.snapshot(api, session)
            #expect(resubscribed.planState == "pro" && resubscribed.tier == "premium" && resubscribed.subscription?.source == "google_play")
            #expect(try await TestApp.withStore(config) { try await $0.googlePlayPurchase(token: again)?.userID?.description } == account.user.id)

            // A refund: the voided notification ends the right.
            let order = try await standIn.void(again)
            let voidedPush = try await standIn.push(["kind": "voided", "purchase_token": again, "order_id": order], at: clock.now)
            #expect(try await Self.deliver(client, voidedPush).status == .noContent)
            let refunded = try await StripeTests.snapshot(api, session)
            #expect(refunded.planState == "free" && refunded.sources == [], "\(refunded)")
            let export = try await api.get("/v1/me/export", token: session).json(AccountExport.self)
            #expect(Set(export.googlePlayPurchases.map(\.purchaseToken)) == [first, upgrade, again])
            #expect(export.googlePlayPurchases.first { $0.purchaseToken == again }?.voidedAt != nil)
        }
    }

    /// A push without a Google-signed token of the configured audience and service account is
    /// 401 `invalid_signature` and applies nothing; the same message with a good token applies.
    @Test(arguments: Backend.available)
    func pushesWithoutTheRightTokenAreRefused(_ backend: Backend) async throws {
        try await Self.run(backend) { client, config, standIn, clock in
            let now = clock.now
            let api = AuthClient(client: client)
            let account = try await api.account("push.59@example.com")
            let token = try await standIn.purchase([
                "product_id": Self.premium, "expiry": Self.at(now + 30 * 86_400), "obfuscated_account_id": account.user.id,
            ])
            let bad: [(String, [String: Any])] = [
                ("another audience", ["audience": "https://elsewhere.example/push"]),
                ("another service account", ["email": "someone@other-project.iam.gserviceaccount.com"]),
                ("an unverified e-mail", ["email_verified": false]),
                ("expired", ["issued_at": Self.at(now - 7_200), "expires_in": 3_600]),
                ("another issuer", ["issuer": "https://issuer.example"]),
                ("a foreign key", ["signer": "foreign"]),
                ("alg none", ["signer": "none"]),
                ("HS256 with Google's public key", ["signer": "hs256"]),
            ]
            let good = try await standIn.push(
                ["kind": "subscription", "subscription_id": Self.premium, "purchase_token": token, "notification_type": 4, "message_id": "m-401"],
                at: clock.now)
            for (name, options) in bad {
                let push = try await standIn.push([
                    "kind": "subscription", "subscription_id": Self.premium, "purchase_token": token, "notification_type": 4, "message_id": "m-401", "token": options,
                ], at: clock.now)
                let answer = try await Self.deliver(client, push)
                #expect(answer.status == .unauthorized && answer.error?.code == "invalid_signature", "\(name): \(answer.status) \(answer.text)")
            }
            for header in [nil, "Basic abc", "Bearer "] as [String?] {
                var headers: HTTPFields = [.contentType: "application/json"]
                headers[.authorization] = header
                let answer = try await client.execute(uri: "/webhooks/google-play", method: .post, headers: headers, body: ByteBuffer(string: good.body))
                #expect(answer.status == .unauthorized && answer.error?.code == "invalid_signature", "\(header ?? "no header"): \(answer.status)")
            }
            #expect(try await StripeTests.snapshot(api, account.session.accessToken).planState == "free")
            #expect(try await standIn.callCounts()["androidpublisher.purchases.subscriptionsv2.get"] == nil, "a refused push reached Google")
            // Nothing was recorded under the message's id: the genuine delivery applies it.
            #expect(try await Self.deliver(client, good).status == .noContent)
            #expect(try await StripeTests.snapshot(api, account.session.accessToken).planState == "pro")
        }
    }

    /// 20 deliveries of one push released together: all 204, applied once (one renewal event).
    @Test(arguments: Backend.available)
    func onePushTwentyTimesAtOnce(_ backend: Backend) async throws {
        try await Self.run(backend, setup: .live) { client, config, standIn, clock in
            let now = clock.now
            let api = AuthClient(client: client)
            let account = try await api.account("burst.59@example.com")
            let token = try await standIn.purchase([
                "product_id": Self.premium, "expiry": Self.at(now + 30 * 86_400), "obfuscated_account_id": account.user.id,
            ])
            #expect(try await Self.claim(api, token, session: account.session.accessToken).status == .ok)
            try await standIn.update(token, ["renew": true, "expiry": Self.at(now + 60 * 86_400)])
            let push = try await standIn.push(
                ["kind": "subscription", "subscription_id": Self.premium, "purchase_token": token, "notification_type": 2], at: clock.now)
            let request = LastByteRace.request("POST", "/webhooks/google-play", json: push.body, headers: ["Authorization": push.authorization])
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(client.port), request, copies: 20) }
            #expect(answers.map(\.status) == Array(repeating: 204, count: 20), "\(answers.map(\.status))")
            let renewals = try await Self.events(client, account.user.id, "purchase.succeeded").filter { $0.data["kind"] == "renewal" }
            #expect(renewals.count == 1)
        }
    }

    /// One purchase token (no obfuscated id) claimed by two accounts released together: one 200,
    /// one 409; the token's key decides.
    @Test(arguments: Backend.available)
    func twoAccountsClaimOneTokenTogether(_ backend: Backend) async throws {
        try await Self.run(backend, setup: .live) { client, config, standIn, clock in
            let now = clock.now
            let api = AuthClient(client: client)
            let first = try await api.account("first.claim@example.com")
            let second = try await api.account("second.claim@example.com")
            let token = try await standIn.purchase(["product_id": Self.premium, "expiry": Self.at(now + 30 * 86_400)])
            let body = #"{"purchase_token": "\#(token)", "product_id": "\#(Self.premium)"}"#
            let requests = [first, second].map {
                LastByteRace.request("POST", "/v1/purchases/google-play", json: body, headers: ["Authorization": "Bearer \($0.session.accessToken)"])
            }
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(client.port), requests) }
            #expect(answers.map(\.status).sorted() == [200, 409], "\(answers.map(\.status))")
            let owner = try await TestApp.withStore(config) { try await $0.googlePlayPurchase(token: token)?.userID?.description }
            let winner = answers[0].status == 200 ? first : second
            #expect(owner == winner.user.id)
        }
    }

    /// An unacknowledged purchase whose acknowledgement failed is acknowledged by the restarted
    /// server (the job was queued in the database); a purchase voided while the server was down
    /// ends at the next start, read from the Voided Purchases API.
    @Test(arguments: Backend.available)
    func acknowledgementAndVoidsSurviveARestart(_ backend: Backend) async throws {
        let standIn = try await GooglePlayStandIn()
        defer { standIn.stop() }
        let now = Date(timeIntervalSince1970: TimeInterval(Int(Date().timeIntervalSince1970)))
        try await standIn.setClock(now)
        let clock = ManualClock(now)
        let adjust = try await Self.configure(standIn)
        let (url, cleanup) = try await TestDatabase.make(backend)
        do {
            let token = try await standIn.purchase(["product_id": Self.premium, "expiry": Self.at(now + 30 * 86_400)])
            let refunded = try await standIn.purchase(["product_id": Self.nutritionist, "expiry": Self.at(now + 30 * 86_400)])
            let ids = Mutex<(String, String)?>(nil)
            // Google answers 503 to the first acknowledgement; the job's retry is due 5 s later on
            // the server's clock, which stands still until the restart.
            try await standIn.fail("androidpublisher.purchases.subscriptions.acknowledge", count: 1)
            try await TestApp.serve(url, clock: clock, adjust: adjust) { client, config in
                let api = AuthClient(client: client)
                let account = try await api.account("restart.59@example.com")
                #expect(try await Self.claim(api, token, session: account.session.accessToken).status == .ok)
                func failedOnce() async throws -> Bool {
                    try await standIn.callCounts()["androidpublisher.purchases.subscriptions.acknowledge"] ?? 0 >= 1
                }
                for _ in 0..<600 where try await !failedOnce() { try await Task.sleep(for: .milliseconds(50)) }
                #expect(try await failedOnce())
                // The second purchase is acknowledged at once (the failure was used up).
                let other = try await api.account("restart.other@example.com")
                #expect(try await Self.claim(api, refunded, product: Self.nutritionist, session: other.session.accessToken).status == .ok)
                func acknowledged(_ token: String) async throws -> Bool {
                    try await TestApp.withStore(config) { try await $0.googlePlayPurchase(token: token)?.acknowledged == true }
                }
                for _ in 0..<600 where try await !acknowledged(refunded) { try await Task.sleep(for: .milliseconds(50)) }
                let (second, first) = (try await acknowledged(refunded), try await acknowledged(token))
                #expect(second && !first)
                ids.withLock { $0 = (account.user.id, other.user.id) }
            }
            // While the server is down: the second purchase is refunded (no notification reaches it).
            try await standIn.void(refunded)
            // An hour later (the job's back-off has passed), the server starts again.
            clock.advance(by: 3_600)
            try await standIn.setClock(clock.now)
            try await TestApp.serve(url, clock: clock, adjust: adjust) { client, config in
                let (accountID, otherID) = try #require(ids.withLock { $0 })
                func settled() async throws -> Bool {
                    try await TestApp.withStore(config) { store in
                        let acknowledged = try await store.googlePlayPurchase(token: token)?.acknowledged == true
                        let voided = try await store.googlePlayPurchase(token: refunded)?.voidedAt != nil
                        return voided && acknowledged
                    }
                }
                for _ in 0..<600 where try await !settled() { try await Task.sleep(for: .milliseconds(50)) }
                #expect(try await settled(), "the restarted server did not both read the void and acknowledge the queued purchase")
                let plans = try await TestApp.withStore(config) { store in
                    let engine = EntitlementEngine(preset: config.preset)
                    var plans: [String] = []
                    for id in [accountID, otherID] {
                        let userID = try #require(UserID(id))
                        let user = try #require(try await store.user(id: userID))
                        plans.append(engine.state(of: try await engine.storedInput(for: user, in: store), at: clock.now).rawValue)
                    }
                    return plans
                }
                #expect(plans == ["pro", "free"], "the acknowledged purchase keeps its right; the refunded one's account keeps nothing")
            }
            try await Self.noViolations(standIn)
        } catch {
            await cleanup()
            throw error
        }
        await cleanup()
    }

    /// The settings: the key file and both push settings together or none, an unreadable key file
    /// named (never its content), `GATEHOUSE_GOOGLE_TOKEN_URL` over the key file's `token_uri`, and
    /// the private key never in the start-up summary.
    @Test func settingsComeTogetherAndTheKeyIsNeverShown() async throws {
        let standIn = try await GooglePlayStandIn()
        defer { standIn.stop() }
        let keyFile = try await standIn.serviceAccountKeyFile()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-play-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("service-account.json").path
        try keyFile.write(to: URL(fileURLWithPath: path))
        func problems(_ environment: [String: String]) async -> [String] {
            do throws(ConfigurationError) {
                _ = try await GatehouseConfig.load(environment: environment)
                return []
            } catch {
                return error.problems
            }
        }
        #expect(await problems(["GATEHOUSE_GOOGLE_PLAY_PUSH_AUDIENCE": "https://a.example/push"]) == [
            "GATEHOUSE_GOOGLE_PLAY_SERVICE_ACCOUNT: is required when a Google Play push setting is set"
        ])
        #expect(await problems(["GATEHOUSE_GOOGLE_PLAY_SERVICE_ACCOUNT": path]) == [
            "GATEHOUSE_GOOGLE_PLAY_PUSH_AUDIENCE: is required with GATEHOUSE_GOOGLE_PLAY_SERVICE_ACCOUNT: pushes are checked against it"
        ])
        let push = ["GATEHOUSE_GOOGLE_PLAY_PUSH_AUDIENCE": "https://a.example/push", "GATEHOUSE_GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT": "push@p.iam.gserviceaccount.com"]
        let missing = await problems(push.merging(["GATEHOUSE_GOOGLE_PLAY_SERVICE_ACCOUNT": path + ".missing"]) { $1 })
        #expect(missing.count == 1 && missing[0].hasPrefix("GATEHOUSE_GOOGLE_PLAY_SERVICE_ACCOUNT: '\(path).missing' is not a readable service account key file"))
        let config = try await GatehouseConfig.load(
            environment: push.merging(["GATEHOUSE_GOOGLE_PLAY_SERVICE_ACCOUNT": path, "GATEHOUSE_GOOGLE_TOKEN_URL": "https://token.example/token"]) { $1 })
        let settings = try #require(config.googlePlay)
        #expect(settings.account.tokenURI.absoluteString == "https://token.example/token" && settings.apiURL == GooglePlayClient.defaultAPIURL)
        #expect(settings.pushAudience == "https://a.example/push" && settings.pushServiceAccount == "push@p.iam.gserviceaccount.com")
        let summary = config.redactedSummary.values.joined(separator: " ")
        #expect(config.redactedSummary["google_play"]?.contains(settings.account.clientEmail) == true)
        let pem = try #require((try JSONSerialization.jsonObject(with: keyFile) as? [String: Any])?["private_key"] as? String)
        let body = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? pem
        #expect(!summary.contains(body) && !summary.contains("PRIVATE KEY"))
    }
}
