import Foundation
import GatehouseWire

/// What the engine knows of a person at one moment; the server fills it from the store, the
/// SDK from the server's snapshot.
public struct EntitlementInput: Sendable, Equatable {
    /// `nil` for a guest.
    public var userID: UserID?
    public var emailVerified: Bool
    public var accountCreatedAt: Date?
    /// An operator's override.
    public var planOverride: String?
    public var trialStartedAt: Date?
    /// An App Store subscription that is active now (or in billing grace).
    public var subscription: SubscriptionInfo?
    public var subscriptionActive: Bool
    /// Credits spent in the current period, by name.
    public var creditsSpent: [String: Int]

    public init(
        userID: UserID?, emailVerified: Bool = false, accountCreatedAt: Date? = nil, planOverride: String? = nil,
        trialStartedAt: Date? = nil, subscription: SubscriptionInfo? = nil, subscriptionActive: Bool = false,
        creditsSpent: [String: Int] = [:]
    ) {
        self.userID = userID
        self.emailVerified = emailVerified
        self.accountCreatedAt = accountCreatedAt
        self.planOverride = planOverride
        self.trialStartedAt = trialStartedAt
        self.subscription = subscription
        self.subscriptionActive = subscriptionActive
        self.creditsSpent = creditsSpent
    }

    public static let guest = EntitlementInput(userID: nil)
}

/// CH08 §2's single effective snapshot and the gate decision for an action, from preset data.
public struct EntitlementEngine: Sendable {
    public let settings: EntitlementSettings
    public let copy: [String: String]

    public init(settings: EntitlementSettings, copy: [String: String]) {
        self.settings = settings
        self.copy = copy
    }

    // MARK: Plan state

    /// CH08 §2: no user → guest; an override; an active subscription → pro; a trial running → trial;
    /// else free.
    public func planState(_ input: EntitlementInput, at now: Date) -> String {
        guard input.userID != nil else { return "guest" }
        if let plan = input.planOverride, EntitlementSettings.planStates.contains(plan) { return plan }
        if input.subscriptionActive { return "pro" }
        if let end = trialEnd(input), now < end { return "trial" }
        return "free"
    }

    public func trialEnd(_ input: EntitlementInput) -> Date? {
        input.trialStartedAt.map { $0.addingTimeInterval(TimeInterval(settings.trial.days) * 86_400) }
    }

    /// Day N of a trial is ⌊elapsed days⌋ + 1; `days_left` = days − N (decision 18).
    public func trialDaysLeft(_ input: EntitlementInput, at now: Date) -> Int? {
        guard let start = input.trialStartedAt else { return nil }
        let day = Int(floor(now.timeIntervalSince(start) / 86_400)) + 1
        return max(0, settings.trial.days - day)
    }

    /// The period credits count in: `[start, end)`.
    public func creditPeriod(_ input: EntitlementInput, at now: Date) -> (start: Date, end: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        if settings.creditPeriod == "anniversary", let created = input.accountCreatedAt {
            let day = calendar.component(.day, from: created)
            var start = Self.monthDay(calendar, of: now, day: day)
            if start > now { start = Self.monthDay(calendar, of: calendar.date(byAdding: .month, value: -1, to: now)!, day: day) }
            let next = Self.monthDay(calendar, of: calendar.date(byAdding: .month, value: 1, to: start)!, day: day)
            return (start, next)
        }
        let start = calendar.date(from: calendar.dateComponents([.year, .month], from: now))!
        return (start, calendar.date(byAdding: .month, value: 1, to: start)!)
    }

    /// Midnight UTC of `day` in the month of `date`, or the month's last day when it is shorter.
    static func monthDay(_ calendar: Calendar, of date: Date, day: Int) -> Date {
        let first = calendar.date(from: calendar.dateComponents([.year, .month], from: date))!
        let length = calendar.range(of: .day, in: .month, for: first)!.count
        return calendar.date(byAdding: .day, value: min(day, length) - 1, to: first)!
    }

    // MARK: Snapshot

    public func snapshot(_ input: EntitlementInput, at now: Date) -> EntitlementsPayload {
        let state = planState(input, at: now)
        let plan = settings.plan(state)
        var credits: [String: CreditBalance] = [:]
        if !plan.credits.isEmpty {
            let period = creditPeriod(input, at: now)
            for (name, granted) in plan.credits {
                credits[name] = CreditBalance(
                    remaining: max(0, granted - (input.creditsSpent[name] ?? 0)), granted: granted, resetsAt: period.end.rfc3339)
            }
        }
        var trial: TrialInfo?
        if state == "trial", let end = trialEnd(input) {
            trial = TrialInfo(endsAt: end.rfc3339, daysLeft: trialDaysLeft(input, at: now) ?? 0)
        }
        return EntitlementsPayload(
            planState: state, capabilities: plan.capabilities, limits: plan.limits, credits: credits, trial: trial,
            readOnly: isReadOnly(state), tier: plan.tier, subscription: input.subscription, evaluatedAt: now.rfc3339)
    }

    func isReadOnly(_ state: String) -> Bool { settings.readOnlyWhenFree && state == "free" }

    // MARK: Decisions

    /// What the app may do for `action` with `context` (counts before the action).
    public func decide(_ action: String, context: [String: Int], input: EntitlementInput, at now: Date) -> GateDecision? {
        guard let rules = settings.actions[action]?.rules else { return nil }
        let state = planState(input, at: now)
        let plan = settings.plan(state)
        var notice: GateDecision?
        for rule in rules {
            switch rule.kind {
            case "account" where state == "guest":
                return refuse(rule, gate: "account", reason: "account_required", message: "Create an account to save your work.",
                              secondary: "Guest mode is for exploring only.", actions: ["sign_up", "not_now"])
            case "verification" where state != "guest" && !input.emailVerified:
                return refuse(rule, gate: "verification", reason: "verification_required",
                              message: "Verify your email to protect your account.", secondary: nil, actions: ["verify_email"])
            case "writable" where isReadOnly(state):
                return refuse(rule, gate: "paywall", reason: "trial_expired", message: "Your trial has ended. Subscribe to continue.",
                              secondary: nil, actions: ["upgrade"])
            case "capability" where plan.capabilities[rule.capability ?? ""] != true:
                return refuse(rule, gate: "paywall", reason: "pro_required", message: "This is a Pro feature.", secondary: nil,
                              actions: ["upgrade", "not_now"])
            case "cap", "rank":
                guard let limit = plan.limits[rule.limit ?? ""] ?? nil, let value = context[rule.context ?? ""] else { continue }
                let over = rule.kind == "cap" ? value >= limit : value > limit
                if over {
                    return refuse(rule, gate: "cap", reason: rule.kind == "rank" ? "read_only_beyond_cap" : "flow_cap_reached",
                                  message: "You've reached your plan's limit.", secondary: nil, actions: ["upgrade", "not_now"])
                }
            case "sum_cap":
                guard let limit = plan.limits[rule.limit ?? ""] ?? nil, let used = context[rule.context ?? ""] else { continue }
                if used + (context[rule.add ?? ""] ?? 0) > limit {
                    return refuse(rule, gate: "cap", reason: "media_cap_reached", message: "You've reached your storage limit.",
                                  secondary: nil, actions: ["not_now"])
                }
            case "soft_cap":
                guard let limit = plan.limits[rule.limit ?? ""] ?? nil, let value = context[rule.context ?? ""] else { continue }
                if value >= limit {
                    return refuse(rule, gate: "soft_cap", reason: rule.reason ?? "flow_cap_reached", message: "You've reached the limit.",
                                  secondary: nil, actions: ["not_now"])
                }
                if let warnAt = rule.warnAt, Double(value) >= warnAt * Double(limit), notice == nil {
                    notice = GateDecision(
                        allowed: true, gate: "soft_cap", reasonCode: rule.reason ?? "flow_cap_reached",
                        message: text(rule.notice, "You're close to the limit (\(value) of \(limit))."), secondaryMessage: nil, actions: [])
                }
            case "credit":
                if let unless = rule.unless, plan.capabilities[unless] == true { continue }
                let name = rule.credit ?? ""
                guard let granted = plan.credits[name] else {
                    return refuse(rule, gate: "paywall", reason: "pro_required", message: "This is a Pro feature.", secondary: nil,
                                  actions: ["upgrade", "not_now"])
                }
                if granted - (input.creditsSpent[name] ?? 0) > 0 {
                    if notice == nil {
                        notice = GateDecision(
                            allowed: true, gate: nil, reasonCode: rule.noticeReason ?? "credit_will_be_used",
                            message: text(rule.notice, "This uses 1 credit."), secondaryMessage: nil, actions: [])
                    }
                } else {
                    return refuse(rule, gate: "paywall", reason: "credits_exhausted", message: "This is a Pro feature.", secondary: nil,
                                  actions: ["upgrade", "not_now"])
                }
            default:
                continue
            }
        }
        return notice ?? GateDecision(allowed: true, gate: nil, reasonCode: nil, message: nil, secondaryMessage: nil, actions: [])
    }

    /// The credit an allowed `action` spends, if any.
    public func creditSpent(by action: String, input: EntitlementInput, at now: Date) -> String? {
        let plan = settings.plan(planState(input, at: now))
        for rule in settings.actions[action]?.rules ?? [] where rule.kind == "credit" {
            if let unless = rule.unless, plan.capabilities[unless] == true { return nil }
            return rule.credit
        }
        return nil
    }

    private func refuse(
        _ rule: GateRule, gate: String, reason: String, message: String, secondary: String?, actions: [String]
    ) -> GateDecision {
        GateDecision(
            allowed: false, gate: rule.gate ?? gate, reasonCode: rule.reason ?? reason, message: text(rule.message, message),
            secondaryMessage: rule.secondary.map { text($0, "") } ?? (rule.message == nil ? secondary : nil),
            actions: (rule.actions ?? actions).map { GateAction(id: $0, label: copy["action.\($0)"] ?? settings.actionLabels[$0] ?? $0) })
    }

    /// A copy key's text, or the key itself when it is plain text, or the fallback.
    private func text(_ key: String?, _ fallback: String) -> String {
        guard let key else { return fallback }
        return copy[key] ?? key
    }
}

extension EntitlementEngine {
    /// The input for an account from its stored fields (no credits, no subscription): enough
    /// for the plan state and the trial.
    public func input(for user: User, creditsSpent: [String: Int] = [:], subscription: SubscriptionInfo? = nil, subscriptionActive: Bool = false) -> EntitlementInput {
        EntitlementInput(
            userID: user.id, emailVerified: user.emailVerified, accountCreatedAt: user.createdAt, planOverride: user.planOverride,
            trialStartedAt: user.trialStartedAt ?? (settings.trial.startsAtSignup ? user.createdAt : nil), subscription: subscription,
            subscriptionActive: subscriptionActive, creditsSpent: creditsSpent)
    }

    /// When the plan ends by the clock (a trial), for the `plan_expires_at` claim.
    public func planExpiry(_ input: EntitlementInput, at now: Date) -> Date? {
        planState(input, at: now) == "trial" ? trialEnd(input) : nil
    }
}
