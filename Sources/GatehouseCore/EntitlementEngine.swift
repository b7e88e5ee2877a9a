import Foundation
import GatehouseWire

/// What the engine knows of a person at one moment; the server fills it from the store, the
/// SDK from the server's snapshot.
public struct EntitlementInput: Sendable, Equatable {
    /// `nil` for a guest.
    public var userID: UserID?
    /// Whether the account proved a way to reach its owner: its address, or its number (issue
    /// 43: Hannah's SMS-first users pass her verification rules with a verified number).
    public var emailVerified: Bool
    public var accountCreatedAt: Date?
    /// An operator's override, as stored: honoured when it names one of `PlanState.all`.
    public var planOverride: String?
    public var trialStartedAt: Date?
    /// The account's rows of every paid source of the plan ledger (App Store and Stripe
    /// subscriptions, grants, ended ones included); the trial is the fields above.
    public var ledger: LedgerRows
    /// Credits spent in the current period, by name.
    public var creditsSpent: [String: Int]
    /// How the caller's session was signed in; nil when unknown (a guest, or a decision made
    /// without a session), which `mfa` and `recent_sign_in` rules refuse.
    public var assurance: Assurance?

    public init(
        userID: UserID?, emailVerified: Bool = false, accountCreatedAt: Date? = nil, planOverride: String? = nil,
        trialStartedAt: Date? = nil, ledger: LedgerRows = LedgerRows(), creditsSpent: [String: Int] = [:], assurance: Assurance? = nil
    ) {
        self.assurance = assurance
        self.ledger = ledger
        self.userID = userID
        self.emailVerified = emailVerified
        self.accountCreatedAt = accountCreatedAt
        self.planOverride = planOverride
        self.trialStartedAt = trialStartedAt
        self.creditsSpent = creditsSpent
    }

    public static let guest = EntitlementInput(userID: nil)
}

/// CH08 §2's single effective snapshot and the gate decision for an action, from preset data.
public struct EntitlementEngine: Sendable {
    public let settings: EntitlementSettings
    public let copy: [String: String]
    /// The Stripe prices the app sells and the plan and tier each gives (the preset's `stripe`).
    public let stripePrices: [String: ProductSettings]
    /// The Google Play products the app sells and the plan and tier each gives (the preset's
    /// `google_play.products`).
    public let googlePlayProducts: [String: ProductSettings]
    /// The windows the ledger counts in (`pro_grace_hours`, Stripe's billing grace days).
    public let grace: LedgerGrace

    public init(
        settings: EntitlementSettings, copy: [String: String], stripePrices: [String: ProductSettings] = [:],
        stripeBillingGraceDays: Int = StripeSettings.defaultBillingGraceDays, googlePlayProducts: [String: ProductSettings] = [:]
    ) {
        self.settings = settings
        self.copy = copy
        self.stripePrices = stripePrices
        self.googlePlayProducts = googlePlayProducts
        grace = LedgerGrace(proGraceHours: settings.proGraceHours, billingGraceDays: stripeBillingGraceDays)
    }

    /// The engine of `preset`: its entitlements, copy, Stripe prices and billing grace, and
    /// Google Play products.
    public init(preset: Preset) {
        self.init(
            settings: preset.entitlements, copy: preset.copy, stripePrices: preset.stripe.prices,
            stripeBillingGraceDays: preset.stripe.billingGraceDays, googlePlayProducts: preset.googlePlay.products)
    }

    // MARK: Plan state

    /// CH08 §2: no user → guest; an override; else the winning right of the ledger (a
    /// subscription, a grant, the trial): paid → pro, trial → trial (an introductory offer, a
    /// Stripe trial, the server trial), unconfirmed renewal → pro_grace (billing grace is paid); none →
    /// free. A purchase still pending has posted nothing, so it changes nothing.
    public func state(of input: EntitlementInput, at now: Date) -> PlanState {
        guard input.userID != nil else { return .guest }
        if let plan = input.planOverride.flatMap(PlanState.init(known:)) { return plan }
        switch winningRight(input, at: now)?.entitlement {
        case .paid: return .pro
        case .trial: return .trial
        case .unconfirmedRenewal: return .proGrace
        case .notEntitled, nil: return .free
        }
    }

    /// `state(of:at:)` in its wire form: the snapshot's `plan_state`, the token's `plan` claim.
    public func planState(_ input: EntitlementInput, at now: Date) -> String { state(of: input, at: now).rawValue }

    /// The subscription Settings → Subscription shows: the winning right's, else the most
    /// recently changed App Store subscription.
    func shownSubscription(_ input: EntitlementInput, at now: Date) -> SubscriptionInfo? {
        if let info = winningRight(input, at: now)?.info { return info }
        let record = input.ledger.appStore.filter { settings.products[$0.productID] != nil }.max { $0.signedAt < $1.signedAt }
        guard let record else { return nil }
        var info = record.info(at: now, graceHours: settings.proGraceHours)
        info.source = PlanSource.appStore.rawValue
        return info
    }

    /// The end of the server trial (`/v1/trial/start`, or sign-up when the preset says so).
    public func serverTrialEnd(_ input: EntitlementInput) -> Date? {
        input.trialStartedAt.map { $0.addingTimeInterval(TimeInterval(settings.trial.days) * 86_400) }
    }

    /// When the running trial ends: an introductory offer's or a Stripe trial's period, or the
    /// server trial.
    public func trialEnd(_ input: EntitlementInput, at now: Date) -> Date? {
        if case .trial(let until) = winningRight(input, at: now)?.entitlement { return until }
        return serverTrialEnd(input)
    }

    /// Day N of a trial is ⌊elapsed days⌋ + 1 and `days_left` = days − N (decision 18); counted
    /// back from the trial's end, that is the whole days left after today.
    public func trialDaysLeft(_ input: EntitlementInput, at now: Date) -> Int? {
        guard let end = trialEnd(input, at: now) else { return nil }
        let remaining = end.timeIntervalSince(now) / 86_400
        return max(0, Int(ceil(remaining)) - 1)
    }

    /// The period credits count in: `[start, end)`.
    public func creditPeriod(_ input: EntitlementInput, at now: Date) -> (start: Date, end: Date) {
        let (year, month, _) = UTCCivil.date(days: UTCCivil.days(of: now))
        if settings.creditPeriod == "anniversary", let created = input.accountCreatedAt {
            let day = UTCCivil.date(days: UTCCivil.days(of: created)).day
            let start = Self.monthDay(year: year, month: month, day: day)
            if start > now { return (Self.monthDay(year: year, month: month - 1, day: day), start) }
            return (start, Self.monthDay(year: year, month: month + 1, day: day))
        }
        return (
            UTCCivil.midnight(days: UTCCivil.days(year: year, month: month, day: 1)),
            UTCCivil.midnight(days: UTCCivil.days(year: year, month: month + 1, day: 1))
        )
    }

    /// Midnight UTC of `day` in `year`-`month` (a month past 12 or below 1 carries into the years
    /// around it), or of the month's last day when it is shorter.
    static func monthDay(year: Int64, month: Int64, day: Int64) -> Date {
        let first = UTCCivil.days(year: year, month: month, day: 1)
        let last = UTCCivil.days(year: year, month: month + 1, day: 1) - 1
        return UTCCivil.midnight(days: min(first + day - 1, last))
    }

    // MARK: Snapshot

    public func snapshot(_ input: EntitlementInput, at now: Date) -> EntitlementsPayload {
        let state = self.state(of: input, at: now)
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
        if state == .trial, let end = trialEnd(input, at: now) {
            trial = TrialInfo(endsAt: end.rfc3339, daysLeft: trialDaysLeft(input, at: now) ?? 0)
        }
        return EntitlementsPayload(
            planState: state, capabilities: plan.capabilities, limits: plan.limits, credits: credits, trial: trial,
            readOnly: isReadOnly(state), tier: tier(input, state: state, at: now),
            subscription: shownSubscription(input, at: now), sources: activeSources(input, at: now), evaluatedAt: now.rfc3339)
    }

    /// The winning right's tier (a product's, a price's, a grant's), else the plan's own.
    func tier(_ input: EntitlementInput, state: PlanState, at now: Date) -> String? {
        if input.planOverride == nil, let tier = winningRight(input, at: now)?.tier { return tier }
        return settings.plan(state).tier
    }

    func isReadOnly(_ state: PlanState) -> Bool { settings.readOnlyWhenFree && state == .free }

    // MARK: Decisions

    /// What the app may do for `action` with `context` (counts before the action).
    public func decide(_ action: String, context: [String: Int], input: EntitlementInput, at now: Date) -> GateDecision? {
        guard let rules = settings.actions[action]?.rules else { return nil }
        let state = self.state(of: input, at: now)
        let plan = settings.plan(state)
        var notice: GateDecision?
        for rule in rules {
            switch rule.kind {
            case .account:
                if state == .guest { return refuse(rule) }
            case .verification:
                if state != .guest && !input.emailVerified { return refuse(rule) }
            case .writable:
                if isReadOnly(state) { return refuse(rule) }
            case .capability:
                if plan.capabilities[rule.capability ?? ""] != true { return refuse(rule) }
            case .cap, .rank, .softCap:
                guard let limit = plan.limits[rule.limit ?? ""] ?? nil, let value = context[rule.context ?? ""] else { continue }
                if rule.kind == .rank ? value > limit : value >= limit { return refuse(rule) }
                if rule.kind == .softCap, let warnAt = rule.warnAt, Double(value) >= warnAt * Double(limit), notice == nil {
                    notice = GateDecision(
                        allowed: true, gate: rule.kind.neutral.gate, reasonCode: rule.reason ?? rule.kind.neutral.reason,
                        message: text(rule.notice, "You're close to the limit (\(value) of \(limit))."), secondaryMessage: nil, actions: [])
                }
            case .sumCap:
                guard let limit = plan.limits[rule.limit ?? ""] ?? nil, let used = context[rule.context ?? ""] else { continue }
                if used + (context[rule.add ?? ""] ?? 0) > limit { return refuse(rule) }
            case .mfa:
                if (input.assurance?.level ?? .aal1) < .aal2 { return refuse(rule) }
            case .recentSignIn:
                let window = TimeInterval((rule.withinMinutes ?? 0) * 60)
                guard let at = input.assurance?.authenticatedAt, now.timeIntervalSince(at) < window else { return refuse(rule) }
            case .credit:
                if let unless = rule.unless, plan.capabilities[unless] == true { continue }
                let name = rule.credit ?? ""
                // A plan without this credit at all is a Pro feature, not one that ran out.
                guard let granted = plan.credits[name] else { return refuse(rule, reason: "pro_required") }
                guard granted - (input.creditsSpent[name] ?? 0) > 0 else { return refuse(rule) }
                if notice == nil {
                    notice = GateDecision(
                        allowed: true, gate: nil, reasonCode: rule.noticeReason ?? "credit_will_be_used",
                        message: text(rule.notice, "This uses 1 credit."), secondaryMessage: nil, actions: [])
                }
            }
        }
        return notice ?? GateDecision(allowed: true, gate: nil, reasonCode: nil, message: nil, secondaryMessage: nil, actions: [])
    }

    /// The decision for someone known only by an access token's claims (`plan`,
    /// `email_verified`): what an app's own backend decides offline (`GatehouseVerifier`).
    /// Credits are not in the token, so a credit rule answers as if none were spent; spending
    /// goes through Gatehouse.
    /// `assurance` comes from the token's `aal` and `amr`.
    public func decide(
        _ action: String, context: [String: Int], plan: PlanState, emailVerified: Bool, assurance: Assurance? = nil, at now: Date
    ) -> GateDecision? {
        let input =
            !plan.isKnown || plan == .guest
            ? EntitlementInput.guest
            : EntitlementInput(userID: .random(), emailVerified: emailVerified, planOverride: plan.rawValue, assurance: assurance)
        return decide(action, context: context, input: input, at: now)
    }

    /// The limit of `meter` for the plan of `input` at `now`: the plan's value for the limit its
    /// cap rule names, `nil` when the plan has no limit there (unlimited).
    public func limit(of meter: MeterSettings, input: EntitlementInput, at now: Date) -> Int? {
        guard let name = meter.rule(in: settings.actions)?.limit else { return nil }
        return settings.plan(state(of: input, at: now)).limits[name] ?? nil
    }

    /// The credit an allowed `action` spends, if any.
    public func creditSpent(by action: String, input: EntitlementInput, at now: Date) -> String? {
        let plan = settings.plan(state(of: input, at: now))
        for rule in settings.actions[action]?.rules ?? [] where rule.kind == .credit {
            if let unless = rule.unless, plan.capabilities[unless] == true { return nil }
            return rule.credit
        }
        return nil
    }

    /// The refusal of `rule`: its own gate, reason, words and actions, else its kind's. Words
    /// come from the preset: the rule's `message` (and `secondary`), else the copy
    /// `gate.<kind>` (and `gate.<kind>_secondary`), else the kind's neutral sentence.
    private func refuse(_ rule: GateRule, reason: String? = nil) -> GateDecision {
        let neutral = rule.kind.neutral
        let kindCopy = "gate.\(rule.kind.rawValue)"
        return GateDecision(
            allowed: false, gate: rule.gate ?? neutral.gate, reasonCode: rule.reason ?? reason ?? neutral.reason,
            message: text(rule.message, copy[kindCopy] ?? neutral.message),
            secondaryMessage: rule.secondary.map { text($0, "") } ?? (rule.message == nil ? copy[kindCopy + "_secondary"] : nil),
            actions: (rule.actions ?? neutral.actions).map { GateAction(id: $0, label: copy["action.\($0)"] ?? settings.actionLabels[$0] ?? $0) })
    }

    /// A copy key's text, or the key itself when it is plain text, or the fallback.
    private func text(_ key: String?, _ fallback: String) -> String {
        guard let key else { return fallback }
        return copy[key] ?? key
    }
}

extension EntitlementEngine {
    /// The input for an account from its stored fields and its ledger rows (no credits): enough
    /// for the plan state and the trial.
    public func input(for user: User, ledger: LedgerRows = LedgerRows(), creditsSpent: [String: Int] = [:]) -> EntitlementInput {
        EntitlementInput(
            userID: user.id, emailVerified: user.emailVerified || user.phoneVerifiedAt != nil, accountCreatedAt: user.createdAt, planOverride: user.planOverride,
            trialStartedAt: user.trialStartedAt ?? (settings.trial.startsAtSignup ? user.createdAt : nil), ledger: ledger,
            creditsSpent: creditsSpent)
    }

    /// When the paid plan ends by the clock if nothing new arrives, for the `plan_expires_at`
    /// claim: the latest end among the rights giving a plan now (a subscription's renewal date plus
    /// the pro_grace window, a billing grace's or a cancelled subscription's period end, a grant's
    /// `until`, a trial's end), so the plan cannot outlive the claim and the claim never ends one
    /// source's plan while another still gives it. `nil` for free, guest, an override, or no end.
    public func planExpiry(_ input: EntitlementInput, at now: Date) -> Date? {
        guard input.planOverride == nil, [.trial, .pro, .proGrace].contains(state(of: input, at: now)) else { return nil }
        let ends = ledger(input, at: now).filter { $0.entitlement != .notEntitled }.map(\.end)
        if ends.contains(where: { $0 == nil }) { return nil }
        return ends.compactMap { $0 }.max()
    }
}

extension GateRule.Kind {
    /// What a rule of this kind answers when the preset gives nothing of its own: the
    /// contract's gate, the canonical reason code (decision 12; `usage_limit_reached` for a
    /// limit), the gate's action ids and neutral words. The shipped presets name their own
    /// words, in the rule or as the copy `gate.<kind>`.
    var neutral: (gate: String, reason: String, message: String, actions: [String]) {
        switch self {
        case .account: ("account", "account_required", "Create an account to continue.", ["sign_up", "not_now"])
        case .verification: ("verification", "verification_required", "Verify your email address to continue.", ["verify_email"])
        case .writable: ("paywall", "trial_expired", "Your trial has ended. Subscribe to continue.", ["upgrade"])
        case .capability: ("paywall", "pro_required", "This is a Pro feature.", ["upgrade", "not_now"])
        case .cap: ("cap", "usage_limit_reached", "You've reached your plan's limit.", ["upgrade", "not_now"])
        case .rank: ("cap", "read_only_beyond_cap", "You've reached your plan's limit.", ["upgrade", "not_now"])
        case .sumCap: ("cap", "usage_limit_reached", "You've reached your plan's limit.", ["not_now"])
        case .softCap: ("soft_cap", "usage_limit_reached", "You've reached the limit.", ["not_now"])
        case .credit: ("paywall", "credits_exhausted", "This is a Pro feature.", ["upgrade", "not_now"])
        case .mfa: ("step_up", "mfa_required", "Confirm it's you with your authenticator app to continue.", ["verify_mfa"])
        case .recentSignIn: ("step_up", "reauthentication_required", "Sign in again to continue.", ["sign_in_again"])
        }
    }
}
