import AsyncHTTPClient
import CryptoExtras
import Foundation
import GatehouseCore
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The service account Gatehouse calls the Play Developer API as, from Google's key file (JSON:
/// `client_email`, `private_key`, `private_key_id`, `token_uri`). The key never leaves memory.
struct GooglePlayServiceAccount: Sendable {
    let clientEmail: String
    let privateKeyID: String?
    /// The key file's `token_uri`, or `GATEHOUSE_GOOGLE_TOKEN_URL` when set.
    var tokenURI: URL
    let privateKey: _RSA.Signing.PrivateKey

    private struct KeyFile: Decodable {
        let type: String?
        let client_email: String
        let private_key: String
        let private_key_id: String?
        let token_uri: String?
    }

    init(keyFile: Data) throws {
        let file = try JSONDecoder().decode(KeyFile.self, from: keyFile)
        guard file.type == nil || file.type == "service_account" else { throw ProviderError("the key file is not a service account's") }
        guard let uri = URL(string: file.token_uri ?? "https://oauth2.googleapis.com/token"), ["https", "http"].contains(uri.scheme) else {
            throw ProviderError("the key file's token_uri is not a URL")
        }
        clientEmail = file.client_email
        privateKeyID = file.private_key_id
        tokenURI = uri
        privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: file.private_key)
    }
}

/// Google Play's settings (`GATEHOUSE_GOOGLE_PLAY_*`): the service account the server calls the
/// Play Developer API as, and what a Pub/Sub push's OIDC token must name. Nil: Google Play
/// purchases answer 503 and every push 401.
struct GooglePlayAPISettings: Sendable {
    var account: GooglePlayServiceAccount
    var apiURL: URL
    /// The push subscription's audience (the `aud` its tokens carry).
    var pushAudience: String
    /// The service account the push subscription signs as (the `email` its tokens carry).
    var pushServiceAccount: String
}

extension GatehouseConfig {
    static let googlePlayKeys = [
        "google_play_service_account", "google_play_push_audience", "google_play_push_service_account", "google_play_api_url", "google_token_url",
    ]

    /// The service account's key file and both push settings: all three or none.
    static func googlePlay(_ settings: inout Settings) -> GooglePlayAPISettings? {
        let path = settings.string("google_play_service_account")
        let audience = settings.string("google_play_push_audience")
        let email = settings.string("google_play_push_service_account")
        let apiURL = settings.url("google_play_api_url", schemes: ["http", "https"]) ?? GooglePlayClient.defaultAPIURL
        let tokenURL = settings.url("google_token_url", schemes: ["http", "https"])
        guard let path else {
            if audience != nil || email != nil { settings.problem("google_play_service_account", "is required when a Google Play push setting is set") }
            return nil
        }
        guard let audience, let email else {
            settings.problem(
                audience == nil ? "google_play_push_audience" : "google_play_push_service_account",
                "is required with GATEHOUSE_GOOGLE_PLAY_SERVICE_ACCOUNT: pushes are checked against it")
            return nil
        }
        do {
            var account = try GooglePlayServiceAccount(keyFile: try Data(contentsOf: URL(fileURLWithPath: path)))
            if let tokenURL { account.tokenURI = tokenURL }
            return GooglePlayAPISettings(account: account, apiURL: apiURL, pushAudience: audience, pushServiceAccount: email)
        } catch {
            settings.problem("google_play_service_account", "'\(path)' is not a readable service account key file (\(error))")
            return nil
        }
    }
}

/// A failed call to Google: its status and Google's `reason`, never a token.
struct GooglePlayAPIError: Error, CustomStringConvertible {
    var status: Int
    var reason: String?
    var message: String
    /// 410: Google no longer knows the purchase token; the purchase is finished.
    var isGone: Bool { status == 410 }
    var description: String { "Google Play answered \(status) \(reason ?? ""): \(message)" }
}

/// The calls Gatehouse makes to the Google Play Developer API (androidpublisher v3) as its
/// service account: an access token from the JWT bearer grant (RFC 7523), kept until a minute
/// before it ends, and the purchase reads and acknowledgements.
final class GooglePlayClient: Sendable {
    static let scope = "https://www.googleapis.com/auth/androidpublisher"
    static let defaultAPIURL = URL(string: "https://androidpublisher.googleapis.com")!

    let account: GooglePlayServiceAccount
    let packageName: String
    let apiURL: URL
    let client: HTTPClient
    let clock: any WallClock
    private let token = Mutex<(value: String, until: Date)?>(nil)

    init(account: GooglePlayServiceAccount, packageName: String, apiURL: URL = defaultAPIURL, client: HTTPClient, clock: any WallClock) {
        (self.account, self.packageName, self.apiURL, self.client, self.clock) = (account, packageName, apiURL, client, clock)
    }

    // MARK: Calls

    /// `purchases.subscriptionsv2.get`: the purchase as Google has it now.
    func subscription(_ purchaseToken: String) async throws -> SubscriptionPurchaseV2 {
        let body = try await call(.GET, "purchases/subscriptionsv2/tokens/\(Self.segment(purchaseToken))")
        return try SubscriptionPurchaseV2(json: body)
    }

    /// `purchases.subscriptions.acknowledge`: Google refunds a purchase not acknowledged within
    /// three days. One already acknowledged is success.
    func acknowledge(productID: String, purchaseToken: String) async throws {
        do {
            _ = try await call(.POST, "purchases/subscriptions/\(Self.segment(productID))/tokens/\(Self.segment(purchaseToken)):acknowledge", json: Array("{}".utf8))
        } catch let error as GooglePlayAPIError where error.status == 400 && error.reason == "invalidPurchaseState" {
            return
        }
    }

    /// `purchases.subscriptionsv2.cancel` as the developer: the subscription stops renewing and
    /// is not restored (`DEVELOPER_REQUESTED_STOP_PAYMENTS`).
    func cancel(purchaseToken: String) async throws {
        let body = #"{"cancellationContext": {"cancellationType": "DEVELOPER_REQUESTED_STOP_PAYMENTS"}}"#
        _ = try await call(.POST, "purchases/subscriptionsv2/tokens/\(Self.segment(purchaseToken)):cancel", json: Array(body.utf8))
    }

    /// One voided purchase as `purchases.voidedpurchases.list` names it.
    struct VoidedPurchase: Sendable, Decodable {
        let purchaseToken: String
        let voidedTimeMillis: String?
    }

    /// `purchases.voidedpurchases.list` for subscriptions (`type=1`) voided since `since`, every page.
    func voidedSubscriptions(since: Date) async throws -> [VoidedPurchase] {
        struct Page: Decodable {
            struct Pagination: Decodable { let nextPageToken: String? }
            let voidedPurchases: [VoidedPurchase]?
            let tokenPagination: Pagination?
        }
        var found: [VoidedPurchase] = []
        var next: String?
        repeat {
            var query = "startTime=\(since.unixMilliseconds)&type=1&maxResults=1000"
            if let next { query += "&token=\(Self.segment(next))" }
            let page = try JSONDecoder().decode(Page.self, from: Data(try await call(.GET, "purchases/voidedpurchases?\(query)")))
            found += page.voidedPurchases ?? []
            next = page.tokenPagination?.nextPageToken
        } while next != nil && found.count < 100_000
        return found
    }

    // MARK: Access token

    /// The service account's access token, made by the JWT bearer grant when none is held.
    func accessToken() async throws -> String {
        let now = clock.now
        if let held = token.withLock({ $0 }), now < held.until { return held.value }
        var request = HTTPClientRequest(url: account.tokenURI.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        // RS256 signing is CPU work: off the event loop, on NIO's blocking pool.
        let assertion = try await NIOThreadPool.singleton.runIfActive { try self.assertion(at: now) }
        let form = ["grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": assertion]
        request.body = .bytes(ByteBuffer(string: AppleTokenClient.formEncoded(form)))
        let response = try await client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 16)
        struct Granted: Decodable {
            let access_token: String
            let expires_in: Int
        }
        guard response.status == .ok, let granted = try? JSONDecoder().decode(Granted.self, from: Data(buffer: body)) else {
            throw GooglePlayAPIError(status: Int(response.status.code), reason: "token", message: "the token endpoint refused the service account")
        }
        let until = now.addingTimeInterval(TimeInterval(max(0, granted.expires_in - 60)))
        token.withLock { $0 = (granted.access_token, until) }
        return granted.access_token
    }

    /// The grant's assertion: RS256 over `iss`, `scope`, `aud` (the token endpoint), `iat`, `exp`
    /// (an hour, Google's limit), with the key's id.
    func assertion(at now: Date) throws -> String {
        var header: [String: String] = ["alg": "RS256", "typ": "JWT"]
        header["kid"] = account.privateKeyID
        let issued = now.unixSeconds
        let claims: [String: Any] = [
            "iss": account.clientEmail, "scope": Self.scope, "aud": account.tokenURI.absoluteString, "iat": issued, "exp": issued + 3_600,
        ]
        let head = try JSONSerialization.data(withJSONObject: header, options: .sortedKeys).base64URLEncoded
        let payload = try JSONSerialization.data(withJSONObject: claims, options: .sortedKeys).base64URLEncoded
        let input = "\(head).\(payload)"
        let signature = try account.privateKey.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return "\(input).\(signature.rawRepresentation.base64URLEncoded)"
    }

    // MARK: HTTP

    private func call(_ method: HTTPMethod, _ path: String, json body: [UInt8]? = nil) async throws -> [UInt8] {
        var url = apiURL.absoluteString
        if url.hasSuffix("/") { url.removeLast() }
        url += "/androidpublisher/v3/applications/\(Self.segment(packageName))/\(path)"
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(try await accessToken())")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await client.execute(request, timeout: .seconds(10))
        let answer = try await response.body.collect(upTo: 1 << 20)
        let bytes = Array(buffer: answer)
        guard (200..<300).contains(Int(response.status.code)) else {
            if response.status == .unauthorized { token.withLock { $0 = nil } }
            let error = ((try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any])?["error"] as? [String: Any]
            let reason = (error?["errors"] as? [[String: Any]])?.first?["reason"] as? String
            throw GooglePlayAPIError(
                status: Int(response.status.code), reason: reason, message: String((error?["message"] as? String ?? "").prefix(200)))
        }
        return bytes
    }

    private static func segment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "_-."))) ?? text
    }
}
