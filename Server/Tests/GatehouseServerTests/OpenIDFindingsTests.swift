import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Issue 60: what an attacker found where the OpenID provider was written beside the app's
/// sessions, each through HTTP on both databases (the browser findings are also driven in
/// Chromium: `OpenIDProviderTests`).
@Suite struct OpenIDFindingsTests {
    static let https = "https://app.example/cb"

    /// Finding 1 (RFC 8252 §8.6): a public client on a loopback port (any local process can
    /// listen there) never gets a code without a page, even after consent, and `prompt=none`
    /// is refused with `interaction_required`; a confidential client, or a public one whose
    /// `https` redirect proves it, gets its code at once.
    @Test(arguments: Backend.available)
    func aPublicClientAlwaysShowsThePersonAPage(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            _ = try await AuthClient(client: client).account("native@example.com", OpenID.password)
            let browser = ProviderBrowser(client)
            for firstParty in [false, true] {
                let native = try await OpenID.register(client, isPublic: true, firstParty: firstParty)
                let (_, challenge) = OpenID.pkce()
                // The first time: the sign-in (and, third-party, the consent) are the pages.
                _ = try await OpenID.authorize(browser, native, email: "native@example.com", challenge: challenge)
                // Again, signed in and consented: "Continue as …", naming the account.
                let again = try await browser.get(OpenID.authorizeQuery(native, challenge: challenge))
                #expect(again.status == .ok && ProviderBrowser.state(again) == "continue", "\(again.status) \(again.headers[.location] ?? "")")
                #expect(again.text.contains("native@example.com") && again.headers[.location] == nil)
                let none = try await browser.get(OpenID.authorizeQuery(native, challenge: challenge, extra: ["prompt": "none"]))
                #expect(none.status == .seeOther && ProviderBrowser.location(none)["error"] == "interaction_required")
                #expect(ProviderBrowser.location(none)["code"] == nil)
                // The tap gives the code.
                var fields = ProviderBrowser.hidden(again)
                fields["decision"] = "allow"
                #expect(ProviderBrowser.location(try await browser.post(fields))["code"] != nil)
            }
            // An https redirect (a claimed link) proves the client: no page.
            let claimed = try await OpenID.register(client, isPublic: true, firstParty: true, redirects: [Self.https])
            let (_, challenge) = OpenID.pkce()
            let direct = try await browser.get(OpenID.authorizeQuery(claimed, challenge: challenge, redirect: Self.https))
            #expect(direct.status == .seeOther && ProviderBrowser.location(direct)["code"] != nil)
            // A confidential first-party client: no page either.
            let confidential = try await OpenID.register(client, firstParty: true)
            let code = try await browser.get(OpenID.authorizeQuery(confidential, challenge: challenge))
            #expect(code.status == .seeOther && ProviderBrowser.location(code)["code"] != nil)
        }
    }

    /// Finding 2 (R124, login CSRF): a hand-over link lands on a page naming the account and
    /// the client, and signs nothing in until this browser's person confirms it (a forged post
    /// without the page's CSRF token is refused); the web session it opens is for the link's
    /// client only.
    @Test(arguments: Backend.available)
    func aHandOverLinkIsConfirmedAndServesItsClientOnly(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let target = try await OpenID.register(client, firstParty: true, initiateLoginURI: "http://127.0.0.1:9999/login")
            let other = try await OpenID.register(client, firstParty: true)
            let app = AuthClient(client: client)
            let attacker = try await app.account("attacker@example.com", OpenID.password)
            let made = try await app.post("/v1/oauth/handover", #"{"client_id": "\#(target.clientID)"}"#, token: attacker.session.accessToken)
            let url = try #require(URLComponents(string: try made.json(HandoverResponse.self).url))
            let link = "/oauth/handover?" + (url.percentEncodedQuery ?? "")
            // The victim's browser follows the link from another site: a page, no sign-in.
            let victim = ProviderBrowser(client)
            let page = try await victim.get(link)
            #expect(page.status == .ok && ProviderBrowser.state(page) == "handover" && page.headers[.location] == nil)
            #expect(page.text.contains("attacker@example.com") && page.text.contains("Dashboard"))
            #expect(!victim.cookies.keys.contains("gatehouse_op"))
            // Opening it again still shows the page: the code was not used by looking.
            #expect(ProviderBrowser.state(try await victim.get(link)) == "handover")
            // A cross-site post of the confirmation (no CSRF cookie of this browser's) is refused.
            let forged = try await ProviderBrowser(client).post(["code": url.queryItems?.first?.value ?? "", "decision": "continue", "csrf_token": "x"], path: "/oauth/handover")
            #expect(forged.status == .forbidden)
            let cancelled = try await victim.post(ProviderBrowser.hidden(page).merging(["decision": "cancel"]) { $1 }, path: "/oauth/handover")
            #expect(cancelled.headers[.location] == nil && !victim.cookies.keys.contains("gatehouse_op"))
            // Confirmed by the person: signed in, for the link's client.
            let own = try await app.account("own@example.com", OpenID.password)
            let ownMade = try await app.post("/v1/oauth/handover", #"{"client_id": "\#(target.clientID)"}"#, token: own.session.accessToken)
            let ownURL = try #require(URLComponents(string: try ownMade.json(HandoverResponse.self).url))
            let browser = ProviderBrowser(client)
            let confirmed = try await browser.confirmHandover("/oauth/handover?" + (ownURL.percentEncodedQuery ?? ""))
            #expect(confirmed.status == .seeOther && browser.cookies.keys.contains("gatehouse_op"))
            let (_, challenge) = OpenID.pkce()
            let forTarget = try await browser.get(OpenID.authorizeQuery(target, challenge: challenge))
            #expect(ProviderBrowser.location(forTarget)["code"] != nil)
            // Another client: the hand-over's web session does not sign the browser in there.
            let forOther = try await browser.get(OpenID.authorizeQuery(other, challenge: challenge))
            #expect(forOther.status == .ok && ProviderBrowser.state(forOther) == "sign-in")
        }
    }

    /// Finding 3 (logout CSRF): `/oauth/logout` with another account's `id_token_hint` ends that
    /// token's session but not this browser's sign-in; a page asks this browser's person.
    @Test(arguments: Backend.available)
    func logoutWithAnotherAccountsHintAsksFirst(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let registered = try await OpenID.register(client, firstParty: true)
            let (code, verifier) = try await OpenID.code(client, for: registered, email: "attacker@example.com", scope: "openid")
            let hint = try #require(try await OpenID.exchange(client, code: code, verifier: verifier, as: registered).object["id_token"] as? String)
            _ = try await AuthClient(client: client).account("victim@example.com", OpenID.password)
            let victim = ProviderBrowser(client)
            let (_, challenge) = OpenID.pkce()
            _ = try await OpenID.authorize(victim, registered, email: "victim@example.com", challenge: challenge)
            let cookie = try #require(victim.cookies["gatehouse_op"])
            let forged = try await victim.get("/oauth/logout?" + ProviderBrowser.form(["id_token_hint": hint]))
            #expect(forged.status == .ok && ProviderBrowser.state(forged) == "logout-confirm")
            #expect(forged.text.contains("victim@example.com") && victim.cookies["gatehouse_op"] == cookie)
            // Still signed in: a code at once.
            #expect(ProviderBrowser.location(try await victim.get(OpenID.authorizeQuery(registered, challenge: challenge)))["code"] != nil)
            // "Stay signed in" keeps it; "Sign out", from the page, ends it.
            var fields = ProviderBrowser.hidden(forged)
            fields["decision"] = "stay"
            #expect(ProviderBrowser.state(try await victim.post(fields, path: "/oauth/logout")) == "still-signed-in")
            #expect(victim.cookies["gatehouse_op"] == cookie)
            fields["decision"] = "sign_out"
            #expect(try await victim.post(["decision": "sign_out"], origin: "https://evil.example", path: "/oauth/logout").status == .forbidden)
            #expect(ProviderBrowser.state(try await victim.post(fields, path: "/oauth/logout")) == "logged-out")
            #expect(victim.cookies["gatehouse_op"] == nil)
            #expect(ProviderBrowser.state(try await ProviderBrowser(client).get(OpenID.authorizeQuery(registered, challenge: challenge))) == "sign-in")
        }
    }

    /// Finding 4 (OIDC Core §3.1.2.1): `prompt=login` and `max_age` force a fresh sign-in, a
    /// post that drops or skips it gets no code from the old sign-in, and `auth_time` is the
    /// new sign-in's.
    @Test(arguments: Backend.available)
    func promptLoginAndMaxAgeForceAFreshSignIn(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, clock: clock, setup: .live) { client, _ in
            let registered = try await OpenID.register(client, firstParty: true)
            _ = try await AuthClient(client: client).account("fresh@example.com", OpenID.password)
            let browser = ProviderBrowser(client)
            let (verifier, challenge) = OpenID.pkce()
            _ = try await OpenID.authorize(browser, registered, email: "fresh@example.com", challenge: challenge)
            clock.advance(by: 600)
            for extra in [["prompt": "login"], ["max_age": "60"]] {
                let page = try await browser.get(OpenID.authorizeQuery(registered, challenge: challenge, extra: extra))
                #expect(page.status == .ok && ProviderBrowser.state(page) == "sign-in", "\(extra)")
                // The page carries the requirement: a post of the consent step without signing in
                // gets the sign-in again, not a code from the old sign-in.
                var skipped = ProviderBrowser.hidden(page)
                #expect(skipped[extra.keys.first!] == extra.values.first!, "\(skipped)")
                skipped["step"] = "consent"
                skipped["decision"] = "allow"
                let answer = try await browser.post(skipped)
                #expect(ProviderBrowser.state(answer) == "sign-in" && answer.headers[.location] == nil, "\(extra)")
            }
            let signInAt = clock.now
            let back = try await OpenID.authorize(browser, registered, email: "fresh@example.com", challenge: challenge, extra: ["prompt": "login", "max_age": "60"])
            let tokens = try await OpenID.exchange(client, code: try #require(ProviderBrowser.location(back)["code"]), verifier: verifier, as: registered)
            let claims = try jwtParts(try #require(tokens.object["id_token"] as? String)).claims
            #expect((claims["auth_time"] as? NSNumber)?.int64Value == signInAt.unixSeconds)
            // Within max_age: no page.
            let within = try await browser.get(OpenID.authorizeQuery(registered, challenge: challenge, extra: ["max_age": "3600"]))
            #expect(ProviderBrowser.location(within)["code"] != nil)
            // max_age that is not a number is the client's mistake.
            let bad = try await browser.get(OpenID.authorizeQuery(registered, challenge: challenge, extra: ["max_age": "soon"]))
            #expect(ProviderBrowser.location(bad)["error"] == "invalid_request")
        }
    }

    /// Finding 5: a used code presented by another client, or by a public client's id without
    /// its verifier, is refused and revokes nothing; only its own client proving the code's
    /// binding sets off the reuse handling.
    @Test(arguments: Backend.available)
    func aReplayedCodeRevokesOnlyWhenItsOwnClientPresentsIt(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let owner = try await OpenID.register(client)
            let stranger = try await OpenID.register(client)
            let (code, verifier) = try await OpenID.code(client, for: owner, email: "replay@example.com")
            let access = try #require(try await OpenID.exchange(client, code: code, verifier: verifier, as: owner).object["access_token"] as? String)
            let byStranger = try await OpenID.exchange(client, code: code, verifier: verifier, as: stranger)
            #expect(OpenID.oauthError(byStranger) == "invalid_grant")
            let noVerifier = try await OpenID.token(
                client, ["grant_type": "authorization_code", "code": code, "code_verifier": OpenID.pkce().verifier, "redirect_uri": OpenID.redirect], as: owner)
            #expect(OpenID.oauthError(noVerifier) == "invalid_grant")
            #expect(try await OpenID.userinfo(client, access).status == .ok)
            // The owner, with the binding: the reuse revokes what the first use issued.
            #expect(OpenID.oauthError(try await OpenID.exchange(client, code: code, verifier: verifier, as: owner)) == "invalid_grant")
            #expect(try await OpenID.userinfo(client, access).status == .unauthorized)
        }
    }

    /// Finding 6: a code issued before the person disconnected the client no longer exchanges
    /// (the consent is re-checked inside the exchange's write).
    @Test(arguments: Backend.available)
    func aCodeDoesNotOutliveTheConsent(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let registered = try await OpenID.register(client)
            let (code, verifier) = try await OpenID.code(client, for: registered, email: "withdrawn@example.com")
            let app = try await AuthClient(client: client).login("withdrawn@example.com").json(AuthResponse.self)
            let revoked = try await client.execute(
                uri: "/v1/me/connections/\(registered.clientID)", method: .delete, headers: [.authorization: "Bearer \(app.session.accessToken)"])
            #expect(revoked.status == .noContent, "\(revoked.text)")
            let late = try await OpenID.exchange(client, code: code, verifier: verifier, as: registered)
            #expect(late.status == .badRequest && OpenID.oauthError(late) == "invalid_grant", "\(late.text)")
        }
    }

    /// Finding 7: the registered redirect URI's own query is kept byte for byte; a repeated
    /// parameter is refused at both endpoints; `client_credentials` with an empty scope is
    /// refused; wrong client secrets are throttled per client and address; a body over the
    /// limit at `/oauth/token` answers in OAuth's shape.
    @Test(arguments: Backend.available)
    func theProtocolsEdgesAreExact(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, config in
            let withQuery = "https://app.example/cb?a=b+c&d=%2B"
            let registered = try await OpenID.register(client, firstParty: true, scopes: ["openid", "api:read"], redirects: [withQuery])
            _ = try await AuthClient(client: client).account("edges@example.com", OpenID.password)
            let browser = ProviderBrowser(client)
            let (_, challenge) = OpenID.pkce()
            var fields = [
                "response_type": "code", "client_id": registered.clientID, "redirect_uri": withQuery, "scope": "openid", "state": "s",
                "code_challenge": challenge, "code_challenge_method": "S256",
            ]
            let signIn = try await browser.get("/oauth/authorize?" + ProviderBrowser.form(fields))
            var form = ProviderBrowser.hidden(signIn)
            form["email"] = "edges@example.com"
            form["password"] = OpenID.password
            let back = try await browser.post(form)
            let location = try #require(back.headers[.location])
            #expect(location.hasPrefix(withQuery + "&code="), "\(location)")
            // A parameter twice: back to the client with invalid_request; the client id twice: a page.
            let twice = try await browser.get("/oauth/authorize?" + ProviderBrowser.form(fields) + "&scope=openid")
            #expect(ProviderBrowser.location(twice)["error"] == "invalid_request" && ProviderBrowser.location(twice)["code"] == nil)
            let clientTwice = try await browser.get("/oauth/authorize?" + ProviderBrowser.form(fields) + "&client_id=other")
            #expect(clientTwice.status == .badRequest && ProviderBrowser.state(clientTwice) == "error")
            fields = [:]
            let basic = "Basic " + Data("\(registered.clientID):\(registered.clientSecret!)".utf8).base64EncodedString()
            let repeated = try await client.execute(
                uri: "/oauth/token", method: .post, headers: [.contentType: "application/x-www-form-urlencoded", .authorization: basic],
                body: ByteBuffer(string: "grant_type=client_credentials&grant_type=client_credentials"))
            #expect(repeated.status == .badRequest && OpenID.oauthError(repeated) == "invalid_request")
            let empty = try await OpenID.token(client, ["grant_type": "client_credentials", "scope": ""], as: registered)
            #expect(empty.status == .badRequest && OpenID.oauthError(empty) == "invalid_scope")
            #expect(try await OpenID.token(client, ["grant_type": "client_credentials"], as: registered).status == .ok)
            // Wrong secrets: the fiftieth locks this address out of the client, the right one too.
            for _ in 0..<50 {
                #expect(try await OpenID.token(client, ["grant_type": "client_credentials"], as: registered, secret: "ghs_wrong").status == .unauthorized)
            }
            let locked = try await OpenID.token(client, ["grant_type": "client_credentials"], as: registered)
            #expect(locked.status == .tooManyRequests && OpenID.oauthError(locked) == "rate_limited" && locked.headers[.retryAfter] != nil)
            // Too large: OAuth's error shape.
            let large = try await client.execute(
                uri: "/oauth/token", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: "grant_type=" + String(repeating: "a", count: config.maxBodyBytes + 1)))
            #expect(large.status == .contentTooLarge && OpenID.oauthError(large) == "invalid_request", "\(large.text)")
        }
    }

    /// Finding 7: registration refuses what a byte-for-byte comparison could read two ways.
    @Test(arguments: Backend.available)
    func registrationRefusesWildcardsAndAmbiguousURIs(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, _ in
            for uri in ["https://*.example.com/cb", "https://example.com/*", "https://app.example.com/cb\n", "https://evil.example\\\\@app.example.com/cb",
                "https://evil.example@app.example.com/cb", "https://app.example.com/c b", "https://app%2Eexample.com/cb"]
            {
                let body = try JSONSerialization.data(withJSONObject: ["name": "x", "redirect_uris": [uri], "scopes": ["openid"], "public": true])
                let answer = try await client.execute(uri: "/admin/v1/oauth/clients", method: .post, headers: TestApp.adminHeaders, body: ByteBuffer(bytes: body))
                #expect(answer.status == .badRequest, "\(uri.debugDescription): \(answer.text)")
            }
        }
    }
}
