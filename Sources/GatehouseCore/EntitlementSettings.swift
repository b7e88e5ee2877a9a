import Foundation
import GatehouseWire

/// What each plan may do and which gate each action answers: data in the preset, read by the
/// `EntitlementEngine` on the server and in the SDK alike.
public struct EntitlementSettings: Sendable, Equatable, PresetSection {
    /// By plan state. Every one of `PlanState.all` must be there; another name may only be a
    /// plan a state copies (`same_as`).
    public var plans: [PlanState: PlanSettings] = [
        .guest: PlanSettings(), .free: PlanSettings(), .trial: PlanSettings(sameAs: .pro), .pro: PlanSettings(),
        .proGrace: PlanSettings(sameAs: .pro),
    ]
    /// By action name (contract: "Names the seed presets use").
    public var actions = ["use_app": ActionSettings(rules: [GateRule(kind: .account)])]
    /// When credits come back: `calendar_month` (UTC, the default) or `anniversary` (the day of
    /// the month the account was created).
    public var creditPeriod = "calendar_month"
    public var trial = TrialSettings()
    /// When the plan is `free`, everything is read-only (Hannah: an expired trial may read its
    /// past data and nothing else).
    public var readOnlyWhenFree = false
    /// Labels of the actions gates offer (`upgrade` → "Upgrade to Pro", …); the preset's copy
    /// `action.<id>` wins over them.
    public var actionLabels = ["upgrade": "Upgrade to Pro", "not_now": "Not now", "sign_up": "Create account", "verify_email": "Verify email"]
    /// App Store product ids and the plan each one gives (the SDK offers these for purchase).
    public var products: [String: ProductSettings] = [:]
    /// The tiers the app sells, lowest first: when two sources give the paid plan, the higher tier
    /// wins (Hannah: premium, then nutritionist). A grant's tier must be one of them.
    public var tiers: [String] = []
    /// How long after a renewal date a subscription stays `pro_grace` while its renewal cannot be
    /// confirmed (CH08 §2, decision 16: 72 hours).
    public var proGraceHours = 72
    /// Usage the app's backend counts in Gatehouse (`POST /v1/usage/{meter}`), by meter name:
    /// the count of the current period fills an action's cap rule, so the same rules decide.
    public var meters: [String: MeterSettings] = [:]

    public init() {}

    static var fields: [PresetField<Self>] {
        [
            .key("plans", \.plans), .key("actions", \.actions), .key("credit_period", \.creditPeriod), .key("trial", \.trial),
            .key("read_only_when_free", \.readOnlyWhenFree), .key("action_labels", \.actionLabels), .key("products", \.products),
            .key("tiers", \.tiers), .key("pro_grace_hours", \.proGraceHours), .key("meters", \.meters),
        ]
    }

    /// The settings of `state`, following `same_as`.
    public func plan(_ state: PlanState) -> PlanSettings {
        var current = plans[state] ?? PlanSettings()
        var hops = 0
        while let next = current.sameAs, hops < 5 {
            current = plans[next] ?? PlanSettings()
            hops += 1
        }
        return current
    }

    /// The settings of the state a raw string names (the wire form, e.g. the server's
    /// `planState`).
    public func plan(_ state: String) -> PlanSettings { plan(PlanState(rawValue: state)) }

    /// The server's own actions a preset may put behind a step-up: deleting the account,
    /// changing the password, adding an email address, exporting the account's data. Only
    /// `mfa` and `recent_sign_in` rules may gate them (the person's own data and account are
    /// never behind a paywall).
    public static let serverActions = Set(StepUpAction.allCases.map(\.rawValue))

    func problems() -> [String] {
        var problems: [String] = []
        for name in Self.serverActions.sorted() {
            if let rules = actions[name]?.rules, rules.contains(where: { $0.kind != .mfa && $0.kind != .recentSignIn }) {
                problems.append("'entitlements.actions.\(name)' may only hold mfa and recent_sign_in rules")
            }
        }
        for state in PlanState.all where plans[state] == nil {
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
        for (id, product) in products where product.plan != .pro {
            problems.append("'entitlements.products.\(id).plan' must be pro (a subscription gives Pro; an introductory offer, trial)")
        }
        return problems
    }
}

/// A per-user count kept by Gatehouse for the app's backend: each use of `action` adds to the
/// count of the current `period`, and the action's `cap` rule on `context` reads that count, so
/// the plan's limit and the refusal's copy come from the same rules as every other gate.
public struct MeterSettings: Sendable, Equatable, PresetCodable {
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

    static var fields: [PresetField<Self>] { [.decodedFirst("action", \.action), .decodedFirst("context", \.context), .key("period", \.period)] }

    public init(from decoder: any Decoder) throws {
        self = try decoder.section(Self.fields) {
            MeterSettings(action: try $0.decode(String.self, forKey: "action"), context: try $0.decode(String.self, forKey: "context"))
        }
    }

    /// The cap rule of `action` this meter fills.
    public func rule(in actions: [String: ActionSettings]) -> GateRule? {
        actions[action]?.rules.first { [.cap, .softCap].contains($0.kind) && $0.context == context }
    }

    /// The UTC period holding `date`: its start and the start of the next. Hours and days are
    /// whole multiples of their seconds since 1970 (UTC has no leap seconds in Unix time);
    /// months come from `UTCCivil`, the civil-date arithmetic the credit periods use.
    public func window(at date: Date) -> (start: Date, end: Date) {
        switch period {
        case "hour":
            let start = (date.timeIntervalSince1970 / 3_600).rounded(.down) * 3_600
            return (Date(timeIntervalSince1970: start), Date(timeIntervalSince1970: start + 3_600))
        case "month":
            let (year, month, _) = UTCCivil.date(days: UTCCivil.days(of: date))
            return (UTCCivil.midnight(days: UTCCivil.days(year: year, month: month, day: 1)),
                    UTCCivil.midnight(days: UTCCivil.days(year: year, month: month + 1, day: 1)))
        default:
            let day = UTCCivil.days(of: date)
            return (UTCCivil.midnight(days: day), UTCCivil.midnight(days: day + 1))
        }
    }

    func problem(_ actions: [String: ActionSettings]) -> String? {
        guard ["hour", "day", "month"].contains(period) else { return "'period' must be hour, day or month" }
        guard actions[action] != nil else { return "'action' names no action of this preset" }
        guard rule(in: actions) != nil else { return "the action '\(action)' has no cap rule on the context '\(context)'" }
        return nil
    }
}

/// What an App Store product gives.
public struct ProductSettings: Sendable, Equatable, PresetSection {
    public var plan = PlanState.pro
    /// Shown beside the plan state instead of the plan's own tier (Hannah: `premium`).
    public var tier: String?

    public init() {}

    public init(plan: PlanState = .pro, tier: String? = nil) {
        self.plan = plan
        self.tier = tier
    }

    static var fields: [PresetField<Self>] { [.key("plan", \.plan), .key("tier", \.tier)] }
}

/// One plan state's capabilities, limits and credit grants.
public struct PlanSettings: Sendable, Equatable, PresetSection {
    /// Another plan whose settings this one uses (`trial` and `pro_grace` behave as `pro`).
    public var sameAs: PlanState?
    public var capabilities: [String: Bool] = [:]
    /// `null` means unlimited.
    public var limits: [String: Int?] = [:]
    /// Credits granted each period, by name.
    public var credits: [String: Int] = [:]
    /// Shown beside the plan state (Hannah: `premium`, `nutritionist`).
    public var tier: String?

    public init() {}

    public init(
        sameAs: PlanState? = nil, capabilities: [String: Bool] = [:], limits: [String: Int?] = [:], credits: [String: Int] = [:],
        tier: String? = nil
    ) {
        self.sameAs = sameAs
        self.capabilities = capabilities
        self.limits = limits
        self.credits = credits
        self.tier = tier
    }

    static var fields: [PresetField<Self>] {
        [.key("same_as", \.sameAs), .key("capabilities", \.capabilities), .key("limits", \.limits), .key("credits", \.credits), .key("tier", \.tier)]
    }
}

/// The rules an action answers, checked in order; the first that refuses decides.
public struct ActionSettings: Sendable, Equatable, PresetCodable {
    public var rules: [GateRule]

    public init(rules: [GateRule]) { self.rules = rules }

    static var fields: [PresetField<Self>] { [.decodedFirst("rules", \.rules)] }

    /// A preset's rules are all known kinds (an unknown one is refused with its path). A newer
    /// server may send the SDK a kind it does not know: that rule is left out, as the engine
    /// always skipped a kind it did not know.
    public init(from decoder: any Decoder) throws {
        self = try decoder.section(Self.fields) { container in
            guard !decoder.isStrict else { return ActionSettings(rules: try container.decodeIfPresent([GateRule].self, forKey: "rules") ?? []) }
            return ActionSettings(rules: (try container.decodeIfPresent([KnownKindRule].self, forKey: "rules") ?? []).compactMap(\.rule))
        }
    }

    /// A rule as a newer server may send it: `nil` for a kind this version does not know.
    private struct KnownKindRule: Decodable {
        var rule: GateRule?
        init(from decoder: any Decoder) throws {
            let kind = try decoder.container(keyedBy: AnyCodingKey.self).decode(String.self, forKey: "kind")
            rule = GateRule.Kind(rawValue: kind) == nil ? nil : try GateRule(from: decoder)
        }
    }
}

/// One check of an action. Its words come from the preset: `message`, `secondary` and
/// `notice` are copy keys (or plain text), and a rule without a `message` shows the preset's
/// copy `gate.<kind>` (and `gate.<kind>_secondary`); the engine has only neutral words for a
/// preset that gives none.
public struct GateRule: Sendable, Equatable, PresetCodable {
    /// What a rule checks.
    public enum Kind: String, Sendable, Equatable, CaseIterable, Codable {
        /// A guest is refused (gate `account`).
        case account
        /// An unverified email is refused (gate `verification`).
        case verification
        /// Refused while the snapshot is read-only.
        case writable
        /// Refused unless the plan has `capability`.
        case capability
        /// Refused when `context[context]` (a count *before* the action) has reached the plan's
        /// `limit` (`null` = unlimited); a missing context value skips the check.
        case cap
        /// Like `cap`, and from `warn_at` × limit the action is allowed with a warning.
        case softCap = "soft_cap"
        /// Refused when `context[context] + context[add]` exceeds the limit (bytes).
        case sumCap = "sum_cap"
        /// Refused when `context[context]` (a 1-based position) is beyond the limit (read-only
        /// beyond the cap after a downgrade).
        case rank
        /// When the plan lacks `unless` (e.g. `can_practice`), one `credit` is needed: allowed
        /// with a notice while some remain, refused once none do.
        case credit
        /// Refused unless the session has verified a second factor (`aal2`): reason
        /// `mfa_required`, answered by a step-up.
        case mfa
        /// Refused unless the last sign-in (or step-up) was within `within_minutes`: reason
        /// `reauthentication_required`.
        case recentSignIn = "recent_sign_in"

        /// Refuses a kind this version does not know, naming the ones it does.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            let raw = try container.decode(String.self)
            guard let kind = Kind(rawValue: raw) else {
                let known = Self.allCases.map(\.rawValue).sorted().joined(separator: ", ")
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "unknown kind '\(raw)' (expected one of: \(known))")
            }
            self = kind
        }
    }

    public var kind: Kind
    public var capability: String?
    public var limit: String?
    public var context: String?
    public var add: String?
    public var credit: String?
    public var unless: String?
    /// The gate a refusal shows (defaults by kind).
    public var gate: String?
    /// Reason code (decision 12; defaults by kind).
    public var reason: String?
    /// Copy keys of the preset (`gate.<…>`), or plain text.
    public var message: String?
    public var secondary: String?
    /// Gate actions by id (`upgrade`, `manage_flows`, `not_now`, …).
    public var actions: [String]?
    /// For `soft_cap`: the fraction of the limit from which a warning is shown.
    public var warnAt: Double?
    /// For `credit`: the reason, message and secondary of the allowed-with-notice answer.
    public var noticeReason: String?
    public var notice: String?
    /// For `recent_sign_in`: how old the last sign-in or step-up may be.
    public var withinMinutes: Int?

    public init(
        kind: Kind, capability: String? = nil, limit: String? = nil, context: String? = nil, add: String? = nil, credit: String? = nil,
        unless: String? = nil, gate: String? = nil, reason: String? = nil, message: String? = nil, secondary: String? = nil,
        actions: [String]? = nil, warnAt: Double? = nil, noticeReason: String? = nil, notice: String? = nil, withinMinutes: Int? = nil
    ) {
        self.withinMinutes = withinMinutes
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

    static var fields: [PresetField<Self>] {
        [
            .decodedFirst("kind", \.kind), .key("capability", \.capability), .key("limit", \.limit), .key("context", \.context), .key("add", \.add),
            .key("credit", \.credit), .key("unless", \.unless), .key("gate", \.gate), .key("reason", \.reason), .key("message", \.message),
            .key("secondary", \.secondary), .key("actions", \.actions), .key("warn_at", \.warnAt), .key("notice_reason", \.noticeReason),
            .key("notice", \.notice), .key("within_minutes", \.withinMinutes),
        ]
    }

    public init(from decoder: any Decoder) throws {
        self = try decoder.section(Self.fields) { GateRule(kind: try $0.decode(Kind.self, forKey: "kind")) }
    }

    func problem() -> String? {
        switch kind {
        case .capability where capability == nil: return "a capability rule needs 'capability'"
        case .cap, .softCap, .rank, .sumCap:
            if limit == nil || context == nil { return "a \(kind.rawValue) rule needs 'limit' and 'context'" }
            if kind == .sumCap, add == nil { return "a sum_cap rule needs 'add'" }
        case .credit where credit == nil: return "a credit rule needs 'credit'"
        case .recentSignIn where !(1...10_080).contains(withinMinutes ?? 0):
            return "a recent_sign_in rule needs 'within_minutes' between 1 and 10080"
        case .account, .verification, .writable, .capability, .credit, .mfa, .recentSignIn: break
        }
        return nil
    }
}

/// The trial: how long, and how it starts.
public struct TrialSettings: Sendable, Equatable, PresetSection {
    public var days = 7
    /// Started for every new account (Hannah, decision 18).
    public var startsAtSignup = false
    /// `POST /v1/trial/start` may start it (once per account).
    public var startable = true
    /// From this day of the trial the snapshot asks for the "days left" banner.
    public var bannerFromDay = 5

    public init() {}

    static var fields: [PresetField<Self>] {
        [.key("days", \.days), .key("starts_at_signup", \.startsAtSignup), .key("startable", \.startable), .key("banner_from_day", \.bannerFromDay)]
    }
}

/// The server's own actions a preset may put behind a step-up, by the names a preset gives them
/// under `entitlements.actions`. Closed: the server owns the set (`StepUpGate` enforces them).
public enum StepUpAction: String, Sendable, CaseIterable {
    case deleteAccount = "account.delete"
    case changePassword = "account.change_password"
    /// Adding an email address to the account (linking one).
    case changeEmail = "account.change_email"
    case exportData = "account.export"
}
