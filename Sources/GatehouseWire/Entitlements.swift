/// The contract's Entitlements snapshot.
public struct EntitlementsPayload: Codable, Sendable, Hashable {
    public var planState: PlanState
    public var capabilities: [String: Bool]
    public var limits: [String: Int?]
    public var credits: [String: CreditBalance]
    public var trial: TrialInfo?
    public var readOnly: Bool
    public var tier: String?
    public var subscription: SubscriptionInfo?
    /// Every source giving a plan now (App Store, Stripe, Google Play, a grant), each with its own expiry.
    public var sources: [SubscriptionInfo]?
    public var evaluatedAt: String

    public init(
        planState: PlanState, capabilities: [String: Bool] = [:], limits: [String: Int?] = [:],
        credits: [String: CreditBalance] = [:], trial: TrialInfo? = nil, readOnly: Bool = false, tier: String? = nil,
        subscription: SubscriptionInfo? = nil, sources: [SubscriptionInfo]? = nil, evaluatedAt: String
    ) {
        self.sources = sources
        self.planState = planState
        self.capabilities = capabilities
        self.limits = limits
        self.credits = credits
        self.trial = trial
        self.readOnly = readOnly
        self.tier = tier
        self.subscription = subscription
        self.evaluatedAt = evaluatedAt
    }

    enum CodingKeys: String, CodingKey {
        case planState = "plan_state"
        case capabilities, limits, credits, trial
        case readOnly = "read_only"
        case tier, subscription, sources
        case evaluatedAt = "evaluated_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(planState, forKey: .planState)
        try container.encode(capabilities, forKey: .capabilities)
        try container.encode(limits, forKey: .limits)
        try container.encode(credits, forKey: .credits)
        try container.encode(trial, forKey: .trial)
        try container.encode(readOnly, forKey: .readOnly)
        try container.encode(tier, forKey: .tier)
        try container.encode(subscription, forKey: .subscription)
        try container.encodeIfPresent(sources, forKey: .sources)
        try container.encode(evaluatedAt, forKey: .evaluatedAt)
    }
}

public struct CreditBalance: Codable, Sendable, Hashable {
    public var remaining: Int
    public var granted: Int
    public var resetsAt: String?
    public init(remaining: Int, granted: Int, resetsAt: String?) {
        self.remaining = remaining
        self.granted = granted
        self.resetsAt = resetsAt
    }
    enum CodingKeys: String, CodingKey {
        case remaining, granted
        case resetsAt = "resets_at"
    }
    /// Every member of the contract's object is present, `null` when unknown.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(remaining, forKey: .remaining)
        try container.encode(granted, forKey: .granted)
        try container.encode(resetsAt, forKey: .resetsAt)
    }
}

public struct TrialInfo: Codable, Sendable, Hashable {
    public var endsAt: String
    public var daysLeft: Int
    public init(endsAt: String, daysLeft: Int) {
        self.endsAt = endsAt
        self.daysLeft = daysLeft
    }
    enum CodingKeys: String, CodingKey {
        case endsAt = "ends_at"
        case daysLeft = "days_left"
    }
}

public struct SubscriptionInfo: Codable, Sendable, Hashable {
    public var productID: String
    public var status: String
    public var renewsAt: String?
    public var expiresAt: String?
    public var willRenew: Bool
    /// Where the right comes from: `app_store`, `stripe`, `google_play` or `grant` (`PlanSource`).
    public var source: String?
    /// True for a store's test purchase (a Google Play license tester's); nil otherwise.
    public var testPurchase: Bool?
    public init(
        productID: String, status: String, renewsAt: String?, expiresAt: String?, willRenew: Bool, source: String? = nil, testPurchase: Bool? = nil
    ) {
        self.source = source
        self.testPurchase = testPurchase
        self.productID = productID
        self.status = status
        self.renewsAt = renewsAt
        self.expiresAt = expiresAt
        self.willRenew = willRenew
    }
    enum CodingKeys: String, CodingKey {
        case productID = "product_id"
        case status
        case renewsAt = "renews_at"
        case expiresAt = "expires_at"
        case willRenew = "will_renew"
        case source
        case testPurchase = "test_purchase"
    }
    /// Every member of the contract's object is present, `null` when unknown; `test_purchase`
    /// only for a test purchase.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(source, forKey: .source)
        try container.encode(productID, forKey: .productID)
        try container.encode(status, forKey: .status)
        try container.encode(renewsAt, forKey: .renewsAt)
        try container.encode(expiresAt, forKey: .expiresAt)
        try container.encode(willRenew, forKey: .willRenew)
        if testPurchase == true { try container.encode(true, forKey: .testPurchase) }
    }
}

/// An action a gate offers (`upgrade` "Upgrade to Pro", `manage_flows` "Manage flows", …).
public struct GateAction: Codable, Sendable, Hashable {
    public var id: String
    public var label: String
    public init(id: String, label: String) {
        self.id = id
        self.label = label
    }
    enum CodingKeys: String, CodingKey {
        case id, label
    }
}

/// The contract's gate decision.
public struct GateDecision: Codable, Sendable, Hashable {
    public var allowed: Bool
    /// `account`, `paywall`, `cap`, `soft_cap`, `verification`, or null.
    public var gate: String?
    public var reasonCode: String?
    public var message: String?
    public var secondaryMessage: String?
    public var actions: [GateAction]

    public init(allowed: Bool, gate: String?, reasonCode: String?, message: String?, secondaryMessage: String?, actions: [GateAction]) {
        self.allowed = allowed
        self.gate = gate
        self.reasonCode = reasonCode
        self.message = message
        self.secondaryMessage = secondaryMessage
        self.actions = actions
    }

    enum CodingKeys: String, CodingKey {
        case allowed, gate, actions
        case reasonCode = "reason_code"
        case message
        case secondaryMessage = "secondary_message"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(allowed, forKey: .allowed)
        try c.encode(gate, forKey: .gate)
        try c.encode(reasonCode, forKey: .reasonCode)
        try c.encode(message, forKey: .message)
        try c.encode(secondaryMessage, forKey: .secondaryMessage)
        try c.encode(actions, forKey: .actions)
    }
}

extension GateDecision {
    /// The error code a refusal of this decision answers with, the same from the server and from
    /// `GatehouseVerifier` (one mapping, so the two never disagree on a token): a step-up gate
    /// keeps its own reason (`mfa_required`, `reauthentication_required`) so a client can tell it
    /// from a paywall; everything else is `plan_required`.
    public var refusalCode: ErrorCode {
        switch reasonCode.map(ErrorCode.init(rawValue:)) {
        case .mfaRequired?: .mfaRequired
        case .reauthenticationRequired?: .reauthenticationRequired
        default: .planRequired
        }
    }
}

/// `POST /v1/entitlements/check`.
public struct EntitlementCheckRequest: Codable, Sendable, Hashable {
    public var action: String
    /// Counts before the action, e.g. `{"saved_count": 2}`.
    public var context: [String: Int]?
    public init(action: String, context: [String: Int]? = nil) {
        self.action = action
        self.context = context
    }
    enum CodingKeys: String, CodingKey {
        case action, context
    }
}

/// `POST /v1/credits/{name}/spend`.
public struct CreditSpendRequest: Codable, Sendable, Hashable {
    public var idempotencyKey: String
    public var action: String
    public var subject: String?
    public init(idempotencyKey: String, action: String, subject: String? = nil) {
        self.idempotencyKey = idempotencyKey
        self.action = action
        self.subject = subject
    }
    enum CodingKeys: String, CodingKey {
        case idempotencyKey = "idempotency_key"
        case action, subject
    }
}

/// `{remaining, spent}`: `remaining` is null when the plan does not count this credit.
public struct CreditSpendResponse: Codable, Sendable, Hashable {
    public var remaining: Int?
    public var spent: Int
    public init(remaining: Int?, spent: Int) {
        self.remaining = remaining
        self.spent = spent
    }
    enum CodingKeys: String, CodingKey {
        case remaining, spent
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(remaining, forKey: .remaining)
        try c.encode(spent, forKey: .spent)
    }
}

/// One client analytics event of `POST /v1/events`.
public struct ClientEvent: Codable, Sendable, Hashable {
    public var name: String
    public var properties: [String: JSONValue]?
    /// RFC 3339.
    public var occurredAt: String
    /// A device-local id, for events sent before an account exists.
    public var anonymousID: String?
    public init(name: String, properties: [String: JSONValue]? = nil, occurredAt: String, anonymousID: String? = nil) {
        self.name = name
        self.properties = properties
        self.occurredAt = occurredAt
        self.anonymousID = anonymousID
    }
    enum CodingKeys: String, CodingKey {
        case name, properties
        case occurredAt = "occurred_at"
        case anonymousID = "anonymous_id"
    }
}

/// `POST /v1/events`.
public struct ClientEventBatch: Codable, Sendable, Hashable {
    public var events: [ClientEvent]
    public init(events: [ClientEvent]) { self.events = events }
    enum CodingKeys: String, CodingKey {
        case events
    }
}

/// `POST /v1/usage/{meter}`, from an app's backend with the service key: one use of a meter
/// by `user_id`. The same `idempotency_key` answers the same use again, never a second one.
public struct UsageRequest: Codable, Sendable, Hashable {
    public var userID: String
    /// How much this use adds (1 when absent).
    public var amount: Int?
    public var idempotencyKey: String
    public init(userID: String, amount: Int? = nil, idempotencyKey: String) {
        self.userID = userID
        self.amount = amount
        self.idempotencyKey = idempotencyKey
    }
    enum CodingKeys: String, CodingKey {
        case userID = "user_id"
        case amount
        case idempotencyKey = "idempotency_key"
    }
}

/// `{used, limit, resets_at}`: the period's count after the use, the plan's limit (null:
/// unlimited) and when the count starts again (RFC 3339).
public struct UsageResponse: Codable, Sendable, Hashable {
    public var used: Int
    public var limit: Int?
    public var resetsAt: String
    public init(used: Int, limit: Int?, resetsAt: String) {
        self.used = used
        self.limit = limit
        self.resetsAt = resetsAt
    }
    enum CodingKeys: String, CodingKey {
        case used, limit
        case resetsAt = "resets_at"
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(used, forKey: .used)
        try c.encode(limit, forKey: .limit)
        try c.encode(resetsAt, forKey: .resetsAt)
    }
}
