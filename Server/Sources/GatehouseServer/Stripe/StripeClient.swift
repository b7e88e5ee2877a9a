import AsyncHTTPClient
import Foundation
import GatehouseCore
import GatehouseStore
import Logging
import NIOCore
import NIOHTTP1

/// What Gatehouse needs to call Stripe's API and check its webhooks (`GATEHOUSE_STRIPE_*`).
public struct StripeAPISettings: Sendable, Equatable {
    public var secretKey: String
    /// Every signing secret accepted (`whsec_…`): more than one while a secret rolls.
    public var webhookSecrets: [String]
    /// `GATEHOUSE_STRIPE_API_URL`; Stripe's own by default.
    public var apiURL: URL

    public static let defaultAPIURL = URL(string: "https://api.stripe.com")!

    public init(secretKey: String, webhookSecrets: [String], apiURL: URL = Self.defaultAPIURL) {
        (self.secretKey, self.webhookSecrets, self.apiURL) = (secretKey, webhookSecrets, apiURL)
    }
}

extension GatehouseConfig {
    /// Stripe's secret key and webhook secrets: both or neither.
    static func stripe(_ settings: inout Settings) -> StripeAPISettings? {
        let key = settings.string("stripe_secret_key")
        let secrets = settings.list("stripe_webhook_secrets") ?? []
        for secret in secrets where !secret.hasPrefix("whsec_") || secret.count < 16 {
            settings.problem("stripe_webhook_secrets", "must be Stripe signing secrets (whsec_…), comma-separated")
        }
        guard let key else {
            if !secrets.isEmpty { settings.problem("stripe_secret_key", "is required when GATEHOUSE_STRIPE_WEBHOOK_SECRETS is set") }
            return nil
        }
        guard key.hasPrefix("sk_") || key.hasPrefix("rk_") else {
            settings.problem("stripe_secret_key", "must be a Stripe secret or restricted key (sk_… or rk_…)")
            return nil
        }
        if secrets.isEmpty { settings.problem("stripe_webhook_secrets", "is required when GATEHOUSE_STRIPE_SECRET_KEY is set") }
        let apiURL = settings.url("stripe_api_url", schemes: ["http", "https"]) ?? StripeAPISettings.defaultAPIURL
        return StripeAPISettings(secretKey: key, webhookSecrets: secrets, apiURL: apiURL)
    }
}

/// A failed call to Stripe: its status and Stripe's error `code`/`type`, never the secret key.
struct StripeAPIError: Error, CustomStringConvertible {
    var status: Int
    var type: String?
    var code: String?
    var message: String
    /// Stripe replayed an answer it kept under the idempotency key (`Idempotent-Replayed: true`).
    var replayed = false
    var description: String { "Stripe answered \(status) \(type ?? "")/\(code ?? ""): \(message)\(replayed ? " (replayed)" : "")" }
}

/// The few calls Gatehouse makes to Stripe's API, form-encoded as Stripe takes them, each pinned
/// to the API version Gatehouse reads (`Stripe-Version`), so the shapes never change under it.
struct StripeClient: Sendable {
    let settings: StripeAPISettings
    let client: HTTPClient

    /// The API version Gatehouse speaks (the version of Stripe's OpenAPI description the tests
    /// check every request against).
    static let apiVersion = "2026-07-29.dahlia"

    // MARK: Calls

    /// `POST /v1/customers` under an idempotency key bound to the account, so parallel first
    /// checkouts make one customer.
    func createCustomer(userID: UserID, email: String?) async throws -> String {
        var form = ["metadata[gatehouse_user_id]": userID.description]
        if let email { form["email"] = email }
        let object = try await call(.POST, "/v1/customers", form: form, idempotencyKey: "gatehouse-customer-\(userID)")
        guard let id = object["id"] as? String else { throw StripeAPIError(status: 200, message: "a customer without an id") }
        return id
    }

    /// `POST /v1/checkout/sessions` in subscription mode; the session and the subscription it
    /// makes carry the account id.
    func createCheckoutSession(customer: String, userID: UserID, price: String, successURL: String, cancelURL: String) async throws -> (
        id: String, url: String
    ) {
        let object = try await call(
            .POST, "/v1/checkout/sessions",
            form: [
                "mode": "subscription", "customer": customer, "client_reference_id": userID.description, "line_items[0][price]": price,
                "line_items[0][quantity]": "1", "success_url": successURL, "cancel_url": cancelURL,
                "metadata[gatehouse_user_id]": userID.description, "subscription_data[metadata][gatehouse_user_id]": userID.description,
            ])
        guard let id = object["id"] as? String, let url = object["url"] as? String else {
            throw StripeAPIError(status: 200, message: "a checkout session without an id or url")
        }
        return (id, url)
    }

    /// `POST /v1/billing_portal/sessions`.
    func createPortalSession(customer: String, returnURL: String) async throws -> String {
        let object = try await call(.POST, "/v1/billing_portal/sessions", form: ["customer": customer, "return_url": returnURL])
        guard let url = object["url"] as? String else { throw StripeAPIError(status: 200, message: "a portal session without a url") }
        return url
    }

    /// `GET /v1/subscriptions/{id}`: the subscription as Stripe has it now.
    func subscription(_ id: String) async throws -> StripeSubscriptionObject {
        try StripeSubscriptionObject(try await call(.GET, "/v1/subscriptions/\(Self.pathSegment(id))"))
    }

    /// `GET /v1/subscriptions?customer=…&status=all`: every subscription of the customer.
    func subscriptions(customer: String) async throws -> [StripeSubscriptionObject] {
        let object = try await call(.GET, "/v1/subscriptions", query: ["customer": customer, "status": "all", "limit": "100"])
        return try (object["data"] as? [[String: Any]] ?? []).map(StripeSubscriptionObject.init)
    }

    /// `DELETE /v1/subscriptions/{id}`: cancels at once. The key names the job's attempt: Stripe
    /// keeps a first 500 under its key for 24 hours, longer than the job retries (issue 59,
    /// finding 2), and each attempt re-reads the subscriptions first (a cancel already done is
    /// not sent again).
    func cancel(subscription id: String, attempt: Int) async throws {
        _ = try await call(.DELETE, "/v1/subscriptions/\(Self.pathSegment(id))", idempotencyKey: "gatehouse-cancel-\(id)-a\(attempt)")
    }

    // MARK: Transport

    /// One call; a request whose idempotency key is still in progress at Stripe (409
    /// `idempotency_key_in_use`, a parallel checkout making the same customer) is retried. A
    /// server error Stripe replays from its key (it keeps a 500 that happened once the request
    /// began, for 24 hours) would be all that key ever answers: the call goes on under the next
    /// key derived from it (`…-r1`, `…-r2`), which parallel callers derive alike, so they still
    /// share one (issue 59, finding 2).
    private func call(
        _ method: HTTPMethod, _ path: String, query: [String: String] = [:], form: [String: String]? = nil, idempotencyKey: String? = nil
    ) async throws -> [String: Any] {
        var (busy, renewed) = (0, 0)
        while true {
            let key = idempotencyKey.map { renewed == 0 ? $0 : "\($0)-r\(renewed)" }
            do {
                return try await send(method, path, query: query, form: form, idempotencyKey: key)
            } catch let error as StripeAPIError where error.status == 409 && error.code == "idempotency_key_in_use" && busy < 20 {
                busy += 1
                try await Task.sleep(for: .milliseconds(25 * busy))
            } catch let error as StripeAPIError where error.replayed && error.status >= 500 && renewed < Self.keyRenewals {
                renewed += 1
            }
        }
    }

    /// How many keys one call derives after replayed server errors before it gives up.
    static let keyRenewals = 4

    private func send(
        _ method: HTTPMethod, _ path: String, query: [String: String], form: [String: String]?, idempotencyKey: String?
    ) async throws -> [String: Any] {
        var url = settings.apiURL.absoluteString
        if url.hasSuffix("/") { url.removeLast() }
        url += path
        if !query.isEmpty { url += "?" + AppleTokenClient.formEncoded(query) }
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(settings.secretKey)")
        request.headers.add(name: "Stripe-Version", value: Self.apiVersion)
        if let idempotencyKey { request.headers.add(name: "Idempotency-Key", value: idempotencyKey) }
        if let form {
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: AppleTokenClient.formEncoded(form)))
        }
        let response = try await client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        let object = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] ?? [:]
        guard (200..<300).contains(Int(response.status.code)) else {
            let error = object["error"] as? [String: Any]
            throw StripeAPIError(
                status: Int(response.status.code), type: error?["type"] as? String, code: error?["code"] as? String,
                message: String((error?["message"] as? String ?? "").prefix(200)),
                replayed: response.headers.first(name: "Idempotent-Replayed") == "true")
        }
        return object
    }

    private static func pathSegment(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "_-"))) ?? id
    }
}

/// The parts of Stripe's `subscription` object Gatehouse keeps. In the pinned API version the
/// period lives on each item (`items.data[].current_period_end`); older versions put it on the
/// subscription, which is read when present.
struct StripeSubscriptionObject: Sendable, Equatable {
    var id: String
    var customer: String
    var status: String
    var priceID: String
    var currentPeriodStart: Date?
    var currentPeriodEnd: Date?
    var cancelAtPeriodEnd: Bool
    var trialEnd: Date?
    var metadataUserID: String?

    init(_ object: [String: Any]) throws {
        guard let id = object["id"] as? String, let status = object["status"] as? String else {
            throw StripeAPIError(status: 200, message: "a subscription without an id or status")
        }
        let customer = object["customer"] as? String ?? (object["customer"] as? [String: Any])?["id"] as? String
        let items = ((object["items"] as? [String: Any])?["data"] as? [[String: Any]]) ?? []
        guard let customer, let first = items.first, let price = (first["price"] as? [String: Any])?["id"] as? String else {
            throw StripeAPIError(status: 200, message: "subscription \(id) has no customer or price")
        }
        func date(_ value: Any?) -> Date? { (value as? NSNumber).map { Date(unixSeconds: $0.int64Value) } }
        self.id = id
        self.customer = customer
        self.status = status
        priceID = price
        currentPeriodStart = items.compactMap { date($0["current_period_start"]) }.max() ?? date(object["current_period_start"])
        currentPeriodEnd = items.compactMap { date($0["current_period_end"]) }.max() ?? date(object["current_period_end"])
        cancelAtPeriodEnd = object["cancel_at_period_end"] as? Bool ?? false
        trialEnd = date(object["trial_end"])
        metadataUserID = (object["metadata"] as? [String: Any])?["gatehouse_user_id"] as? String
    }

    /// The ledger's row for it, read at `readAt`, owned by `userID`. Past due: since the failed
    /// renewal's period began (the store keeps an earlier start while it stays past due).
    func record(userID: UserID?, readAt: Date) -> StripeSubscriptionRecord {
        StripeSubscriptionRecord(
            subscriptionID: id, customerID: customer, userID: userID, priceID: priceID, status: status, currentPeriodEnd: currentPeriodEnd,
            cancelAtPeriodEnd: cancelAtPeriodEnd, trialEnd: trialEnd, pastDueSince: status == "past_due" ? min(currentPeriodStart ?? readAt, readAt) : nil,
            readAt: readAt, updatedAt: readAt)
    }
}

/// The background job around Stripe: a deleted account's subscriptions cancelled at Stripe, so
/// it is never billed again. Queued in the deletion's transaction; retried with backoff for
/// about a day (`JobWorker`), across restarts.
struct StripeJobs: Sendable {
    let client: StripeClient?
    let logger: Logger

    /// Lists the customer's subscriptions at Stripe (one made after the last webhook is found
    /// too) and cancels every one that still runs.
    @Sendable func cancel(_ job: Job, _ payload: Data) async throws {
        let fields = try JSONDecoder().decode([String: String].self, from: payload)
        guard let customer = fields["customer"] else { throw ProviderError("malformed stripe_cancel job") }
        guard let client else { throw ProviderError("Stripe is not configured (GATEHOUSE_STRIPE_SECRET_KEY)") }
        for subscription in try await client.subscriptions(customer: customer)
        where !StripeSubscriptionRecord.terminalStatuses.contains(subscription.status) {
            try await client.cancel(subscription: subscription.id, attempt: job.attempts)
            logger.info("stripe subscription cancelled for a deleted account", metadata: ["subscription": "\(subscription.id)"])
        }
    }
}
