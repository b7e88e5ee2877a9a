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

/// The OpenID Foundation's Basic OP conformance expectations that apply to a code-flow provider
/// with PKCE (issue 60), each named by the conformance suite's test (`oidcc-…`) and listed in
/// docs/oidc.md with the test that proves it. Through HTTP on both databases; the full flow with
/// a real relying party (Authlib in Chromium) is `OpenIDProviderTests`.
@Suite struct OpenIDConformanceTests {
    /// `oidcc-discovery-endpoint-verification`: the fields a Basic OP must publish.
    @Test(arguments: Backend.available)
    func discoveryPublishesWhatABasicProviderMust(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let document = try await client.execute(uri: "/.well-known/openid-configuration", method: .get).object
            #expect(document["issuer"] as? String == "http://127.0.0.1:8080")
            for (field, path) in [
                ("authorization_endpoint", "/oauth/authorize"), ("token_endpoint", "/oauth/token"), ("userinfo_endpoint", "/oauth/userinfo"),
                ("jwks_uri", "/.well-known/jwks.json"), ("end_session_endpoint", "/oauth/logout"),
            ] {
                #expect(document[field] as? String == "http://127.0.0.1:8080" + path, "\(field)")
            }
            #expect(document["response_types_supported"] as? [String] == ["code"])
            #expect(document["subject_types_supported"] as? [String] == ["public"])
            #expect(document["id_token_signing_alg_values_supported"] as? [String] == ["ES256"])
            #expect((document["scopes_supported"] as? [String])?.contains("openid") == true)
            #expect(document["code_challenge_methods_supported"] as? [String] == ["S256"])
            #expect(Set(document["prompt_values_supported"] as? [String] ?? []) == ["none", "login", "consent"])
            #expect((document["claims_supported"] as? [String]).map { Set(["sub", "auth_time", "nonce", "at_hash"]).isSubset(of: Set($0)) } == true)
        }
    }

    /// `oidcc-prompt-none-not-logged-in`, `oidcc-prompt-none-logged-in`, and the consent a
    /// third-party client lacks: `login_required`, a code at once, `consent_required`.
    @Test(arguments: Backend.available)
    func promptNoneAnswersWithoutAPage(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let firstParty = try await OpenID.register(client, firstParty: true)
            let thirdParty = try await OpenID.register(client)
            let (_, challenge) = OpenID.pkce()
            let browser = ProviderBrowser(client)
            let out = try await browser.get(OpenID.authorizeQuery(firstParty, challenge: challenge, extra: ["prompt": "none"]))
            #expect(out.status == .seeOther && ProviderBrowser.location(out)["error"] == "login_required")
            #expect(ProviderBrowser.location(out)["state"] == "state-1" && ProviderBrowser.location(out)["iss"] == "http://127.0.0.1:8080")
            _ = try await AuthClient(client: client).account("prompt@example.com", OpenID.password)
            _ = try await OpenID.authorize(browser, firstParty, email: "prompt@example.com", challenge: challenge)
            let signedIn = try await browser.get(OpenID.authorizeQuery(firstParty, challenge: challenge, extra: ["prompt": "none"]))
            #expect(ProviderBrowser.location(signedIn)["code"] != nil)
            let noConsent = try await browser.get(OpenID.authorizeQuery(thirdParty, challenge: challenge, extra: ["prompt": "none"]))
            #expect(ProviderBrowser.location(noConsent)["error"] == "consent_required")
            // `prompt=consent` shows the consent page again, after consent was given.
            _ = try await OpenID.authorize(browser, thirdParty, email: "prompt@example.com", challenge: challenge)
            let again = try await browser.get(OpenID.authorizeQuery(thirdParty, challenge: challenge, extra: ["prompt": "consent"]))
            #expect(ProviderBrowser.state(again) == "consent")
        }
    }

    /// `oidcc-response-type-missing`, `oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported`,
    /// `oidcc-ensure-request-with-unknown-parameter-succeeds`, `oidcc-ensure-other-scope-order-succeeds`,
    /// `oidcc-ensure-request-without-nonce-succeeds-for-code-flow`, and `display`, `ui_locales`,
    /// `acr_values`, `login_hint` and `claims` accepted and not acted on.
    @Test(arguments: Backend.available)
    func errorRedirectsAndParametersThatAreAccepted(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let registered = try await OpenID.register(client, firstParty: true)
            _ = try await AuthClient(client: client).account("params@example.com", OpenID.password)
            let browser = ProviderBrowser(client)
            let (verifier, challenge) = OpenID.pkce()
            _ = try await OpenID.authorize(browser, registered, email: "params@example.com", challenge: challenge)
            let missing = try await browser.get(OpenID.authorizeQuery(registered, challenge: challenge, extra: ["response_type": ""]))
            #expect(ProviderBrowser.location(missing)["error"] == "unsupported_response_type" && ProviderBrowser.location(missing)["state"] == "state-1")
            let object = try await browser.get(OpenID.authorizeQuery(registered, challenge: challenge, extra: ["request": "eyJhbGciOiJub25lIn0.e30."]))
            #expect(ProviderBrowser.location(object)["error"] == "request_not_supported")
            let extra = [
                "unknown_parameter": "x", "display": "popup", "ui_locales": "fr", "acr_values": "aal2", "login_hint": "someone@example.com",
                "claims": #"{"id_token":{"email":{"essential":true}}}"#, "nonce": "",
            ]
            var query = OpenID.authorizeQuery(registered, challenge: challenge, scope: "email openid", extra: extra)
            query = query.replacingOccurrences(of: "&nonce=&", with: "&")
            let accepted = try await browser.get(query)
            let code = try #require(ProviderBrowser.location(accepted)["code"], "\(accepted.headers[.location] ?? accepted.text)")
            let tokens = try await OpenID.exchange(client, code: code, verifier: verifier, as: registered)
            #expect(tokens.status == .ok && tokens.object["scope"] as? String == "email openid", "\(tokens.text)")
        }
    }

    /// `oidcc-scope-email`, `oidcc-scope-profile`, `oidcc-userinfo-get`, `oidcc-userinfo-post-header`:
    /// userinfo answers the claims the scopes allow, by GET and by POST.
    @Test(arguments: Backend.available)
    func userinfoAnswersTheClaimsOfTheScopes(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let registered = try await OpenID.register(client, firstParty: true)
            let account = try await AuthClient(client: client).account("claims@example.com", OpenID.password)
            let named = try await client.execute(
                uri: "/v1/me", method: .patch, headers: [.authorization: "Bearer \(account.session.accessToken)", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"display_name": "Clara"}"#))
            #expect(named.status == .ok, "\(named.text)")
            let browser = ProviderBrowser(client)
            for (scope, claims) in [("openid", ["sub"]), ("openid email", ["sub", "email", "email_verified"]), ("openid profile", ["sub", "name"])] {
                let (verifier, challenge) = OpenID.pkce()
                let back = try await OpenID.authorize(browser, registered, email: "claims@example.com", challenge: challenge, scope: scope)
                let tokens = try await OpenID.exchange(client, code: try #require(ProviderBrowser.location(back)["code"]), verifier: verifier, as: registered)
                let access = try #require(tokens.object["access_token"] as? String)
                let got = try await OpenID.userinfo(client, access).object
                #expect(Set(got.keys) == Set(claims), "\(scope): \(got)")
                let posted = try await client.execute(uri: "/oauth/userinfo", method: .post, headers: [.authorization: "Bearer \(access)"]).object
                #expect(Set(posted.keys) == Set(claims), "\(scope) by POST: \(posted)")
                if scope.contains("profile") { #expect(got["name"] as? String == "Clara") }
            }
        }
    }
}
