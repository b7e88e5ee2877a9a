import Foundation
import GatehouseCore
import GatehouseWire

extension Gatehouse {
    // MARK: Web subscriptions through Stripe

    /// `POST /v1/purchases/stripe/checkout`: a Stripe Checkout page for the signed-in account,
    /// selling `price` as a subscription. Open the URL in `ASWebAuthenticationSession`; when it
    /// closes, call ``didReturnFromStripe()``. The plan changes once Stripe's webhook reaches the
    /// server, never on the device's word.
    ///
    /// ```swift
    /// let page = try await gatehouse.stripeCheckoutURL(price: "price_premium_monthly")
    /// // open `page`, then: await gatehouse.didReturnFromStripe()
    /// ```
    ///
    /// - Parameters:
    ///   - price: A Stripe price id the preset sells (its `stripe.prices`).
    ///   - successURL: Where Stripe returns after a payment; `cancelURL`, after the person backs
    ///     out. Both must be on the server's redirect allowlist. When nil, the app's return
    ///     address: the preset's `open_app_url` (from `/v1/config`), else the first of
    ///     `ClientConfiguration.appLinks`.
    ///   - cancelURL: See `successURL`.
    ///
    /// Throws ``GatehouseClientError``: 400 `unknown_price` (a price the preset does not sell),
    /// 400 `invalid_redirect` (a return URL off the allowlist; also thrown on the device, with no
    /// status, when no URL was passed and the app has no return address), 503
    /// `provider_unavailable` (Stripe is not configured on the server or cannot be reached);
    /// `not_signed_in` without a session.
    public func stripeCheckoutURL(price: String, successURL: URL? = nil, cancelURL: URL? = nil) async throws(GatehouseClientError) -> URL {
        let fallback = successURL == nil || cancelURL == nil ? try await stripeReturnAddress() : nil
        let body = StripeCheckoutRequest(
            price: price, successURL: (successURL ?? fallback)?.absoluteString ?? "", cancelURL: (cancelURL ?? fallback)?.absoluteString ?? "")
        let response = try await call(Endpoints.stripeCheckout, body: body, auth: .required)
        return try Self.pageURL(response.url)
    }

    /// `POST /v1/purchases/stripe/portal`: Stripe's Billing Portal for the account's customer,
    /// where the person changes their card or plan and cancels. Open it like the checkout page,
    /// and call ``didReturnFromStripe()`` when it closes.
    ///
    /// ```swift
    /// if snapshot.subscription?.source == "stripe" {
    ///     let portal = try await gatehouse.stripePortalURL()
    /// }
    /// ```
    ///
    /// - Parameter returnURL: Where the portal's "Return" link leads, on the redirect allowlist;
    ///   when nil, the app's return address as for ``stripeCheckoutURL(price:successURL:cancelURL:)``.
    ///
    /// Throws ``GatehouseClientError``: 404 `not_found` (the account never went through a Stripe
    /// checkout, so it has no customer), 400 `invalid_redirect`, 503 `provider_unavailable`;
    /// `not_signed_in` without a session.
    public func stripePortalURL(returnURL: URL? = nil) async throws(GatehouseClientError) -> URL {
        let address: URL
        if let returnURL { address = returnURL } else { address = try await stripeReturnAddress() }
        let response = try await call(Endpoints.stripePortal, body: StripePortalRequest(returnURL: address.absoluteString), auth: .required)
        return try Self.pageURL(response.url)
    }

    /// Call when Stripe's page (checkout or portal) closes, whichever way it ended: reads the
    /// entitlement snapshot again (`GET /v1/entitlements`), kept and announced as
    /// `entitlementsChanged` when it changed. Stripe's webhook may reach the server a moment
    /// after the person is back, so while the plan, tier and subscriptions read the same as
    /// before, it reads again, four times in all (waits of `retryDelay`, doubling:
    /// 0.5, 1 and 2 s by default). Answers the snapshot to show (the cached one when the server
    /// cannot be reached), nil without one.
    ///
    /// ```swift
    /// let snapshot = await gatehouse.didReturnFromStripe()
    /// if snapshot?.planState.isPro == true { /* thank the person */ }
    /// ```
    @discardableResult
    public func didReturnFromStripe() async -> EntitlementsPayload? {
        let before = entitlementCache?.payload
        for attempt in 0..<Self.stripeReturnReads {
            if attempt > 0 {
                do {
                    try await clock.sleep(seconds: configuration.retryDelay * pow(2, Double(attempt - 1)))
                } catch {
                    break
                }
            }
            // A failure (no network, the session gone) ends the wait: the cache stays what to show.
            guard let now = try? await fetchEntitlements(), Self.samePlan(before, now) else { break }
        }
        return currentEntitlements
    }

    /// How many times ``didReturnFromStripe()`` reads the snapshot while it has not changed.
    static let stripeReturnReads = 4

    /// Whether two snapshots give the same plan from the same rights (counters and the time of
    /// evaluation aside).
    static func samePlan(_ a: EntitlementsPayload?, _ b: EntitlementsPayload) -> Bool {
        guard let a else { return false }
        return a.planState == b.planState && a.tier == b.tier && a.subscription == b.subscription && a.sources == b.sources
    }

    /// The app's return address: the preset's `open_app_url` (on the server's allowlist by
    /// construction), else the first of `appLinks`.
    private func stripeReturnAddress() async throws(GatehouseClientError) -> URL {
        var loaded = configurationCache
        if loaded == nil { loaded = try? await loadConfiguration() }
        if let text = loaded?.app.openAppURL, let url = URL(string: text) { return url }
        if let url = configuration.appLinks.first { return url }
        throw GatehouseClientError(
            code: .invalidRedirect,
            message: "No address to return to from Stripe: pass the return URLs, or set ClientConfiguration.appLinks "
                + "(or the preset's open_app_url).")
    }

    static func pageURL(_ text: String) throws(GatehouseClientError) -> URL {
        guard let url = URL(string: text), url.scheme != nil, url.host != nil else { throw invalidResponse }
        return url
    }
}
