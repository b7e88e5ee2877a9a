import Foundation

/// What each plan may do and which gate each action answers: data in the preset, read by the
/// `EntitlementEngine` on the server and in the SDK alike.
public struct EntitlementSettings: Sendable, Equatable, Codable {
    /// By plan state: `guest`, `free`, `trial`, `pro`, `pro_grace`.
    public var plans: [String: PlanSettings]
    /// By action name (contract: "Names the seed presets use").
    public var actions: [String: ActionSettings]
    /// When credits come back: `calendar_month` (UTC, the default) or `anniversary` (the day of
    /// the month the account was created).
    public var creditPeriod: String
    public var trial: TrialSettings
    /// When the plan is `free`, everything is read-only (Hannah: an expired trial may read its
    /// past data and nothing else).
    public var readOnlyWhenFree: Bool
    /// Labels of the actions gates offer (`upgrade` → "Upgrade to Pro", …).
    public var actionLabels: [String: String]
    /// App Store product ids and the plan each one gives (the SDK offers these for purchase).
    public var products: [String: ProductSettings]
    /// How long after a renewal date a subscription stays `pro_grace` while its renewal cannot be
    /// confirmed (CH08 §2, decision 16: 72 hours).
    public var proGraceHours: Int
    /// Usage the app's backend counts in Gatehouse (`POST /v1/usage/{meter}`), by meter name:
    /// the count of the current period fills an action's cap rule, so the same rules decide.
    public var meters: [String: MeterSettings]

    public init() {
        plans = [
            "guest": PlanSettings(capabilities: [:], limits: [:]),
            "free": PlanSettings(capabilities: [:], limits: [:]),
            "trial": PlanSettings(sameAs: "pro"),
            "pro": PlanSettings(capabilities: [:], limits: [:]),
            "pro_grace": PlanSettings(sameAs: "pro"),
        ]
        actions = ["use_app": ActionSettings(rules: [GateRule(kind: "account")])]
        creditPeriod = "calendar_month"
        trial = TrialSettings()
        readOnlyWhenFree = false
        actionLabels = ["upgrade": "Upgrade to Pro", "not_now": "Not now", "sign_up": "Create account", "verify_email": "Verify email"]
        products = [:]
        proGraceHours = 72
        meters = [:]
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case plans, actions, trial
        case creditPeriod = "credit_period"
        case readOnlyWhenFree = "read_only_when_free"
        case actionLabels = "action_labels"
        case products
        case proGraceHours = "pro_grace_hours"
        case meters
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        plans = try c.value(.plans, or: plans)
        actions = try c.value(.actions, or: actions)
        creditPeriod = try c.value(.creditPeriod, or: creditPeriod)
        trial = try c.value(.trial, or: trial)
        readOnlyWhenFree = try c.value(.readOnlyWhenFree, or: readOnlyWhenFree)
        actionLabels = try c.value(.actionLabels, or: actionLabels)
        products = try c.value(.products, or: products)
        proGraceHours = try c.value(.proGraceHours, or: proGraceHours)
        meters = try c.value(.meters, or: meters)
    }

    public static let planStates = ["guest", "free", "trial", "pro", "pro_grace"]

    /// The settings of `state`, following `same_as`.
    public func plan(_ state: String) -> PlanSettings {
        var current = plans[state] ?? PlanSettings()
        var hops = 0
        while let next = current.sameAs, hops < 5 {
            current = plans[next] ?? PlanSettings()
            hops += 1
        }
        return current
    }

    func problems() -> [String] {
        var problems: [String] = []
        for state in Self.planStates where plans[state] == nil {
            problems.append("'entitlements.plans' must define '\(state)'")
        }
        for (name, plan) in plans {
            if let same = plan.sameAs, plans[same] == nil || plans[same]?.sameAs != nil {
                problems.append("'entitlements.plans.\(name).same_as' must name a plan that is not itself a copy")
            }
        }
        if !["calendar_month", "anniversary"].contains(creditPeriod) {
            problems.append("'entitlements.credit_period' must be calendar_month or anniversary")
        }
        for (name, action) in actions {
            for (index, rule) in action.rules.enumerated() {
                if let problem = rule.problem() { problems.append("'entitlements.actions.\(name).rules[\(index)]': \(problem)") }
            }
        }
        if !(1...365).contains(trial.days) { problems.append("'entitlements.trial.days' must be between 1 and 365") }
        if !(0...720).contains(proGraceHours) { problems.append("'entitlements.pro_grace_hours' must be between 0 and 720") }
        for (name, meter) in meters.sorted(by: { $0.key < $1.key }) {
            if let problem = meter.problem(actions) { problems.append("'entitlements.meters.\(name)': \(problem)") }
        }
        for (id, product) in products where product.plan != "pro" {
            problems.append("'entitlements.products.\(id).plan' must be pro (a subscription gives Pro; an introductory offer, trial)")
        }
        return problems
    }
}

/// A per-user count kept by Gatehouse for the app's backend: each use of `action` adds to the
/// count of the current `period`, and the action's `cap` rule on `context` reads that count, so
/// the plan's limit and the refusal's copy come from the same rules as every other gate.
public struct MeterSettings: Sendable, Equatable, Codable {
    public var action: String
    /// The context key of the action's `cap` (or `soft_cap`) rule that the count fills.
    public var context: String
    /// `hour`, `day` or `month`, in UTC.
    public var period: String

    public init(action: String, context: String, period: String = "day") {
        self.action = action
        self.context = context
        self.period = period
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case action, context, period
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        action = try c.decode(String.self, forKey: .action)
        context = try c.decode(String.self, forKey: .context)
        period = try c.value(.period, or: "day")
    }

    /// The cap rule of `action` this meter fills.
    public func rule(in actions: [String: ActionSettings]) -> GateRule? {
        actions[action]?.rules.first { ["cap", "soft_cap"].contains($0.kind) && $0.context == context }
    }

    /// The UTC period holding `date`: its start and the start of the next.
    public func window(at date: Date) -> (start: Date, end: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let component: Calendar.Component = period == "hour" ? .hour : period == "month" ? .month : .day
        let start = calendar.dateInterval(of: component, for: date)!.start
        return (start, calendar.date(byAdding: component, value: 1, to: start)!)
    }

    func problem(_ actions: [String: ActionSettings]) -> String? {
        guard ["hour", "day", "month"].contains(period) else { return "'period' must be hour, day or month" }
        guard actions[action] != nil else { return "'action' names no action of this preset" }
        guard rule(in: actions) != nil else { return "the action '\(action)' has no cap rule on the context '\(context)'" }
        return nil
    }
}

/// What an App Store product gives.
public struct ProductSettings: Sendable, Equatable, Codable {
    public var plan: String
    /// Shown beside the plan state instead of the plan's own tier (Hannah: `premium`).
    public var tier: String?

    public init(plan: String = "pro", tier: String? = nil) {
        self.plan = plan
        self.tier = tier
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case plan, tier
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        plan = try c.value(.plan, or: "pro")
        tier = try c.decodeIfPresent(String.self, forKey: .tier)
    }
}

/// One plan state's capabilities, limits and credit grants.
public struct PlanSettings: Sendable, Equatable, Codable {
    /// Another plan whose settings this one uses (`trial` and `pro_grace` behave as `pro`).
    public var sameAs: String?
    public var capabilities: [String: Bool]
    /// `null` means unlimited.
    public var limits: [String: Int?]
    /// Credits granted each period, by name.
    public var credits: [String: Int]
    /// Shown beside the plan state (Hannah: `premium`, `nutritionist`).
    public var tier: String?

    public init(sameAs: String? = nil, capabilities: [String: Bool] = [:], limits: [String: Int?] = [:], credits: [String: Int] = [:], tier: String? = nil) {
        self.sameAs = sameAs
        self.capabilities = capabilities
        self.limits = limits
        self.credits = credits
        self.tier = tier
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case sameAs = "same_as"
        case capabilities, limits, credits, tier
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sameAs = try c.decodeIfPresent(String.self, forKey: .sameAs)
        capabilities = try c.value(.capabilities, or: [:])
        limits = try c.value(.limits, or: [:])
        credits = try c.value(.credits, or: [:])
        tier = try c.decodeIfPresent(String.self, forKey: .tier)
    }
}

/// The rules an action answers, checked in order; the first that refuses decides.
public struct ActionSettings: Sendable, Equatable, Codable {
    public var rules: [GateRule]

    public init(rules: [GateRule]) { self.rules = rules }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case rules
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        rules = try c.value(.rules, or: [])
    }
}

/// One check of an action.
///
/// Kinds:
/// - `account`: a guest is refused (gate `account`).
/// - `verification`: an unverified email is refused (gate `verification`).
/// - `writable`: refused while the snapshot is read-only.
/// - `capability`: refused unless the plan has `capability`.
/// - `cap`: refused when `context[context]` (a count *before* the action) has reached the plan's
///   `limit` (`null` = unlimited); a missing context value skips the check.
/// - `soft_cap`: like `cap`, and from `warn_at` × limit the action is allowed with a warning.
/// - `sum_cap`: refused when `context[context] + context[add]` exceeds the limit (bytes).
/// - `rank`: refused when `context[context]` (a 1-based position) is beyond the limit
///   (read-only beyond the cap after a downgrade).
/// - `credit`: when the plan lacks `unless` (e.g. `can_practice`), one `credit` is needed:
///   allowed with a notice while some remain, refused once none do.
public struct GateRule: Sendable, Equatable, Codable {
    public var kind: String
    public var capability: String?
    public var limit: String?
    public var context: String?
    public var add: String?
    public var credit: String?
    public var unless: String?
    /// The gate a refusal shows (defaults by kind).
    public var gate: String?
    /// Reason code (decision 12).
    public var reason: String?
    /// Copy keys of the preset (`gate.<…>`), with the seed's text as fallback in `text`.
    public var message: String?
    public var secondary: String?
    /// Gate actions by id (`upgrade`, `manage_flows`, `not_now`, …).
    public var actions: [String]?
    /// For `soft_cap`: the fraction of the limit from which a warning is shown.
    public var warnAt: Double?
    /// For `credit`: the reason, message and secondary of the allowed-with-notice answer.
    public var noticeReason: String?
    public var notice: String?

    public init(
        kind: String, capability: String? = nil, limit: String? = nil, context: String? = nil, add: String? = nil, credit: String? = nil,
        unless: String? = nil, gate: String? = nil, reason: String? = nil, message: String? = nil, secondary: String? = nil,
        actions: [String]? = nil, warnAt: Double? = nil, noticeReason: String? = nil, notice: String? = nil
    ) {
        self.kind = kind
        self.capability = capability
        self.limit = limit
        self.context = context
        self.add = add
        self.credit = credit
        self.unless = unless
        self.gate = gate
        self.reason = reason
        self.message = message
        self.secondary = secondary
        self.actions = actions
        self.warnAt = warnAt
        self.noticeReason = noticeReason
        self.notice = notice
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case kind, capability, limit, context, add, credit, unless, gate, reason, message, secondary, actions, notice
        case warnAt = "warn_at"
        case noticeReason = "notice_reason"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decode(String.self, forKey: .kind)
        capability = try c.decodeIfPresent(String.self, forKey: .capability)
        limit = try c.decodeIfPresent(String.self, forKey: .limit)
        context = try c.decodeIfPresent(String.self, forKey: .context)
        add = try c.decodeIfPresent(String.self, forKey: .add)
        credit = try c.decodeIfPresent(String.self, forKey: .credit)
        unless = try c.decodeIfPresent(String.self, forKey: .unless)
        gate = try c.decodeIfPresent(String.self, forKey: .gate)
        reason = try c.decodeIfPresent(String.self, forKey: .reason)
        message = try c.decodeIfPresent(String.self, forKey: .message)
        secondary = try c.decodeIfPresent(String.self, forKey: .secondary)
        actions = try c.decodeIfPresent([String].self, forKey: .actions)
        warnAt = try c.decodeIfPresent(Double.self, forKey: .warnAt)
        noticeReason = try c.decodeIfPresent(String.self, forKey: .noticeReason)
        notice = try c.decodeIfPresent(String.self, forKey: .notice)
    }

    static let kinds: Set<String> = ["account", "verification", "writable", "capability", "cap", "soft_cap", "sum_cap", "rank", "credit"]

    func problem() -> String? {
        guard Self.kinds.contains(kind) else { return "unknown kind '\(kind)'" }
        switch kind {
        case "capability" where capability == nil: return "a capability rule needs 'capability'"
        case "cap", "soft_cap", "rank", "sum_cap":
            if limit == nil || context == nil { return "a \(kind) rule needs 'limit' and 'context'" }
            if kind == "sum_cap", add == nil { return "a sum_cap rule needs 'add'" }
        case "credit" where credit == nil: return "a credit rule needs 'credit'"
        default: break
        }
        return nil
    }
}

/// The trial: how long, and how it starts.
public struct TrialSettings: Sendable, Equatable, Codable {
    public var days = 7
    /// Started for every new account (Hannah, decision 18).
    public var startsAtSignup = false
    /// `POST /v1/trial/start` may start it (once per account).
    public var startable = true
    /// From this day of the trial the snapshot asks for the "days left" banner.
    public var bannerFromDay = 5

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case days
        case startsAtSignup = "starts_at_signup"
        case startable
        case bannerFromDay = "banner_from_day"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        days = try c.value(.days, or: days)
        startsAtSignup = try c.value(.startsAtSignup, or: startsAtSignup)
        startable = try c.value(.startable, or: startable)
        bannerFromDay = try c.value(.bannerFromDay, or: bannerFromDay)
    }
}
