import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseVerifier
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The context of the sample app backend that `GatehouseVerifier` protects.
struct SampleBackendContext: GatehouseUserContext {
    var coreContext: CoreRequestContextStorage
    var gatehouseUser: GatehouseUser?
    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}

/// Hannah's backend middleware (issue 7, item 7): another Hummingbird app with a costly
/// `/ai/chat` route, protected by `GatehouseVerifier` against a live Gatehouse on a loopback port.
@Suite struct VerifierTests {
    /// Signs in to Hannah's Gatehouse by magic link; the trial starts with the account.
    static func signIn(_ api: AuthClient, _ config: GatehouseConfig, _ email: String) async throws -> SignInResponse {
        #expect(try await api.post("/v1/auth/magic-link", #"{"email": "\#(email)"}"#).status == .accepted)
        let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link") { $0.recipient == email }
        let link = try EmailFlowTests.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/magic-link")
        return try await api.post("/v1/auth/magic-link/verify", #"{"token": "\#(link)"}"#).json(SignInResponse.self)
    }

    static func backend(_ access: GatehouseAccess, meter: UsageMeter) -> Router<SampleBackendContext> {
        let router = Router(context: SampleBackendContext.self)
        router.group("ai")
            .add(middleware: GatehouseMiddleware<SampleBackendContext>(access: access, action: "ai_chat", usage: meter))
            .post("chat") { _, context in "answer for \(context.gatehouseUser?.userID ?? "?")" }
        router.group("history")
            .add(middleware: GatehouseMiddleware<SampleBackendContext>(access: access, action: "view_history"))
            .get { _, context in "history of \(context.gatehouseUser?.userID ?? "?")" }
        return router
    }

    @Test func protectsAnAppsOwnAPI() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "hannah", clock: clock, setup: .live) { gatehouse, config in
            let api = AuthClient(client: gatehouse)
            let port = try #require(gatehouse.port)
            let access = GatehouseAccess(
                baseURL: URL(string: "http://127.0.0.1:\(port)")!, audience: config.audience, issuer: config.issuer, clock: clock)
            let meter = UsageMeter(limits: ["ai_chat": .init(requests: 3, per: 60)], clock: clock)
            let app = Application(router: Self.backend(access, meter: meter))
            let session = try await Self.signIn(api, config, "maya@example.com")
            let user = session.user.id

            try await app.test(.router) { backend in
                func chat(_ token: String?) async throws -> TestResponse {
                    var headers: HTTPFields = [:]
                    if let token { headers[.authorization] = "Bearer \(token)" }
                    return try await backend.execute(uri: "/ai/chat", method: .post, headers: headers)
                }

                // No token, a made-up one, a tampered one: 401 in the contract's shape.
                let missing = try await chat(nil)
                #expect(missing.status == .unauthorized && missing.error?.code == .unauthorized)
                #expect(missing.headers[.wwwAuthenticate] == "Bearer")
                #expect(try await chat("not.a.token").status == .unauthorized)
                let parts = session.session.accessToken.split(separator: ".").map(String.init)
                var claims = try jwtParts(session.session.accessToken).claims
                claims["plan"] = "pro"
                claims["plan_expires_at"] = nil
                let forged = "\(parts[0]).\(Data(try JSONSerialization.data(withJSONObject: claims)).base64URLEncoded).\(parts[2])"
                #expect(try await chat(forged).status == .unauthorized)

                // Day 1 of the trial: allowed, the handler sees who it is.
                let first = try await chat(session.session.accessToken)
                #expect(first.status == .ok && String(buffer: first.body) == "answer for \(user)")

                // Per-user usage and the limit: 3 a minute.
                #expect(try await chat(session.session.accessToken).status == .ok)
                #expect(try await chat(session.session.accessToken).status == .ok)
                let limited = try await chat(session.session.accessToken)
                #expect(limited.status == .tooManyRequests && limited.error?.code == .rateLimited && limited.headers[.retryAfter] == "60")
                #expect(await meter.usage(of: user) == ["ai_chat": 3])
                clock.advance(by: 61)

                // Keys rotate: a token signed by the new key is taken (one refetch on its kid),
                // and the old token still is while it lives.
                #expect(try await gatehouse.execute(uri: "/admin/v1/keys/rotate", method: .post, headers: TestApp.adminHeaders).status == .ok)
                let rotated = try await api.refresh(session.session.refreshToken).json(SessionResponse.self)
                #expect(try jwtParts(rotated.session.accessToken).header["kid"] as? String != jwtParts(session.session.accessToken).header["kid"] as? String)
                #expect(try await chat(rotated.session.accessToken).status == .ok)
                #expect(try await chat(session.session.accessToken).status == .ok)

                // A token for another audience is refused.
                let elsewhere = GatehouseAccess(
                    baseURL: URL(string: "http://127.0.0.1:\(port)")!, audience: "another-app", issuer: config.issuer, clock: clock)
                let other = try await Application(router: Self.backend(elsewhere, meter: UsageMeter(limits: [:]))).test(.router) { client in
                    try await client.execute(uri: "/ai/chat", method: .post, headers: [.authorization: "Bearer \(rotated.session.accessToken)"])
                }
                #expect(other.status == .unauthorized)

                // Minutes before the trial ends: a fresh token, plan `trial`, `plan_expires_at` at the end.
                let trialEnd = Date(timeIntervalSince1970: TimeInterval(try #require(jwtParts(rotated.session.accessToken).claims["plan_expires_at"] as? Int)))
                clock.set(trialEnd - 300)
                let late = try await api.refresh(rotated.session.refreshToken).json(SessionResponse.self)
                #expect(try await chat(late.session.accessToken).status == .ok)

                // The trial ends while that token still lives: 403 with the gate decision, at once.
                clock.set(trialEnd + 60)
                let refused = try await chat(late.session.accessToken)
                #expect(refused.status == .forbidden && refused.error?.code == .planRequired, "\(String(buffer: refused.body))")
                #expect(refused.error?.details?["gate"] == .string("paywall"))
                #expect(refused.error?.details?["reason_code"] == .string("trial_expired"))
                #expect(refused.error?.message == "Your free trial has ended. Subscribe to keep using Hannah Health.")
                // Past data stays readable.
                let history = try await backend.execute(
                    uri: "/history", method: .get, headers: [.authorization: "Bearer \(late.session.accessToken)"])
                #expect(history.status == .ok)
            }
        }
    }

    /// Without Gatehouse reachable and nothing cached, the backend says so (503) rather than
    /// letting anyone in or calling every token bad.
    @Test func gatehouseUnreachableIsAServiceError() async throws {
        let access = GatehouseAccess(
            baseURL: URL(string: "http://127.0.0.1:9")!, audience: "hannah",
            fetch: GatehouseFetcher { _ in throw GatehouseFetcher.BadStatus(status: 502) })
        let app = Application(router: Self.backend(access, meter: UsageMeter(limits: [:])))
        try await app.test(.router) { client in
            let header = Data(#"{"alg":"ES256","typ":"at+jwt","kid":"k1"}"#.utf8).base64URLEncoded
            let token = "\(header).\(Data("{}".utf8).base64URLEncoded).\(Data(count: 64).base64URLEncoded)"
            let response = try await client.execute(uri: "/ai/chat", method: .post, headers: [.authorization: "Bearer \(token)"])
            #expect(response.status == .serviceUnavailable && response.error?.code == .serviceUnavailable)
        }
    }
}

extension VerifierTests {
    /// The OpenID provider's access tokens for a resource server (issue 45): a backend made with
    /// its own audience reads a client's token offline, a person's and the client's own; the same
    /// token is refused for another audience, and never passes for one of the app's.
    @Test func providerAccessTokensForAResourceServer() async throws {
        try await TestApp.run(.sqlite, setup: .live) { gatehouse, config in
            let port = try #require(gatehouse.port)
            let resource = "https://api.handz.example"
            let backend = try await OpenID.register(gatehouse, scopes: ["openid", "email", "api:read"], audience: resource)
            func verifier(_ audience: String) -> AccessTokenVerifier {
                AccessTokenVerifier(
                    jwksURL: URL(string: "http://127.0.0.1:\(port)/.well-known/jwks.json")!, issuer: config.issuer, audience: audience,
                    fetch: .http())
            }
            let own = try await OpenID.token(gatehouse, ["grant_type": "client_credentials", "scope": "api:read"], as: backend)
            #expect(own.status == .ok, "\(own.text)")
            let token = try #require(own.object["access_token"] as? String)
            let access = try await verifier(resource).verifyClientAccess(token)
            #expect(access.subject == backend.clientID && access.clientID == backend.clientID && access.userID == nil)
            #expect(access.scopes == ["api:read"] && access.sessionID == nil)
            await #expect(throws: AccessTokenVerifier.Failure.wrongAudience) { try await verifier("https://other.example").verifyClientAccess(token) }
            await #expect(throws: AccessTokenVerifier.Failure.wrongAudience) { try await verifier(resource).verify(token) }
            await #expect(throws: AccessTokenVerifier.Failure.wrongAudience) { try await verifier(config.audience).verify(token) }

            // A person's token through the code flow carries the account.
            let (code, codeVerifier) = try await OpenID.code(gatehouse, for: backend, email: "resource@example.com", scope: "openid email")
            let person = try await OpenID.exchange(gatehouse, code: code, verifier: codeVerifier, as: backend).object
            let personal = try await verifier(resource).verifyClientAccess(try #require(person["access_token"] as? String))
            let id = try jwtParts(try #require(person["id_token"] as? String)).claims
            #expect(personal.userID == id["sub"] as? String && personal.userID != nil && personal.sessionID == id["sid"] as? String)
            #expect(personal.scopes == ["openid", "email"] && personal.clientID == backend.clientID)
            // The app's own token is not a client's.
            let app = try await AuthClient(client: gatehouse).login("resource@example.com").json(AuthResponse.self)
            await #expect(throws: AccessTokenVerifier.Failure.malformed) { try await verifier(config.audience).verifyClientAccess(app.session.accessToken) }
            #expect(try await verifier(config.audience).verify(app.session.accessToken).userID == personal.userID)
        }
    }
}
