/// `POST /v1/purchases/stripe/checkout`: a price the preset sells and where Stripe's Checkout
/// returns (both on the redirect allowlist).
public struct StripeCheckoutRequest: Codable, Sendable, Hashable {
    public var price: String
    public var successURL: String
    public var cancelURL: String
    public init(price: String, successURL: String, cancelURL: String) {
        self.price = price
        self.successURL = successURL
        self.cancelURL = cancelURL
    }
    enum CodingKeys: String, CodingKey {
        case price
        case successURL = "success_url"
        case cancelURL = "cancel_url"
    }
}

/// The Checkout Session to open: its URL and id.
public struct StripeCheckoutResponse: Codable, Sendable, Hashable {
    public var url: String
    public var sessionID: String
    public init(url: String, sessionID: String) {
        self.url = url
        self.sessionID = sessionID
    }
    enum CodingKeys: String, CodingKey {
        case url
        case sessionID = "session_id"
    }
}

/// `POST /v1/purchases/stripe/portal`: where Stripe's Billing Portal returns.
public struct StripePortalRequest: Codable, Sendable, Hashable {
    public var returnURL: String
    public init(returnURL: String) { self.returnURL = returnURL }
    enum CodingKeys: String, CodingKey {
        case returnURL = "return_url"
    }
}

/// The Billing Portal session to open.
public struct StripePortalResponse: Codable, Sendable, Hashable {
    public var url: String
    public init(url: String) { self.url = url }
}

/// `POST /admin/v1/users/{id}/grants`: the paid plan (`pro`) and/or a tier until a time, and why.
public struct GrantRequest: Codable, Sendable, Hashable {
    public var plan: String?
    public var tier: String?
    /// RFC 3339.
    public var until: String
    public var reason: String
    public init(plan: String? = nil, tier: String? = nil, until: String, reason: String) {
        self.plan = plan
        self.tier = tier
        self.until = until
        self.reason = reason
    }
}

/// One promotional grant.
public struct GrantPayload: Codable, Sendable, Hashable {
    public var id: String
    public var plan: String
    public var tier: String?
    public var startsAt: String
    public var until: String
    public var reason: String
    public var createdBy: String
    /// Set once an operator revoked it.
    public var revokedAt: String?
    public init(id: String, plan: String, tier: String?, startsAt: String, until: String, reason: String, createdBy: String, revokedAt: String?) {
        self.id = id
        self.plan = plan
        self.tier = tier
        self.startsAt = startsAt
        self.until = until
        self.reason = reason
        self.createdBy = createdBy
        self.revokedAt = revokedAt
    }
    enum CodingKeys: String, CodingKey {
        case id, plan, tier
        case startsAt = "starts_at"
        case until, reason
        case createdBy = "created_by"
        case revokedAt = "revoked_at"
    }
    /// Every member is present, `null` when unset.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(plan, forKey: .plan)
        try container.encode(tier, forKey: .tier)
        try container.encode(startsAt, forKey: .startsAt)
        try container.encode(until, forKey: .until)
        try container.encode(reason, forKey: .reason)
        try container.encode(createdBy, forKey: .createdBy)
        try container.encode(revokedAt, forKey: .revokedAt)
    }
}

/// `{grant}`.
public struct GrantResponse: Codable, Sendable, Hashable {
    public var grant: GrantPayload
    public init(grant: GrantPayload) { self.grant = grant }
}

/// `{grants}`, oldest first.
public struct GrantList: Codable, Sendable, Hashable {
    public var grants: [GrantPayload]
    public init(grants: [GrantPayload]) { self.grants = grants }
}

/// A Stripe subscription in an export.
public struct ExportedStripeSubscription: Codable, Sendable, Hashable {
    public var subscriptionID: String
    public var customerID: String
    public var priceID: String
    public var status: String
    public var currentPeriodEnd: String?
    public var cancelAtPeriodEnd: Bool
    public var trialEnd: String?
    public var updatedAt: String
    public init(
        subscriptionID: String, customerID: String, priceID: String, status: String, currentPeriodEnd: String?, cancelAtPeriodEnd: Bool,
        trialEnd: String?, updatedAt: String
    ) {
        self.subscriptionID = subscriptionID
        self.customerID = customerID
        self.priceID = priceID
        self.status = status
        self.currentPeriodEnd = currentPeriodEnd
        self.cancelAtPeriodEnd = cancelAtPeriodEnd
        self.trialEnd = trialEnd
        self.updatedAt = updatedAt
    }
    enum CodingKeys: String, CodingKey {
        case subscriptionID = "subscription_id"
        case customerID = "customer_id"
        case priceID = "price_id"
        case status
        case currentPeriodEnd = "current_period_end"
        case cancelAtPeriodEnd = "cancel_at_period_end"
        case trialEnd = "trial_end"
        case updatedAt = "updated_at"
    }
}

/// A Google Play subscription purchase in an export.
public struct ExportedGooglePlayPurchase: Codable, Sendable, Hashable {
    public var purchaseToken: String
    public var productID: String
    /// Google's `subscriptionState` without its prefix (`ACTIVE`, `ON_HOLD`, …).
    public var state: String
    public var expiresAt: String?
    public var testPurchase: Bool
    /// The newer token that replaced it (an upgrade, a downgrade, a re-subscribe).
    public var supersededBy: String?
    public var voidedAt: String?
    public init(
        purchaseToken: String, productID: String, state: String, expiresAt: String?, testPurchase: Bool, supersededBy: String?, voidedAt: String?
    ) {
        self.purchaseToken = purchaseToken
        self.productID = productID
        self.state = state
        self.expiresAt = expiresAt
        self.testPurchase = testPurchase
        self.supersededBy = supersededBy
        self.voidedAt = voidedAt
    }
    enum CodingKeys: String, CodingKey {
        case purchaseToken = "purchase_token"
        case productID = "product_id"
        case state
        case expiresAt = "expires_at"
        case testPurchase = "test_purchase"
        case supersededBy = "superseded_by"
        case voidedAt = "voided_at"
    }
}
