import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Logging

/// Web subscriptions through Stripe (issue 44): Checkout and the Billing Portal for the signed-in
/// account, and Stripe's webhook, whose events are applied by re-reading the subscription from
/// Stripe's API and storing Stripe's current state in the account's plan ledger.
struct StripeService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & EntitlementStore & PlanLedgerStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    /// `nil` when `GATEHOUSE_STRIPE_SECRET_KEY` is not set: checkout answers 503.
    let client: StripeClient?
    let webhookSecrets: [String]
    let prices: [String: ProductSettings]
    /// The preset's copy: the refusals a person reads.
    let copy: [String: String]
    let redirects: RedirectPolicy
    let entitlements: Entitlements
    let clock: any WallClock
    let logger: Logger

    // MARK: Checkout and portal

    /// `POST /v1/purchases/stripe/checkout`: a Checkout Session in subscription mode for the
    /// account's customer (made once), carrying the account id.
    func checkout(_ request: StripeCheckoutRequest, user: User) async throws -> StripeCheckoutResponse {
        let client = try configured()
        guard prices[request.price] != nil else {
            // Words for the person, who never saw a price id (issue 64); the id for the developer.
            throw GatehouseError(
                .unknownPrice, copy["error.unknown_price"] ?? "This plan is not available. Please choose another one.",
                details: ["price": .string(request.price)])
        }
        let success = try redirects.require(request.successURL)
        let cancel = try redirects.require(request.cancelURL)
        // A second subscription would bill twice (issue 59, finding 6): while one runs at Stripe
        // (`runs`), the plan is changed in the billing portal.
        if try await store.stripeSubscriptions(of: user.id).contains(where: \.runs) {
            throw GatehouseError(
                status: 409, code: .alreadySubscribed,
                message: "This account already has a subscription on the web. Change or cancel it in the billing portal.")
        }
        let customer = try await customer(for: user, client: client)
        let session = try await reaching {
            try await client.createCheckoutSession(customer: customer, userID: user.id, price: request.price, successURL: success, cancelURL: cancel)
        }
        return StripeCheckoutResponse(url: session.url, sessionID: session.id)
    }

    /// `POST /v1/purchases/stripe/portal`: 404 until a checkout made the account's customer. The
    /// portal is the customer's whose subscription runs (one that came with a merged account
    /// included, issue 59), else the account's own.
    func portal(_ request: StripePortalRequest, user: User) async throws -> StripePortalResponse {
        let client = try configured()
        let returnURL = try redirects.require(request.returnURL)
        let customers = try await store.stripeCustomers(of: user.id)
        let running = try await store.stripeSubscriptions(of: user.id).first { $0.runs && customers.contains($0.customerID) }?.customerID
        guard let customer = running ?? customers.first else {
            throw GatehouseError.notFound("This account has no Stripe billing yet.")
        }
        return StripePortalResponse(url: try await reaching { try await client.createPortalSession(customer: customer, returnURL: returnURL) })
    }

    /// The account's customer: the stored one, else one made at Stripe under an idempotency key
    /// bound to the account and kept by the account's unique key (parallel first checkouts make
    /// one customer and store it once). The write holds the caller's session.
    private func customer(for user: User, client: StripeClient) async throws -> String {
        if let stored = try await store.stripeCustomer(of: user.id) { return stored }
        let made = try await reaching { try await client.createCustomer(userID: user.id, email: user.email) }
        return try await unitOfWork.run { work in try await work.tx.saveStripeCustomer(userID: user.id, customerID: made, at: work.now) }
    }

    // MARK: Webhook

    /// `POST /webhooks/stripe`: the signature is checked over the raw body before anything is
    /// read; then the subscriptions the event is about are re-read from Stripe and applied with
    /// the event's id, once. Stripe retries a non-2xx, so a failure to reach Stripe answers 503.
    func webhook(body: [UInt8], signature: String?) async throws {
        if let failure = StripeSignature.verify(header: signature, body: body, secrets: webhookSecrets, now: clock.now, mac: Self.hmac) {
            logger.notice("stripe webhook refused", metadata: ["reason": "\(failure.rawValue)"])
            throw GatehouseError(status: 400, code: .invalidSignature, message: "The Stripe-Signature header does not verify: \(failure.rawValue).")
        }
        guard let event = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any], let id = event["id"] as? String,
            let type = event["type"] as? String, let object = (event["data"] as? [String: Any])?["object"] as? [String: Any]
        else {
            throw GatehouseError.invalidRequest("The body is not a Stripe event.")
        }
        // A redelivery of an event applied already is acknowledged without asking Stripe again
        // (the event's unique key below still decides between copies arriving together).
        if try await store.ledgerEventRecorded(source: .stripe, id: id) { return }
        let readAt = clock.now
        // The first invoice comes with the checkout: only a cycle's invoice is a renewal.
        let cycle = type != "invoice.paid" || object["billing_reason"] as? String == "subscription_cycle"
        let subscriptions = try await reaching { try await concerned(by: type, object: object) }
        let outcome = try await unitOfWork.run { work -> String in
            var outcome = subscriptions == nil ? "ignored" : "applied"
            var owners: [String: User] = [:]
            for subscription in subscriptions ?? [] {
                // The customer's account, else the account the subscription was stored for (one
                // merged into another keeps its subscription under its first customer).
                var ownerID = try await work.tx.stripeCustomerOwner(subscription.customer)
                if ownerID == nil { ownerID = try await work.tx.stripeSubscriptionOwner(subscription.id) }
                guard let ownerID, let owner = try await work.tx.user(id: ownerID) else {
                    outcome = "unknown_customer"
                    continue
                }
                owners[subscription.id] = owner
            }
            // The event's id is the key: a redelivery, or a burst of the same event, applies once.
            guard try await work.tx.recordLedgerEvent(source: .stripe, id: id, type: type, outcome: outcome, at: work.now) else { return "duplicate" }
            for subscription in subscriptions ?? [] {
                guard let owner = owners[subscription.id] else { continue }
                let before = try await entitlements.input(for: owner, in: work.tx)
                try await work.tx.saveStripeSubscription(subscription.record(userID: owner.id, readAt: readAt))
                if let kind = Self.purchaseKind[type], cycle {
                    try await work.record(
                        PurchaseEvent(source: .stripe, kind: kind, productID: subscription.priceID, purchaseID: subscription.id), user: owner.id)
                }
                try await entitlements.recordPlanChange(work.narrowed { $0 }, user: owner.id, before: before, source: .stripe)
            }
            return outcome
        }
        logger.info("stripe event", metadata: ["type": "\(type)", "outcome": "\(outcome)"])
    }

    /// `purchase.succeeded`'s `kind` by event type: a checkout's first payment and renewals.
    static let purchaseKind: [String: PurchaseEvent.Kind] = ["checkout.session.completed": .purchase, "invoice.paid": .renewal]

    /// The subscriptions an event is about, as Stripe has them now; `nil` for an event that
    /// changes no subscription (acknowledged and recorded).
    private func concerned(by type: String, object: [String: Any]) async throws -> [StripeSubscriptionObject]? {
        let client = try configured()
        func one(_ id: String?) async throws -> [StripeSubscriptionObject]? {
            guard let id else { return nil }
            return [try await client.subscription(id)]
        }
        switch type {
        case let type where type.hasPrefix("customer.subscription."):
            return try await one(object["id"] as? String)
        case "invoice.paid", "invoice.payment_failed", "invoice.payment_succeeded":
            let details = (object["parent"] as? [String: Any])?["subscription_details"] as? [String: Any]
            return try await one(details?["subscription"] as? String ?? object["subscription"] as? String)
        case "checkout.session.completed":
            return try await one(object["subscription"] as? String)
        case "charge.refunded", "charge.dispute.created", "charge.dispute.closed":
            // A refund or a dispute does not end a right by itself: the customer's subscriptions
            // are re-read, and cancelling one in Stripe (its `deleted` event) ends it.
            guard let customer = object["customer"] as? String else { return nil }
            return try await client.subscriptions(customer: customer)
        default:
            return nil
        }
    }

    // MARK: Helpers

    static func hmac(_ secret: [UInt8], _ message: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret)))
    }

    private func configured() throws -> StripeClient {
        guard let client else {
            throw GatehouseError(status: 503, code: .providerUnavailable, message: "Payments on the web are not set up on this server.")
        }
        return client
    }

    /// Runs a call to Stripe; a failure to reach it (or an error it answers) is 503
    /// `provider_unavailable`, logged without the secret key.
    private func reaching<T: Sendable>(_ call: () async throws -> T) async throws -> T {
        do {
            return try await call()
        } catch let error as GatehouseError {
            throw error
        } catch {
            logger.warning("stripe call failed", metadata: ["cause": "\(error)"])
            throw GatehouseError(status: 503, code: .providerUnavailable, message: "Payments are unavailable right now. Please try again.")
        }
    }
}
