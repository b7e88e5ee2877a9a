import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A stand-in for Stripe's API (Python http.server, `Tests/support/stripe_standin.py`) on a loopback
/// port. Every `/v1/` request is checked against a trimmed copy of Stripe's own OpenAPI description
/// (`Tests/support/stripe-openapi.json`): the secret key, `Stripe-Version`, the operation and every
/// parameter. What it does not describe is answered 400 with Stripe's error shape and listed in
/// `rejections()`. Its control API plays the part of the customer and of Stripe's dashboard (completing
/// a checkout, changing a subscription) and makes webhook events, signed as Stripe signs them and
/// checked with the official `stripe` package before they are handed over.
final class StripeStandIn: Sendable {
    static let secretKey = "sk_test_gatehouse_standin_0123456789"
    static let webhookSecret = "whsec_standin_primary_secret_0123456789abcdef"

    /// The Stripe API version the stand-in speaks: the trimmed spec's `info.version`. Gatehouse must
    /// send it as `Stripe-Version`.
    static let apiVersion: String = {
        struct Spec: Decodable {
            struct Info: Decodable { let version: String }
            let info: Info
        }
        guard let data = try? Data(contentsOf: StripeStandIn.spec), let decoded = try? JSONDecoder().decode(Spec.self, from: data) else {
            return "unreadable: \(StripeStandIn.spec.path)"
        }
        return decoded.info.version
    }()

    /// A subscription as the stand-in holds it. In this API version the period lives on the
    /// subscription's item (`items.data[0].current_period_*`), not on the subscription.
    struct Subscription: Decodable, Sendable {
        let id: String
        let customer: String
        let status: String
        let cancelAtPeriodEnd: Bool
        let periodStart: Date
        let periodEnd: Date
        let metadata: [String: String]

        private enum CodingKeys: String, CodingKey {
            case id, customer, status, metadata, items
            case cancelAtPeriodEnd = "cancel_at_period_end"
        }

        private struct Items: Decodable {
            struct Item: Decodable {
                let start: Int
                let end: Int
                enum CodingKeys: String, CodingKey {
                    case start = "current_period_start"
                    case end = "current_period_end"
                }
            }
            let data: [Item]
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(String.self, forKey: .id)
            customer = try container.decode(String.self, forKey: .customer)
            status = try container.decode(String.self, forKey: .status)
            cancelAtPeriodEnd = try container.decode(Bool.self, forKey: .cancelAtPeriodEnd)
            metadata = try container.decode([String: String].self, forKey: .metadata)
            guard let item = try container.decode(Items.self, forKey: .items).data.first else {
                throw DecodingError.dataCorruptedError(forKey: .items, in: container, debugDescription: "no items")
            }
            periodStart = Date(timeIntervalSince1970: TimeInterval(item.start))
            periodEnd = Date(timeIntervalSince1970: TimeInterval(item.end))
        }
    }

    /// An event and the exact JSON text that is delivered (and signed).
    struct Event: Decodable, Sendable {
        let id: String
        let payload: String
    }

    /// A payload and its `Stripe-Signature` header (`t=…,v1=…`).
    struct Signed: Decodable, Sendable {
        let payload: String
        let header: String
    }

    /// One accepted `/v1/` request; `query` and `form` map Stripe's bracket keys (`metadata[gatehouse_user_id]`)
    /// to their values. `status` is what the stand-in answered; `replayed` says an idempotency key replayed it.
    struct APIRequest: Decodable, Sendable {
        let method: String
        let path: String
        let query: [String: String]
        let form: [String: String]
        let idempotencyKey: String?
        let stripeVersion: String?
        let status: Int?
        let replayed: Bool?

        private enum CodingKeys: String, CodingKey {
            case method, path, query, form, status, replayed
            case idempotencyKey = "idempotency_key"
            case stripeVersion = "stripe_version"
        }
    }

    let process: Spawned
    let input: Pipe
    let port: Int

    /// Where it listens, `http://127.0.0.1:<port>`: Gatehouse's Stripe base URL.
    var url: String { "http://127.0.0.1:\(port)" }

    static var python: String? { ProcessInfo.processInfo.environment["GATEHOUSE_TEST_PYTHON"] }

    static var support: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("support")
    }

    static var spec: URL { support.appendingPathComponent("stripe-openapi.json") }

    init(port: Int? = nil) async throws {
        guard let python = Self.python else {
            throw ProcessError("GATEHOUSE_TEST_PYTHON (with stripe) is not set; run make test")
        }
        self.port = try port ?? SMTPSink.freePort()
        let started = try await Spawned.helper(python: python, [
            Self.support.appendingPathComponent("stripe_standin.py").path, "--port", String(self.port),
            "--secret-key", Self.secretKey, "--spec", Self.spec.path, "--webhook-secret", Self.webhookSecret,
        ])
        (process, input) = (started.process, started.input)
        guard started.firstLine.contains("READY") else {
            try? input.fileHandleForWriting.close()
            throw ProcessError("the Stripe stand-in did not start: \(started.firstLine)")
        }
    }

    /// Plays the customer paying on the checkout page: creates the subscription (the session's customer,
    /// price and `subscription_data.metadata`) and marks the session complete.
    func completeCheckout(
        _ sessionID: String, status: String = "active", periodStart: Date, periodEnd: Date, trialEnd: Date? = nil
    ) async throws -> Subscription {
        var body: [String: Any] = ["status": status, "period_start": Self.unix(periodStart), "period_end": Self.unix(periodEnd)]
        if let trialEnd { body["trial_end"] = Self.unix(trialEnd) }
        return try await subscription(from: control("POST", "checkout/\(sessionID)/complete", body))
    }

    /// A subscription made in Stripe's dashboard, not through Gatehouse's checkout.
    func createSubscription(
        customer: String, price: String, status: String, periodStart: Date, periodEnd: Date, metadata: [String: String] = [:]
    ) async throws -> Subscription {
        let body: [String: Any] = [
            "customer": customer, "price": price, "status": status, "period_start": Self.unix(periodStart),
            "period_end": Self.unix(periodEnd), "metadata": metadata,
        ]
        return try await subscription(from: control("POST", "subscriptions", body))
    }

    /// Changes a subscription as Stripe would (a renewal, a failed payment, a cancellation in the portal).
    func updateSubscription(
        _ id: String, status: String? = nil, cancelAtPeriodEnd: Bool? = nil, periodStart: Date? = nil, periodEnd: Date? = nil
    ) async throws -> Subscription {
        var body: [String: Any] = [:]
        if let status { body["status"] = status }
        if let cancelAtPeriodEnd { body["cancel_at_period_end"] = cancelAtPeriodEnd }
        if let periodStart { body["period_start"] = Self.unix(periodStart) }
        if let periodEnd { body["period_end"] = Self.unix(periodEnd) }
        return try await subscription(from: control("POST", "subscriptions/\(id)", body))
    }

    /// An event of `type` whose `data.object` is a snapshot taken now: the subscription
    /// (`customer.subscription.*`), the session (`checkout.session.*`), an invoice for the subscription
    /// (`invoice.paid`, `invoice.payment_failed`), or a charge or dispute of the subscription's or
    /// `customer`'s (`charge.refunded`, `charge.dispute.created`).
    func event(
        _ type: String, subscription: String? = nil, session: String? = nil, customer: String? = nil, created: Date? = nil
    ) async throws -> Event {
        var body: [String: Any] = ["type": type]
        if let subscription { body["subscription"] = subscription }
        if let session { body["session"] = session }
        if let customer { body["customer"] = customer }
        if let created { body["created"] = Self.unix(created) }
        return try await JSONDecoder().decode(Event.self, from: control("POST", "events", body))
    }

    /// Signs `event` as Stripe does, with `secret`, or with every one of `secrets` (one `v1=` each, as
    /// during a secret roll), at `timestamp`. The stand-in checks the header with `stripe.Webhook.construct_event`
    /// before answering.
    func sign(
        _ event: Event, secret: String = StripeStandIn.webhookSecret, secrets: [String]? = nil, timestamp: Date = Date()
    ) async throws -> Signed {
        var body: [String: Any] = ["event": event.id, "timestamp": Self.unix(timestamp)]
        if let secrets { body["secrets"] = secrets } else { body["secret"] = secret }
        return try await JSONDecoder().decode(Signed.self, from: control("POST", "sign", body))
    }

    /// The accepted `/v1/` requests so far, oldest first.
    func requests() async throws -> [APIRequest] {
        struct Listed: Decodable { let requests: [APIRequest] }
        return try await JSONDecoder().decode(Listed.self, from: control("GET", "requests")).requests
    }

    /// The rejected requests so far, each as JSON text `{"method", "path", "reason", "status"}`, for messages.
    func rejections() async throws -> [String] {
        let data = try await control("GET", "rejections")
        guard let listed = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let rejections = listed["rejections"] as? [Any]
        else { throw ProcessError("the Stripe stand-in's rejections are not a list: \(String(decoding: data, as: UTF8.self))") }
        return try rejections.map { String(decoding: try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self) }
    }

    /// The next `count` valid requests whose method is `method` and whose path starts with `pathPrefix`
    /// are answered 500 `api_error`: they use up no idempotency key, unless `stored`, when the 500 is
    /// kept under the request's key and replayed to every later request with it, as Stripe does.
    func failNext(method: String, pathPrefix: String, count: Int, stored: Bool = false) async throws {
        _ = try await control("POST", "fail", ["method": method, "path_prefix": pathPrefix, "count": count, "stored": stored])
    }

    /// How many requests were answered 500 on purpose (`failNext`).
    func failures() async throws -> Int {
        let listed = try JSONSerialization.jsonObject(with: try await control("GET", "failures")) as? [String: Any]
        return (listed?["failures"] as? [Any])?.count ?? 0
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        // Blocks its thread: the helper exits as soon as its input closes.
        process.waitUntilExit()
    }

    private func subscription(from data: Data) throws -> Subscription {
        struct Wrapped: Decodable { let subscription: Subscription }
        return try JSONDecoder().decode(Wrapped.self, from: data).subscription
    }

    /// Calls the control API; anything but 200 is an error carrying the stand-in's answer.
    private func control(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Data {
        try await StandInControl.call(url, "Stripe", method, path, body)
    }

    private static func unix(_ date: Date) -> Int { Int(date.timeIntervalSince1970) }
}
