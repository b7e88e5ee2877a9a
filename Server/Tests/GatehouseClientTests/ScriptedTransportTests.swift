import Foundation
import GatehouseClient
import GatehouseTestSupport
import GatehouseWire
import Testing

/// Answers each request from a script, by method and path, in order; records what was asked.
/// For the network failures and odd server replies a live server will not produce on demand.
final class ScriptedTransport: HTTPTransport, @unchecked Sendable {
    enum Step {
        case respond(Int, String, [String: String] = [:])
        case fail
    }

    private let lock = NSLock()
    private var script: [String: [Step]]
    private(set) var requests: [HTTPRequest] = []

    init(_ script: [String: [Step]]) { self.script = script }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let step = lock.withLock { () -> Step? in
            requests.append(request)
            let key = "\(request.method) \(request.url.path)"
            guard var steps = script[key], !steps.isEmpty else { return nil }
            let step = steps.removeFirst()
            script[key] = steps
            return step
        }
        switch step {
        case .respond(let status, let body, let headers)?:
            return HTTPResponse(status: status, headers: headers, body: Data(body.utf8))
        case .fail?, nil:
            throw URLError(.notConnectedToInternet)
        }
    }

    var paths: [String] { lock.withLock { requests.map { "\($0.method) \($0.url.path)" } } }
}

@Suite struct ScriptedTransportTests {
    static let user = #"{"id":"0b9c1f7e-5a3d-4c2b-9e8f-7a6b5c4d3e2f","email":"ann@example.com","email_verified":false,"is_anonymous":false,"display_name":null,"handle":null,"avatar_url":null,"created_at":"2026-11-21T10:00:00Z","onboarding_complete":false,"identities":[]}"#

    static func session(_ access: String, _ refresh: String, expiresIn: Int = 900) -> String {
        #"{"access_token":"\#(access)","token_type":"bearer","expires_in":\#(expiresIn),"expires_at":1800000000,"refresh_token":"\#(refresh)","session_id":"5f0c8a2e-1b3d-4e5f-8a9b-0c1d2e3f4a5b"}"#
    }

    static func signedIn(_ transport: ScriptedTransport, clock: TestClientClock = TestClientClock(), store: any TokenStore = MemoryTokenStore())
        async throws -> Gatehouse
    {
        let client = Gatehouse(
            configuration: try ClientConfiguration(baseURL: URL(string: "https://auth.example.com")!), tokenStore: store,
            storage: MemoryStorage(), transport: transport, clock: clock)
        try await client.signIn(email: "ann@example.com", password: "pw")
        return client
    }

    static let login = ("POST /v1/auth/login", [ScriptedTransport.Step.respond(200, #"{"user":\#(user),"session":\#(session("a1", "r1"))}"#)])

    @Test func oddRepliesBecomeReadableErrors() async throws {
        let transport = ScriptedTransport([
            Self.login.0: Self.login.1,
            "GET /v1/me": [
                .respond(200, "<html>not json</html>"),
                .respond(502, "<html>Bad Gateway</html>"),
                .respond(429, #"{"error":{"code":"rate_limited","message":"Slow down."}}"#, ["retry-after": "17"]),
                .respond(418, #"{"error":{"code":"brand_new_code","message":"A code this SDK has never heard of.","details":{"x":1}}}"#),
            ],
        ])
        let client = try await Self.signedIn(transport)
        await #expect(throws: GatehouseClientError(code: .invalidResponse, message: "The server's answer could not be read.")) {
            try await client.refreshUser()
        }
        do throws(GatehouseClientError) {
            try await client.refreshUser()
            Issue.record("a 502 was taken")
        } catch {
            #expect(error.code == .internalError && error.status == 502)
            #expect(error.message == "Something went wrong on our end. Please try again in a few minutes.")
        }
        do throws(GatehouseClientError) {
            try await client.refreshUser()
        } catch {
            #expect(error.code == .rateLimited && error.retryAfter == 17 && error.message == "Slow down.")
        }
        do throws(GatehouseClientError) {
            try await client.refreshUser()
        } catch {
            #expect(error.code == ErrorCode("brand_new_code") && error.details?["x"] == .number(1))
        }
        // None of that ended the session.
        #expect(await client.state.user != nil)
    }

    @Test func aRefreshWithoutNetworkRetriesWithBackoffAndKeepsTheSession() async throws {
        let clock = TestClientClock()
        let transport = ScriptedTransport([
            Self.login.0: Self.login.1,
            "POST /v1/auth/refresh": [.fail, .fail, .fail, .respond(200, #"{"session":\#(Self.session("a2", "r2"))}"#)],
            "GET /v1/me": [.respond(200, #"{"user":\#(Self.user),"entitlements":{"plan_state":"free","capabilities":{},"limits":{},"credits":{},"trial":null,"read_only":false,"tier":null,"subscription":null,"evaluated_at":"2026-11-21T10:00:00Z"}}"#)],
        ])
        let store = MemoryTokenStore()
        let client = try await Self.signedIn(transport, clock: clock, store: store)
        clock.advance(by: 900)  // The access token has run out.

        // Three tries (the first and two retries), waits of 0.5 and 1 s, then the failure; the
        // session stays.
        await #expect(throws: GatehouseClientError.self) { try await client.refreshUser() }
        #expect(Array(clock.waits.prefix(2)) == [0.5, 1])
        #expect(await client.state.user != nil)

        // The network is back: the SDK's own retry (after 0.5 s more) refreshes, with no call
        // needed; the new token is saved, and the next call goes through without a refresh.
        #expect(await SessionResilienceTests.refreshes(transport, reaching: 4) == 4)
        _ = try await client.refreshUser()
        #expect(clock.waits == [0.5, 1, 0.5])
        #expect(try store.load()?.refreshToken == "r2")
        #expect(await client.isOffline == false)
        #expect(transport.paths.filter { $0 == "POST /v1/auth/refresh" }.count == 4)
    }

    @Test func aWrongPasswordIsNotATokenProblem() async throws {
        let transport = ScriptedTransport([
            Self.login.0: Self.login.1,
            "POST /v1/auth/password/change": [
                .respond(401, #"{"error":{"code":"invalid_credentials","message":"Incorrect email or password."}}"#)
            ],
        ])
        let client = try await Self.signedIn(transport)
        await #expect(throws: GatehouseClientError.self) { try await client.changePassword(current: "bad", new: "new password") }
        // No refresh was attempted for an answer about the password, not the token.
        #expect(!transport.paths.contains("POST /v1/auth/refresh"))
        #expect(await client.state.user != nil)
    }

    @Test func theServerEndingTheSessionSignsOutWithItsReason() async throws {
        let transport = ScriptedTransport([
            Self.login.0: Self.login.1,
            "GET /v1/me": [.respond(401, #"{"error":{"code":"token_expired","message":"Expired."}}"#)],
            "POST /v1/auth/refresh": [.respond(401, #"{"error":{"code":"session_revoked","message":"This session was ended."}}"#)],
        ])
        let store = MemoryTokenStore()
        let client = try await Self.signedIn(transport, store: store)
        let stream = await client.authStateChanges
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == .initial(.signedIn(try JSONDecoder().decode(UserPayload.self, from: Data(Self.user.utf8)), offline: false)))
        await #expect(throws: GatehouseClientError.self) { try await client.refreshUser() }
        #expect(await client.state == .signedOut(.sessionRevoked))
        #expect(try store.load() == nil)
        #expect(await iterator.next() == .signedOut(.sessionRevoked))
    }

    static func snapshot(_ plan: String, source: String? = nil) -> String {
        let subscription = source.map {
            #"{"source":"\#($0)","product_id":"price_premium","status":"active","renews_at":null,"expires_at":"2026-12-21T10:00:00Z","will_renew":true}"#
        }
        return #"{"plan_state":"\#(plan)","capabilities":{},"limits":{},"credits":{},"trial":null,"read_only":false,"tier":null,"subscription":\#(subscription ?? "null"),"sources":[\#(subscription ?? "")],"evaluated_at":"2026-11-21T10:00:00Z"}"#
    }

    /// Issue 44: the checkout posts the price and both return URLs and answers Stripe's page;
    /// with no URL passed and no return address it refuses on the device, sending nothing; the
    /// server's `unknown_price` arrives as itself.
    @Test func stripeCheckoutPostsThePriceAndTheReturnURLs() async throws {
        let transport = ScriptedTransport([
            Self.login.0: Self.login.1,
            "POST /v1/purchases/stripe/checkout": [
                .respond(200, #"{"url":"https://checkout.stripe.com/c/pay/cs_test_a1","session_id":"cs_test_a1"}"#),
                .respond(400, #"{"error":{"code":"unknown_price","message":"This plan isn't sold here."}}"#),
            ],
        ])
        let client = try await Self.signedIn(transport)
        let back = try #require(URL(string: "hannahhealth://auth"))
        let page = try await client.stripeCheckoutURL(price: "price_premium", successURL: back, cancelURL: back)
        #expect(page.absoluteString == "https://checkout.stripe.com/c/pay/cs_test_a1")
        let sent = try #require(transport.requests.last { $0.url.path == "/v1/purchases/stripe/checkout" })
        #expect(sent.method == "POST" && sent.headers["Authorization"] == "Bearer a1")
        let body = try JSONDecoder().decode(StripeCheckoutRequest.self, from: try #require(sent.body))
        #expect(body == StripeCheckoutRequest(price: "price_premium", successURL: "hannahhealth://auth", cancelURL: "hannahhealth://auth"))
        #expect(try JSONSerialization.jsonObject(with: sent.body!) as? [String: String]
            == ["price": "price_premium", "success_url": "hannahhealth://auth", "cancel_url": "hannahhealth://auth"])

        // No return address (no configuration loaded, no `appLinks`): refused here.
        do throws(GatehouseClientError) {
            _ = try await client.stripeCheckoutURL(price: "price_premium")
            Issue.record("a checkout without a return address was sent")
        } catch {
            #expect(error.code == .invalidRedirect && error.status == nil)
        }
        #expect(transport.paths.filter { $0 == "POST /v1/purchases/stripe/checkout" }.count == 1)

        do throws(GatehouseClientError) {
            _ = try await client.stripeCheckoutURL(price: "price_nope", successURL: back, cancelURL: back)
            Issue.record("an unknown price was taken")
        } catch {
            #expect(error.code == .unknownPrice && error.status == 400 && error.message == "This plan isn't sold here.")
        }
    }

    /// Issue 44: back from Stripe, the snapshot is read again while it has not changed (the
    /// webhook trails the redirect), and the new plan is kept and announced.
    @Test func backFromStripeTheSnapshotIsReadUntilThePlanChanges() async throws {
        let clock = TestClientClock()
        let transport = ScriptedTransport([
            Self.login.0: Self.login.1,
            "GET /v1/entitlements": [
                .respond(200, Self.snapshot("free")), .respond(200, Self.snapshot("free")), .respond(200, Self.snapshot("free")),
                .respond(200, Self.snapshot("pro", source: "stripe")),
            ],
        ])
        let client = try await Self.signedIn(transport, clock: clock)
        #expect(try await client.entitlements().planState == .free)
        let after = await client.didReturnFromStripe()
        #expect(after?.planState == .pro && after?.subscription?.source == "stripe" && after?.sources?.map(\.source) == ["stripe"])
        #expect(await client.currentEntitlements?.planState == .pro)
        #expect(clock.waits == [0.5, 1])
        #expect(transport.paths.filter { $0 == "GET /v1/entitlements" }.count == 4)
    }

    @Test func theTokenFileIsPrivate() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-\(UUID().uuidString)/session.json")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = FileTokenStore(url: url)
        let saved = StoredSession(refreshToken: "secret", sessionID: "s", installID: "i", provider: "email", user: nil)
        try store.save(saved)
        try store.save(saved)
        let permissions = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        #expect(try store.load() == saved)
        // Nothing but the file itself is left in the directory (no temporary copies).
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path) == ["session.json"])
        try store.clear()
        #expect(try store.load() == nil)
    }

    @Test @MainActor func upsellAndAvatar() throws {
        let upsell = UpsellPolicy()
        #expect(upsell.shouldShowInline() && !upsell.shouldShowInline() && upsell.shouldShowOnRequest())
        upsell.newSession()
        #expect(upsell.shouldShowInline())

        var user = try JSONDecoder().decode(UserPayload.self, from: Data(Self.user.utf8))
        #expect(AvatarPlaceholder(user: user).initials == "A")
        user.displayName = "maya lee-tan"
        let tile = AvatarPlaceholder(user: user)
        #expect(tile.initials == "ML" && tile.color.hasPrefix("#"))
        #expect(AvatarPlaceholder(user: user) == tile)
        user.displayName = nil
        user.email = nil
        #expect(AvatarPlaceholder(user: user).initials == "?" && AvatarPlaceholder(user: user).color == tile.color)
    }
}
