import Foundation
import GatehouseCore
import GatehouseTestSupport
import GatehouseWire
import Testing

extension GateRow: CustomTestStringConvertible {
    public var testDescription: String { name }
}

@Suite struct EntitlementEngineTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func preset(_ name: String) throws -> Preset {
        try Preset.decode(
            Data(contentsOf: GateRow.root.appendingPathComponent("Server/Sources/GatehouseServer/Resources/presets/\(name).json")), source: name)
    }

    static func input(_ row: GateRow) -> EntitlementInput {
        guard row.plan != "guest" else { return .guest }
        return EntitlementInput(
            userID: .random(), emailVerified: row.verified, accountCreatedAt: now.addingTimeInterval(-86_400),
            planOverride: ["pro", "pro_grace"].contains(row.plan) ? row.plan : nil,
            trialStartedAt: row.plan == "trial" ? now.addingTimeInterval(-3_600) : nil, creditsSpent: ["practice": row.creditsSpent])
    }

    @Test(arguments: try GateRow.load())
    func handzGates(_ row: GateRow) throws {
        let preset = try Self.preset("handz")
        let engine = EntitlementEngine(settings: preset.entitlements, copy: preset.copy)
        let decision = engine.decide(row.action, context: row.context, input: Self.input(row), at: Self.now)
        #expect(row.mismatches(decision).isEmpty, "\(row.name): \(row.mismatches(decision))")
    }

    /// Step-up rules: `mfa` wants `aal2`; `recent_sign_in` wants the last factor within its
    /// minutes; neither passes without knowing how the session signed in.
    @Test func stepUpRulesReadTheSessionsAssurance() throws {
        var settings = EntitlementSettings()
        settings.actions["wire_money"] = ActionSettings(rules: [GateRule(kind: .mfa), GateRule(kind: .recentSignIn, withinMinutes: 10)])
        let engine = EntitlementEngine(settings: settings, copy: ["gate.mfa": "Enter your code."])
        func decide(_ assurance: Assurance?) -> GateDecision? {
            engine.decide("wire_money", context: [:], input: EntitlementInput(userID: .random(), assurance: assurance), at: Self.now)
        }
        let aal1 = decide(Assurance(level: .aal1, authenticatedAt: Self.now))
        #expect(aal1?.allowed == false && aal1?.reasonCode == "mfa_required" && aal1?.gate == "step_up" && aal1?.message == "Enter your code.")
        #expect(decide(nil)?.reasonCode == "mfa_required")
        #expect(decide(Assurance(level: .aal2, authenticatedAt: Self.now.addingTimeInterval(-599)))?.allowed == true)
        let stale = decide(Assurance(level: .aal2, authenticatedAt: Self.now.addingTimeInterval(-600)))
        #expect(stale?.allowed == false && stale?.reasonCode == "reauthentication_required")
    }

    @Test func everySeedPresetCoversTheContractsActions() throws {
        let handz = [
            "create_flow", "add_node", "save_flow", "edit_flow", "save_move", "practice_saved_flow", "practice_inbox_item", "accept_import",
            "move_inbox_to_library", "upload_media", "create_share_link", "duplicate_shared_flow", "share_flow", "export_data", "view_demo",
            "create_move", "save_practice_log", "save_draft", "attach_link_media", "open_share_link", "practice_demo",
        ]
        #expect(Set(try Self.preset("handz").entitlements.actions.keys) == Set(handz))
        #expect(Set(try Self.preset("hannah").entitlements.actions.keys) == ["ai_chat", "log_food", "view_history", "send_sms"])
        for name in ["oklah", "syncwell", "default"] {
            #expect(Array(try Self.preset(name).entitlements.actions.keys) == ["use_app"])
        }
    }

    /// Decision 18: day N is ⌊elapsed days⌋ + 1 and days_left = 7 − N; day 8 is expired.
    @Test func hannahsTrialEndsByTheClock() throws {
        let preset = try Self.preset("hannah")
        let engine = EntitlementEngine(settings: preset.entitlements, copy: preset.copy)
        let created = Self.now
        let input = EntitlementInput(userID: .random(), emailVerified: true, accountCreatedAt: created, trialStartedAt: created)
        func day(_ n: Int) -> Date { created.addingTimeInterval(Double(n - 1) * 86_400 + 60) }
        #expect(engine.snapshot(input, at: day(1)).trial?.daysLeft == 6)
        #expect(engine.snapshot(input, at: day(5)).trial?.daysLeft == 2)
        #expect(engine.decide("ai_chat", context: [:], input: input, at: day(7))?.allowed == true)
        let expired = engine.snapshot(input, at: day(8))
        #expect(expired.planState == "free" && expired.readOnly && expired.trial == nil)
        let chat = engine.decide("ai_chat", context: [:], input: input, at: day(8))
        #expect(chat?.allowed == false && chat?.gate == "paywall" && chat?.reasonCode == "trial_expired")
        #expect(engine.decide("view_history", context: [:], input: input, at: day(8))?.allowed == true)
        #expect(engine.planExpiry(input, at: day(2)) == created.addingTimeInterval(7 * 86_400))
    }

    @Test func creditPeriodsAreCalendarMonthsOrAnniversaries() throws {
        var settings = EntitlementSettings()
        let engine = EntitlementEngine(settings: settings, copy: [:])
        let created = Date(timeIntervalSince1970: 1_799_000_000)  // 2027-01-03
        let input = EntitlementInput(userID: .random(), accountCreatedAt: created)
        let now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15
        let month = engine.creditPeriod(input, at: now)
        #expect(month.start.rfc3339 == "2027-01-01T00:00:00Z" && month.end.rfc3339 == "2027-02-01T00:00:00Z")
        settings.creditPeriod = "anniversary"
        let anniversary = EntitlementEngine(settings: settings, copy: [:]).creditPeriod(input, at: now)
        #expect(anniversary.start.rfc3339 == "2027-01-03T00:00:00Z" && anniversary.end.rfc3339 == "2027-02-03T00:00:00Z")
    }

    /// The periods are counted by arithmetic (`UTCCivil`, issue 61), and they are the periods the
    /// Gregorian calendar in UTC gives: every day from 1968-08 to 1971-05 and from 2022-11 to
    /// 2028-11 (the leap years 1968, 2024 and 2028), at its first and its last millisecond, for
    /// calendar months and for accounts made on the 1st, 15th and 28th to 31st.
    @Test func creditPeriodsAreTheCalendarsToTheSecond() throws {
        let calendar = Calendar.utcReference
        func month(of date: Date) -> Date { calendar.date(from: calendar.dateComponents([.year, .month], from: date))! }
        func monthDay(of date: Date, day: Int) -> Date {
            let first = month(of: date)
            let length = calendar.range(of: .day, in: .month, for: first)!.count
            return calendar.date(byAdding: .day, value: min(day, length) - 1, to: first)!
        }
        func expected(_ created: Date?, at now: Date) -> (Date, Date) {
            guard let created else {
                let start = month(of: now)
                return (start, calendar.date(byAdding: .month, value: 1, to: start)!)
            }
            let day = calendar.component(.day, from: created)
            var start = monthDay(of: now, day: day)
            if start > now { start = monthDay(of: calendar.date(byAdding: .month, value: -1, to: now)!, day: day) }
            return (start, monthDay(of: calendar.date(byAdding: .month, value: 1, to: start)!, day: day))
        }
        var anniversaries = EntitlementSettings()
        anniversaries.creditPeriod = "anniversary"
        let (monthly, yearly) = (EntitlementEngine(settings: EntitlementSettings(), copy: [:]), EntitlementEngine(settings: anniversaries, copy: [:]))
        // 2023-12-<day>, 13:53:20.
        let madeOn = [1, 15, 28, 29, 30, 31].map { Date(timeIntervalSince1970: 1_701_388_800 + Double($0 - 1) * 86_400 + 50_000) }
        var checked = 0
        for (first, last) in [(-500, 500), (19_300, 21_500)] {  // days since 1970: 1968-08 to 1971-05, 2022-11 to 2028-11
            for day in first...last {
                for now in [Date(timeIntervalSince1970: Double(day) * 86_400), Date(timeIntervalSince1970: Double(day + 1) * 86_400 - 0.001)] {
                    let period = monthly.creditPeriod(EntitlementInput(userID: .random()), at: now)
                    #expect(period == expected(nil, at: now), "\(now)")
                    for created in madeOn {
                        let period = yearly.creditPeriod(EntitlementInput(userID: .random(), accountCreatedAt: created), at: now)
                        #expect(period == expected(created, at: now), "\(now), made \(created)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == 2 * (1_001 + 2_201) * 6)
    }

    /// A usage meter's hour, day and month windows are counted by arithmetic too (`UTCCivil`)
    /// and are the calendar's: days and months at the first and last millisecond of every day
    /// from 1968-08 to 1971-05 and from 2022-11 to 2028-11, hours at the first and last
    /// millisecond of every hour around 1970-01-01 and around 2024-02-29.
    @Test func usageWindowsAreTheCalendarsToTheSecond() {
        let calendar = Calendar.utcReference
        var (checked, wrong) = (0, [String]())
        let spans: [(String, Calendar.Component, Double, [(Int, Int)])] = [
            ("hour", .hour, 3_600, [(-40 * 24, 40 * 24), (19_760 * 24, 19_800 * 24)]),
            ("day", .day, 86_400, [(-500, 500), (19_300, 21_500)]),
            ("month", .month, 86_400, [(-500, 500), (19_300, 21_500)]),
        ]
        for (period, component, step, ranges) in spans {
            let meter = MeterSettings(action: "act", context: "count", period: period)
            for (first, last) in ranges {
                for unit in first...last {
                    for now in [Date(timeIntervalSince1970: Double(unit) * step), Date(timeIntervalSince1970: Double(unit + 1) * step - 0.001)] {
                        let expected = calendar.dateInterval(of: component, for: now)!
                        let window = meter.window(at: now)
                        if window.start != expected.start || window.end != expected.end {
                            wrong.append("\(period) at \(now): \(window.start)–\(window.end), the calendar's \(expected.start)–\(expected.end)")
                        }
                        checked += 1
                    }
                }
            }
        }
        let (count, first) = (wrong.count, Array(wrong.prefix(3)))
        #expect(count == 0, "the first wrong: \(first)")
        #expect(checked == 2 * ((1_921 + 961) + 2 * (1_001 + 2_201)))
    }
}

/// STYLE.md rule 14: app words live in presets, never in the generic engine.
@Suite struct GateWordsTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func decide(_ rule: GateRule, copy: [String: String] = [:], context: [String: Int] = [:], input: EntitlementInput = .guest)
        -> GateDecision?
    {
        var settings = EntitlementSettings()
        settings.plans[.free] = PlanSettings(limits: ["items": 2])
        settings.actions = ["act": ActionSettings(rules: [rule])]
        return EntitlementEngine(settings: settings, copy: copy).decide("act", context: context, input: input, at: now)
    }

    /// A rule that names no words shows the preset's copy `gate.<kind>` (and its
    /// `_secondary`), else the kind's neutral sentence; its reason is the kind's canonical one.
    @Test func aRuleWithoutWordsShowsThePresetsKindCopyElseNeutralWords() {
        let neutral = Self.decide(GateRule(kind: .account))
        #expect(neutral?.reasonCode == "account_required" && neutral?.message == "Create an account to continue." && neutral?.secondaryMessage == nil)
        let copy = ["gate.account": "Sign up to keep it.", "gate.account_secondary": "Guests only look."]
        let named = Self.decide(GateRule(kind: .account), copy: copy)
        #expect(named?.message == "Sign up to keep it." && named?.secondaryMessage == "Guests only look.")
        // A rule's own words win, and then the kind's secondary is not added.
        let own = Self.decide(GateRule(kind: .account, message: "Join us."), copy: copy)
        #expect(own?.message == "Join us." && own?.secondaryMessage == nil)
        let free = EntitlementInput(userID: .random(), emailVerified: true)
        for kind in [GateRule.Kind.cap, .softCap] {
            let cap = Self.decide(GateRule(kind: kind, limit: "items", context: "n"), context: ["n": 2], input: free)
            #expect(cap?.allowed == false && cap?.reasonCode == "usage_limit_reached", "\(kind)")
        }
        let sum = Self.decide(GateRule(kind: .sumCap, limit: "items", context: "n", add: "m"), context: ["n": 2, "m": 1], input: free)
        #expect(sum?.gate == "cap" && sum?.reasonCode == "usage_limit_reached" && sum?.message == "You've reached your plan's limit.")
    }

    /// No sentence of the engine is a shipped preset's copy: those words reach a person only
    /// from the preset.
    @Test func theEnginesSentencesAreNoPresetsCopy() throws {
        var presetWords: [String: String] = [:]
        for name in Preset.builtInNames {
            for (key, text) in try EntitlementEngineTests.preset(name).copy { presetWords[text] = "\(name): \(key)" }
        }
        let source = try String(contentsOf: GateRow.root.appendingPathComponent("Sources/GatehouseCore/EntitlementEngine.swift"), encoding: .utf8)
        let literal = try Regex(#""((?:[^"\\\n]|\\.)*)""#)
        let sentences = source.matches(of: literal).map { String($0.output[1].substring ?? "") }.filter { $0.contains(" ") }
        #expect(sentences.count >= 9)
        for sentence in sentences {
            #expect(presetWords[sentence] == nil, "the engine says \"\(sentence)\", the words of \(presetWords[sentence] ?? "")")
        }
    }
}

/// App Store subscriptions in the engine: which plan a subscription gives at each moment.
@Suite struct SubscriptionEngineTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let hour: TimeInterval = 3_600

    static func record(
        _ status: SubscriptionRecord.Status, expires: TimeInterval, grace: TimeInterval? = nil, willRenew: Bool = true,
        introductory: Bool = false, product: String = "com.handz.pro.monthly"
    ) -> SubscriptionRecord {
        SubscriptionRecord(
            originalTransactionID: "1", userID: .random(), productID: product, environment: "Production", status: status,
            expiresAt: now + expires, graceExpiresAt: grace.map { now + $0 }, willRenew: willRenew, introductory: introductory,
            signedAt: now, updatedAt: now)
    }

    static func state(_ preset: String, _ records: [SubscriptionRecord], at offset: TimeInterval = 0) throws -> EntitlementsPayload {
        let settings = try EntitlementEngineTests.preset(preset)
        let engine = EntitlementEngine(settings: settings.entitlements, copy: settings.copy)
        let input = EntitlementInput(userID: .random(), emailVerified: true, accountCreatedAt: now - 30 * 86_400, ledger: LedgerRows(appStore: records))
        return engine.snapshot(input, at: now + offset)
    }

    @Test func eachStatusGivesItsPlan() throws {
        let cases: [(String, SubscriptionRecord, TimeInterval, String)] = [
            ("active", Self.record(.active, expires: 10 * Self.hour), 0, "pro"),
            ("introductory offer", Self.record(.active, expires: 10 * Self.hour, introductory: true), 0, "trial"),
            ("renewal due, unconfirmed", Self.record(.active, expires: -Self.hour), 0, "pro_grace"),
            ("renewal 72 h late", Self.record(.active, expires: -72 * Self.hour - 1), 0, "free"),
            ("lapsed, not renewing", Self.record(.active, expires: -Self.hour, willRenew: false), 0, "free"),
            ("billing grace", Self.record(.billingGrace, expires: -Self.hour, grace: 5 * Self.hour), 0, "pro"),
            ("billing grace over", Self.record(.billingGrace, expires: -Self.hour, grace: -1), 0, "free"),
            ("billing retry", Self.record(.billingRetry, expires: -Self.hour), 0, "free"),
            ("expired", Self.record(.expired, expires: -Self.hour), 0, "free"),
            ("refunded", Self.record(.refunded, expires: 10 * Self.hour), 0, "free"),
            ("revoked", Self.record(.revoked, expires: 10 * Self.hour), 0, "free"),
            ("another app's product", Self.record(.active, expires: 10 * Self.hour, product: "com.other.pro"), 0, "free"),
        ]
        for (name, record, offset, expected) in cases {
            #expect(try Self.state("handz", [record], at: offset).planState.rawValue == expected, "\(name)")
        }
        // The best of several wins; Settings shows the one that gives the plan.
        let snapshot = try Self.state("handz", [Self.record(.expired, expires: -Self.hour), Self.record(.billingGrace, expires: 0, grace: Self.hour)])
        #expect(snapshot.planState == "pro" && snapshot.subscription?.status == "billing_grace")
    }

    @Test func theSubscriptionObjectAndTier() throws {
        let active = try Self.state("hannah", [Self.record(.active, expires: 48 * Self.hour, product: "com.hannahhealth.nutritionist.monthly")])
        #expect(active.tier == "nutritionist" && active.subscription?.renewsAt == (Self.now + 48 * Self.hour).rfc3339)
        let cancelled = try Self.state("handz", [Self.record(.active, expires: 48 * Self.hour, willRenew: false)])
        #expect(cancelled.subscription?.renewsAt == nil && cancelled.subscription?.willRenew == false)
        let lapsed = try Self.state("handz", [Self.record(.active, expires: -Self.hour, willRenew: false)])
        #expect(lapsed.subscription?.status == "expired" && lapsed.subscription?.expiresAt == (Self.now - Self.hour).rfc3339)
        // Introductory trial: days left counted to the offer's end (decision 18).
        let trial = try Self.state("handz", [Self.record(.active, expires: 7 * 86_400 - 60, introductory: true)], at: 4 * 86_400)
        #expect(trial.trial?.daysLeft == 2 && trial.trial?.endsAt == (Self.now + 7 * 86_400 - 60).rfc3339)
    }

    @Test func notificationsMoveTheRecord() {
        let transaction = AppStoreTransaction(
            transactionId: "2", originalTransactionId: "1", bundleId: "b", productId: "p", environment: "Production",
            signedDate: Self.now.unixMilliseconds, expiresDate: (Self.now + 86_400).unixMilliseconds)
        func apply(_ type: String?, _ subtype: String? = nil, renewal: AppStoreRenewal? = nil, to current: SubscriptionRecord? = nil)
            -> SubscriptionRecord
        {
            SubscriptionRecord.applying(
                type: type, subtype: subtype, transaction: transaction, renewal: renewal, signedAt: Self.now, to: current, now: Self.now)
        }
        #expect(apply("SUBSCRIBED").status == .active)
        #expect(apply("DID_FAIL_TO_RENEW", "GRACE_PERIOD").status == .billingGrace)
        #expect(apply("DID_FAIL_TO_RENEW").status == .billingRetry)
        #expect(apply("GRACE_PERIOD_EXPIRED").status == .billingRetry)
        #expect(apply("EXPIRED", "VOLUNTARY").status == .expired)
        #expect(apply("REFUND").status == .refunded && apply("REVOKE").status == .revoked)
        let off = AppStoreRenewal(originalTransactionId: "1", environment: "Production", signedDate: 0, autoRenewStatus: 0)
        let grace = apply("DID_FAIL_TO_RENEW", "GRACE_PERIOD")
        #expect(apply("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", renewal: off, to: grace).status == .billingGrace)
        #expect(apply("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", renewal: off, to: grace).willRenew == false)
        // The app posting the same period again during a billing problem keeps the problem.
        #expect(apply(nil, to: grace).status == .billingGrace)
        var revoked = transaction
        revoked.revocationDate = Self.now.unixMilliseconds
        #expect(
            SubscriptionRecord.applying(
                type: "DID_RENEW", subtype: nil, transaction: revoked, renewal: nil, signedAt: Self.now, to: nil, now: Self.now
            ).status == .revoked)
    }
}
