import Crypto
import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The OpenID provider (issue 45) under attack, through HTTP on both databases: each attack
/// the issue lists is refused, with the answer RFC 6749 and RFC 9700 name.
@Suite struct OpenIDAttackTests {
    /// A different path, port, case or trailing slash is another redirect URI: the page says so
    /// and nothing is sent to it.
    @Test(arguments: Backend.available)
    func redirectURIsMatchExactly(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let registered = try await OpenID.register(client)
            let (_, challenge) = OpenID.pkce()
            for variant in [
                "http://127.0.0.1:9999/cb/", "http://127.0.0.1:9999/CB", "http://127.0.0.1:9998/cb", "http://127.0.0.1:9999/cb/x",
                "http://127.0.0.1:9999/c", "http://localhost:9999/cb", "https://127.0.0.1:9999/cb", "http://127.0.0.1:9999/cb?x=1",
            ] {
                let page = try await ProviderBrowser(client).get(OpenID.authorizeQuery(registered, challenge: challenge, redirect: variant))
                #expect(page.status == .badRequest, "\(variant)")
                #expect(ProviderBrowser.state(page) == "error" && page.headers[.location] == nil, "\(variant)")
            }
            // The registered one, exactly, reaches the sign-in page.
            let page = try await ProviderBrowser(client).get(OpenID.authorizeQuery(registered, challenge: challenge))
            #expect(page.status == .ok && ProviderBrowser.state(page) == "sign-in")
            // An unknown client is refused the same way.
            var unknown = registered
            unknown.clientID = "gh_unknown"
            #expect(ProviderBrowser.state(try await ProviderBrowser(client).get(OpenID.authorizeQuery(unknown, challenge: challenge))) == "error")
        }
    }

    /// 20 copies of one code released together: one set of tokens at most, and the second use
    /// revokes it (the family: its refresh token and access token stop working).
    @Test(arguments: Backend.available)
    func aCodeUsedTwiceRevokesWhatItIssued(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let registered = try await OpenID.register(client)
            let (code, verifier) = try await OpenID.code(client, for: registered, email: "race@example.com")
            let body = ProviderBrowser.form(["grant_type": "authorization_code", "code": code, "code_verifier": verifier, "redirect_uri": OpenID.redirect])
            let basic = "Basic " + Data("\(registered.clientID):\(registered.clientSecret!)".utf8).base64EncodedString()
            var head = "POST /oauth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: \(basic)\r\n"
            head += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
            let request = Array((head + body).utf8)
            let answers = try await BurstGate.exclusive {
                try await LastByteRace.send(port: try #require(client.port), request, copies: 20)
            }
            let issued = answers.filter { $0.status == 200 }
            #expect(issued.count <= 1, "\(answers.map(\.status))")
            #expect(answers.filter { $0.status == 400 }.count >= 19, "\(answers.map(\.status))")
            if let tokens = issued.first?.json {
                // Whichever copy came after the winner revoked what the winner got.
                let access = try #require(tokens["access_token"] as? String)
                #expect(try await OpenID.userinfo(client, access).status == .unauthorized)
                let refresh = try await OpenID.token(
                    client, ["grant_type": "refresh_token", "refresh_token": try #require(tokens["refresh_token"] as? String)], as: registered)
                #expect(refresh.status == .badRequest && OpenID.oauthError(refresh) == "invalid_grant")
            }
            let audit = try await client.execute(uri: "/admin/v1/audit?limit=100", method: .get, headers: TestApp.adminHeaders).json(AuditList.self)
            #expect(audit.events.contains { $0.event == "oauth_code_reuse" && $0.outcome == "session_revoked" } == (issued.count == 1))
            // Once more, one at a time: still refused.
            let again = try await OpenID.exchange(client, code: code, verifier: verifier, as: registered)
            #expect(again.status == .badRequest && OpenID.oauthError(again) == "invalid_grant")
        }
    }

    /// PKCE S256 is required of every client; `plain`, a missing or wrong verifier are refused,
    /// and a code that met a wrong verifier is spent.
    @Test(arguments: Backend.available)
    func pkceIsRequiredAndChecked(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let registered = try await OpenID.register(client, isPublic: true)
            let (verifier, challenge) = OpenID.pkce()
            for extra in [["code_challenge": ""], ["code_challenge_method": "plain", "code_challenge": verifier], ["code_challenge_method": ""]] {
                let page = try await ProviderBrowser(client).get(OpenID.authorizeQuery(registered, challenge: challenge, extra: extra))
                #expect(page.status == .seeOther, "\(extra)")
                let back = ProviderBrowser.location(page)
                #expect(back["error"] == "invalid_request" && back["state"] == "state-1", "\(extra) \(back)")
                #expect(back["iss"] == "http://127.0.0.1:8080" && back["code"] == nil)
            }
            let first = try await OpenID.code(client, for: registered, email: "pkce@example.com")
            let missing = try await OpenID.token(
                client, ["grant_type": "authorization_code", "code": first.code, "redirect_uri": OpenID.redirect], as: registered)
            #expect(missing.status == .badRequest && OpenID.oauthError(missing) == "invalid_grant")
            // The code went with that attempt: the right verifier comes too late.
            #expect(OpenID.oauthError(try await OpenID.exchange(client, code: first.code, verifier: first.verifier, as: registered)) == "invalid_grant")

            let browser = ProviderBrowser(client)
            let back = try await OpenID.authorize(browser, registered, email: "pkce@example.com", challenge: challenge)
            let code = try #require(ProviderBrowser.location(back)["code"])
            let wrong = try await OpenID.exchange(client, code: code, verifier: OpenID.pkce().verifier, as: registered)
            #expect(wrong.status == .badRequest && OpenID.oauthError(wrong) == "invalid_grant")
            #expect(OpenID.oauthError(try await OpenID.exchange(client, code: code, verifier: verifier, as: registered)) == "invalid_grant")

            // With the right verifier on a fresh code, the tokens come.
            let fresh = try #require(ProviderBrowser.location(try await OpenID.authorize(browser, registered, email: "pkce@example.com", challenge: challenge))["code"])
            let tokens = try await OpenID.exchange(client, code: fresh, verifier: verifier, as: registered)
            #expect(tokens.status == .ok, "\(tokens.text)")
            let id = try jwtParts(try #require(tokens.object["id_token"] as? String)).claims
            #expect(id["nonce"] as? String == "nonce-1" && id["aud"] as? String == registered.clientID)
        }
    }

    /// A code issued to one client, presented by another (with its own valid credentials).
    @Test(arguments: Backend.available)
    func aCodeOfAnotherClientIsRefused(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let first = try await OpenID.register(client)
            let second = try await OpenID.register(client)
            let (code, verifier) = try await OpenID.code(client, for: first, email: "mixup@example.com")
            let stolen = try await OpenID.exchange(client, code: code, verifier: verifier, as: second)
            #expect(stolen.status == .badRequest && OpenID.oauthError(stolen) == "invalid_grant")
            // A wrong secret for the right client is not a client at all.
            let impostor = try await OpenID.token(
                client, ["grant_type": "authorization_code", "code": code, "code_verifier": verifier, "redirect_uri": OpenID.redirect],
                as: first, secret: "ghs_wrong")
            #expect(impostor.status == .unauthorized && OpenID.oauthError(impostor) == "invalid_client")
            #expect(impostor.headers[.wwwAuthenticate] != nil)
        }
    }

    /// Tokens another issuer signed, or signed by a key this provider does not publish, are
    /// refused by userinfo and introspection.
    @Test(arguments: Backend.available)
    func tokensOfAnotherIssuerAreRefused(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let registered = try await OpenID.register(client)
            let (code, verifier) = try await OpenID.code(client, for: registered, email: "issuer@example.com")
            let tokens = try await OpenID.exchange(client, code: code, verifier: verifier, as: registered).object
            let access = try #require(tokens["access_token"] as? String)
            #expect(try await OpenID.userinfo(client, access).status == .ok)
            // The same claims re-signed by another key under the same kid, and with another issuer.
            let parts = access.split(separator: ".").map(String.init)
            var claims = try jwtParts(access).claims
            let key = P256.Signing.PrivateKey()
            func sign(_ header: String, _ payload: [String: Any]) throws -> String {
                let body = Data(try JSONSerialization.data(withJSONObject: payload)).base64URLEncoded
                let signature = try key.signature(for: Data("\(header).\(body)".utf8)).rawRepresentation.base64URLEncoded
                return "\(header).\(body).\(signature)"
            }
            let forged = try sign(parts[0], claims)
            claims["iss"] = "https://other-issuer.example"
            let otherIssuer = try sign(parts[0], claims)
            for token in [forged, otherIssuer] {
                let answer = try await OpenID.userinfo(client, token)
                #expect(answer.status == .unauthorized && OpenID.oauthError(answer) == "invalid_token")
                let inspected = try await client.execute(
                    uri: "/oauth/introspect", method: .post,
                    headers: [
                        .contentType: "application/x-www-form-urlencoded",
                        .authorization: "Basic " + Data("\(registered.clientID):\(registered.clientSecret!)".utf8).base64EncodedString(),
                    ], body: ByteBuffer(string: ProviderBrowser.form(["token": token])))
                #expect(inspected.object["active"] as? Bool == false)
            }
            // The app's own access token is not one of the provider's either.
            let app = try await AuthClient(client: client).login("issuer@example.com").json(AuthResponse.self)
            #expect(try await OpenID.userinfo(client, app.session.accessToken).status == .unauthorized)
            // Nor is a provider token one of the app's.
            #expect(try await AuthClient(client: client).get("/v1/me", token: access).status == .unauthorized)
        }
    }

    /// The consent form is refused without its CSRF token, from another origin, and from an
    /// opaque one (`Origin: null`); with both it goes through.
    @Test(arguments: Backend.available)
    func consentFormsNeedTheirCSRFTokenAndOrigin(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let registered = try await OpenID.register(client)
            _ = try await AuthClient(client: client).account("consent@example.com", OpenID.password)
            let browser = ProviderBrowser(client)
            let (_, challenge) = OpenID.pkce()
            var fields = ProviderBrowser.hidden(try await browser.get(OpenID.authorizeQuery(registered, challenge: challenge)))
            fields["email"] = "consent@example.com"
            fields["password"] = OpenID.password
            let consent = try await browser.post(fields)
            #expect(ProviderBrowser.state(consent) == "consent", "\(consent.text)")
            var allow = ProviderBrowser.hidden(consent)
            allow["decision"] = "allow"
            var withoutToken = allow
            withoutToken["csrf_token"] = nil
            for (form, origin) in [(withoutToken, browser.origin), (allow, "https://evil.example"), (allow, "null")] {
                let refused = try await browser.post(form, origin: .some(origin))
                #expect(refused.status == .forbidden && ProviderBrowser.state(refused) == "forbidden", "\(origin)")
            }
            let audit = try await client.execute(uri: "/admin/v1/audit?limit=100", method: .get, headers: TestApp.adminHeaders).json(AuditList.self)
            #expect(!audit.events.contains { $0.event == "oauth_consent_granted" })
            let granted = try await browser.post(allow)
            #expect(granted.status == .seeOther && ProviderBrowser.location(granted)["code"] != nil)
            let after = try await client.execute(uri: "/admin/v1/audit?limit=100", method: .get, headers: TestApp.adminHeaders).json(AuditList.self)
            #expect(after.events.contains { $0.event == "oauth_consent_granted" })
        }
    }

    /// Every page of the provider forbids framing and loads nothing from elsewhere; a script runs
    /// only by its nonce.
    @Test func pagesCannotBeFramed() async throws {
        try await TestApp.run(.sqlite, setup: .live) { client, _ in
            let registered = try await OpenID.register(client)
            let (_, challenge) = OpenID.pkce()
            for uri in [OpenID.authorizeQuery(registered, challenge: challenge), "/oauth/authorize?client_id=nobody", "/oauth/handover?code=x"] {
                let page = try await ProviderBrowser(client).get(uri)
                let policy = try #require(page.headers[.contentSecurityPolicy])
                #expect(policy.contains("frame-ancestors 'none'") && policy.contains("default-src 'none'"), "\(uri)")
                #expect(page.headers[HTTPField.Name("X-Frame-Options")!] == "DENY", "\(uri)")
                // The one script (the passkey button's, where the preset has passkeys) runs by its nonce.
                if page.text.contains("<script") {
                    #expect(page.text.contains("<script nonce=") && policy.contains("script-src 'nonce-"), "\(uri)")
                } else {
                    #expect(!policy.contains("script-src"), "\(uri)")
                }
            }
        }
    }

    /// A client's refresh token rotates with the app's reuse detection; a token of the app's is
    /// unknown at `/oauth/token` and a client's at `/v1/auth/refresh`, and neither ends the other.
    @Test(arguments: Backend.available)
    func refreshTokensRotateWithReuseDetection(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, clock: clock, setup: .live) { client, config in
            let registered = try await OpenID.register(client)
            let (code, verifier) = try await OpenID.code(client, for: registered, email: "rotate@example.com")
            let tokens = try await OpenID.exchange(client, code: code, verifier: verifier, as: registered).object
            let first = try #require(tokens["refresh_token"] as? String)
            let rotated = try await OpenID.token(client, ["grant_type": "refresh_token", "refresh_token": first], as: registered)
            #expect(rotated.status == .ok, "\(rotated.text)")
            let second = try #require(rotated.object["refresh_token"] as? String)
            #expect(second != first && rotated.object["id_token"] != nil)
            // At the app's door it is unknown, and its chain is left as it was.
            let app = AuthClient(client: client)
            #expect(try await app.refresh(second).status == .unauthorized)
            let appSession = try await app.login("rotate@example.com").json(AuthResponse.self)
            #expect(OpenID.oauthError(try await OpenID.token(client, ["grant_type": "refresh_token", "refresh_token": appSession.session.refreshToken], as: registered)) == "invalid_grant")
            #expect(try await app.refresh(appSession.session.refreshToken).status == .ok)
            // The rotated token after the reuse interval: the family ends.
            clock.advance(by: TimeInterval(config.preset.tokens.refreshReuseIntervalSeconds + 5))
            let replay = try await OpenID.token(client, ["grant_type": "refresh_token", "refresh_token": first], as: registered)
            #expect(replay.status == .badRequest && OpenID.oauthError(replay) == "invalid_grant")
            #expect(OpenID.oauthError(try await OpenID.token(client, ["grant_type": "refresh_token", "refresh_token": second], as: registered)) == "invalid_grant")
            // Without offline_access there is no refresh token at all.
            let (verifier2, challenge2) = OpenID.pkce()
            let back = try await OpenID.authorize(ProviderBrowser(client), registered, email: "rotate@example.com", challenge: challenge2, scope: "openid")
            let short = try await OpenID.exchange(client, code: try #require(ProviderBrowser.location(back)["code"]), verifier: verifier2, as: registered)
            #expect(short.status == .ok && short.object["refresh_token"] == nil && short.object["scope"] as? String == "openid")
        }
    }

    /// Registration refuses what could send a code somewhere unsafe, and audiences that would
    /// make a client's token pass for the app's.
    @Test func clientRegistrationRefusesUnsafeURIs() async throws {
        try await TestApp.run(.sqlite) { client, config in
            func register(_ json: String) async throws -> TestResponse {
                try await client.execute(uri: "/admin/v1/oauth/clients", method: .post, headers: TestApp.adminHeaders, body: ByteBuffer(string: json))
            }
            for uris in [#"["javascript:alert(1)"]"#, #"["http://evil.example/cb"]"#, #"["https://app.example/cb#x"]"#, "[]", #"["/relative"]"#, #"["myapp:/cb"]"#] {
                let answer = try await register(#"{"name": "x", "redirect_uris": \#(uris), "scopes": ["openid"], "public": true}"#)
                #expect(answer.status == .badRequest, "\(uris)")
            }
            let sameAudience = try await register(
                #"{"name": "x", "redirect_uris": ["https://app.example/cb"], "scopes": ["openid"], "public": false, "audience": "\#(config.audience)"}"#)
            #expect(sameAudience.status == .badRequest)
            let publicAPI = try await register(#"{"name": "x", "redirect_uris": ["https://app.example/cb"], "scopes": ["api:read"], "public": true}"#)
            #expect(publicAPI.status == .badRequest)
            let native = try await register(#"{"name": "x", "redirect_uris": ["com.example.app:/cb", "http://127.0.0.1/cb"], "scopes": ["openid"], "public": true}"#)
            #expect(native.status == .created, "\(native.text)")
            #expect(try native.json(OAuthClientPayload.self).clientSecret == nil)
        }
    }

    /// The hand-over code: once, within 60 seconds, while the app's session lives; the browser's
    /// session carries the app's assurance as it is.
    @Test(arguments: Backend.available)
    func theHandOverIsSingleUseAndShortLived(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, clock: clock, setup: .live) { client, _ in
            let registered = try await OpenID.register(client, isPublic: true, firstParty: true, initiateLoginURI: "http://127.0.0.1:9999/login")
            let app = AuthClient(client: client)
            let account = try await app.account("handover@example.com", OpenID.password)
            func handover(_ token: String) async throws -> String {
                let made = try await app.post("/v1/oauth/handover", #"{"client_id": "\#(registered.clientID)"}"#, token: token)
                #expect(made.status == .ok, "\(made.text)")
                let url = try #require(URLComponents(string: try made.json(HandoverResponse.self).url))
                #expect(url.path == "/oauth/handover" && url.queryItems?.map(\.name) == ["code"])
                return "/oauth/handover?" + (url.percentEncodedQuery ?? "")
            }
            let link = try await handover(account.session.accessToken)
            let browser = ProviderBrowser(client)
            let opened = try await browser.confirmHandover(link)
            #expect(opened.status == .seeOther && opened.headers[.location] == "http://127.0.0.1:9999/login?iss=http://127.0.0.1:8080")
            // The browser is signed in: a first-party client's request needs no sign-in (this
            // one is public on a loopback port, so it shows "Continue as …").
            let (verifier, challenge) = OpenID.pkce()
            let back = try await OpenID.authorize(browser, registered, email: "unused", challenge: challenge)
            let code = try #require(ProviderBrowser.location(back)["code"])
            let tokens = try await OpenID.exchange(client, code: code, verifier: verifier, as: registered).object
            let id = try jwtParts(try #require(tokens["id_token"] as? String)).claims
            #expect(id["sub"] as? String == account.user.id && id["acr"] as? String == "aal1" && id["amr"] as? [String] == ["pwd"])
            // Again: refused, in a fresh browser.
            let again = try await ProviderBrowser(client).get(link)
            #expect(again.status == .badRequest && ProviderBrowser.state(again) == "error")
            // After 60 seconds: refused.
            let late = try await handover(account.session.accessToken)
            clock.advance(by: 61)
            #expect(ProviderBrowser.state(try await ProviderBrowser(client).get(late)) == "error")
            // The app's session ended before the link was opened: refused.
            let orphan = try await handover(account.session.accessToken)
            #expect(try await app.post("/v1/auth/logout", #"{"scope": "local"}"#, token: account.session.accessToken).status == .noContent)
            #expect(ProviderBrowser.state(try await ProviderBrowser(client).get(orphan)) == "error")
            // A client without initiate_login_uri cannot be handed over to.
            let other = try await OpenID.register(client)
            let fresh = try await app.login("handover@example.com").json(AuthResponse.self)
            let refused = try await app.post("/v1/oauth/handover", #"{"client_id": "\#(other.clientID)"}"#, token: fresh.session.accessToken)
            #expect(refused.status == .badRequest)
        }
    }
}
