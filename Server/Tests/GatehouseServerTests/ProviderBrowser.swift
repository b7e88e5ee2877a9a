import Crypto
import Foundation
import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// A browser at the OpenID provider through the test client, for the attacks a browser would
/// not let a page make: keeps its cookies, reads a page's hidden fields and posts its forms.
/// The real browser (Chromium driven by `Tests/support/oidc_rp.py`) walks the same pages in
/// `OpenIDProviderTests`.
final class ProviderBrowser: @unchecked Sendable {
    let client: any TestClientProtocol
    /// The origin this browser's own posts name (`Origin`), as a browser on the provider's pages.
    let origin: String
    private(set) var cookies: [String: String] = [:]

    init(_ client: any TestClientProtocol) {
        self.client = client
        // The live test client names its host `localhost`, without the port.
        origin = "http://localhost"
    }

    var cookieHeader: String { cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }

    private func keep(_ response: TestResponse) {
        for header in response.headers[values: .setCookie] {
            guard let pair = header.split(separator: ";").first, let equals = pair.firstIndex(of: "=") else { continue }
            let name = String(pair[..<equals]).trimmingCharacters(in: .whitespaces)
            let value = String(pair[pair.index(after: equals)...])
            if header.contains("Max-Age=0") || value.isEmpty { cookies[name] = nil } else { cookies[name] = value }
        }
    }

    func get(_ uri: String) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if !cookies.isEmpty { headers[.cookie] = cookieHeader }
        let response = try await client.execute(uri: uri, method: .get, headers: headers)
        keep(response)
        return response
    }

    /// Posts `fields` to `/oauth/authorize` as the page's form does; `origin` nil sends none.
    func post(_ fields: [String: String], origin: String?? = .none, path: String = "/oauth/authorize") async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        if !cookies.isEmpty { headers[.cookie] = cookieHeader }
        switch origin {
        case .none: headers[.origin] = self.origin
        case .some(.some(let named)): headers[.origin] = named
        case .some(.none): break
        }
        let response = try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: Self.form(fields)))
        keep(response)
        return response
    }

    /// Opens a hand-over link and confirms its interstitial ("Continue as … on …"), as the
    /// person would: the answer of the confirmation (the redirect to the client), or the page
    /// when the link showed no interstitial.
    func confirmHandover(_ link: String) async throws -> TestResponse {
        let page = try await get(link)
        guard Self.state(page) == "handover" else { return page }
        var fields = Self.hidden(page)
        fields["decision"] = "continue"
        return try await post(fields, path: "/oauth/handover")
    }

    /// The page's `<main data-state>`.
    static func state(_ response: TestResponse) -> String? {
        let text = response.text
        guard let range = text.range(of: #"data-state="([^"]+)""#, options: .regularExpression) else { return nil }
        return String(text[range].dropFirst(12).dropLast())
    }

    /// The hidden inputs of the page's first form (the sign-in page's passkey form follows it),
    /// unescaped.
    static func hidden(_ response: TestResponse) -> [String: String] {
        var fields: [String: String] = [:]
        let pattern = try! NSRegularExpression(pattern: #"<input type="hidden" name="([^"]+)" value="([^"]*)">"#)
        let text = response.text.components(separatedBy: "</form>").first ?? response.text
        for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            guard let name = Range(match.range(at: 1), in: text), let value = Range(match.range(at: 2), in: text) else { continue }
            fields[String(text[name])] = unescape(String(text[value]))
        }
        return fields
    }

    static func unescape(_ text: String) -> String {
        var result = text
        for (entity, character) in [("&quot;", "\""), ("&#39;", "'"), ("&lt;", "<"), ("&gt;", ">"), ("&#x2F;", "/"), ("&#x3D;", "="), ("&#x60;", "`"), ("&#x27;", "'")] {
            result = result.replacingOccurrences(of: entity, with: character)
        }
        return result.replacingOccurrences(of: "&amp;", with: "&")
    }

    static func form(_ fields: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.sorted { $0.key < $1.key }.map {
            "\($0.key.addingPercentEncoding(withAllowedCharacters: allowed)!)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed)!)"
        }.joined(separator: "&")
    }

    static func location(_ response: TestResponse) -> [String: String] {
        guard let location = response.headers[.location], let items = URLComponents(string: location)?.queryItems else { return [:] }
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }
}

/// What the tests of the OpenID provider share: registering clients, a PKCE pair, a code got
/// through the pages, and the token endpoint.
enum OpenID {
    static let redirect = "http://127.0.0.1:9999/cb"
    static let password = "correct horse battery"

    static func register(
        _ client: any TestClientProtocol, isPublic: Bool = false, firstParty: Bool = false, scopes: [String] = ["openid", "email", "profile", "offline_access"],
        redirects: [String] = [redirect], audience: String? = nil, initiateLoginURI: String? = nil, rateLimit: Int? = nil
    ) async throws -> OAuthClientPayload {
        let body = try JSONEncoder().encode(
            OAuthClientRequest(
                name: "Dashboard", redirectURIs: redirects, postLogoutRedirectURIs: ["http://127.0.0.1:9999/out"], scopes: scopes, isPublic: isPublic,
                firstParty: firstParty, audience: audience, initiateLoginURI: initiateLoginURI, rateLimitPerMinute: rateLimit))
        let response = try await client.execute(
            uri: "/admin/v1/oauth/clients", method: .post, headers: TestApp.adminHeaders,
            body: ByteBuffer(bytes: body))
        #expect(response.status == .created, "\(response.text)")
        return try response.json(OAuthClientPayload.self)
    }

    /// A `code_verifier` and its S256 `code_challenge`.
    static func pkce() -> (verifier: String, challenge: String) {
        let verifier = Data((0..<48).map { _ in UInt8.random(in: 0...255) }).base64URLEncoded
        return (verifier, Data(SHA256.hash(data: Data(verifier.utf8))).base64URLEncoded)
    }

    static func authorizeQuery(_ client: OAuthClientPayload, challenge: String, redirect: String = redirect, scope: String = "openid email offline_access", extra: [String: String] = [:]) -> String {
        var fields = [
            "response_type": "code", "client_id": client.clientID, "redirect_uri": redirect, "scope": scope, "state": "state-1",
            "nonce": "nonce-1", "code_challenge": challenge, "code_challenge_method": "S256",
        ]
        for (name, value) in extra { fields[name] = value }
        return "/oauth/authorize?" + ProviderBrowser.form(fields)
    }

    /// Signs `email` in on the pages and gives consent when asked: the redirect back.
    static func authorize(
        _ browser: ProviderBrowser, _ client: OAuthClientPayload, email: String, challenge: String, scope: String = "openid email offline_access",
        extra: [String: String] = [:]
    ) async throws -> TestResponse {
        var page = try await browser.get(authorizeQuery(client, challenge: challenge, scope: scope, extra: extra))
        if ProviderBrowser.state(page) == "sign-in" {
            var fields = ProviderBrowser.hidden(page)
            fields["email"] = email
            fields["password"] = password
            page = try await browser.post(fields)
        }
        if ["consent", "continue"].contains(ProviderBrowser.state(page)) {
            var fields = ProviderBrowser.hidden(page)
            fields["decision"] = "allow"
            page = try await browser.post(fields)
        }
        #expect(page.status == .seeOther, "\(page.status) \(ProviderBrowser.state(page) ?? page.text)")
        return page
    }

    /// A fresh account's code for `client`, with its verifier.
    static func code(
        _ client: any TestClientProtocol, for registered: OAuthClientPayload, email: String, scope: String = "openid email offline_access"
    ) async throws -> (code: String, verifier: String) {
        _ = try await AuthClient(client: client).account(email, password)
        let (verifier, challenge) = pkce()
        let back = try await authorize(ProviderBrowser(client), registered, email: email, challenge: challenge, scope: scope)
        return (try #require(ProviderBrowser.location(back)["code"]), verifier)
    }

    static func token(
        _ client: any TestClientProtocol, _ fields: [String: String], as registered: OAuthClientPayload?, secret: String? = nil
    ) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        var form = fields
        if let registered {
            if let secret = secret ?? registered.clientSecret {
                headers[.authorization] = "Basic " + Data("\(registered.clientID):\(secret)".utf8).base64EncodedString()
            } else {
                form["client_id"] = registered.clientID
            }
        }
        return try await client.execute(uri: "/oauth/token", method: .post, headers: headers, body: ByteBuffer(string: ProviderBrowser.form(form)))
    }

    static func exchange(_ client: any TestClientProtocol, code: String, verifier: String, as registered: OAuthClientPayload) async throws -> TestResponse {
        try await token(client, ["grant_type": "authorization_code", "code": code, "code_verifier": verifier, "redirect_uri": redirect], as: registered)
    }

    static func userinfo(_ client: any TestClientProtocol, _ token: String) async throws -> TestResponse {
        try await client.execute(uri: "/oauth/userinfo", method: .get, headers: [.authorization: "Bearer \(token)"])
    }

    static func oauthError(_ response: TestResponse) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any])?["error"] as? String
    }
}

extension TestResponse {
    var object: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]) ?? [:] }
}
