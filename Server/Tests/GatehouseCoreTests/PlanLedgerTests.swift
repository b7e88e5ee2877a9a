import Foundation
import GatehouseCore
import GatehouseWire
import Testing

/// The plan ledger (issue 44): every source keeps its own right, and the plan, its tier and
/// `plan_expires_at` are computed over all of them (Hannah's preset: premium below nutritionist).
@Suite struct PlanLedgerTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let day: TimeInterval = 86_400

    static func engine() throws -> EntitlementEngine {
        EntitlementEngine(preset: try EntitlementEngineTests.preset("hannah"))
    }

    static func stripe(
        _ status: String, price: String = "price_hannah_premium_monthly", ends: TimeInterval, cancelling: Bool = false, pastDue: TimeInterval? = nil
    ) -> StripeSubscriptionRecord {
        StripeSubscriptionRecord(
            subscriptionID: "sub_\(status)", customerID: "cus_1", userID: nil, priceID: price, status: status, currentPeriodEnd: now + ends,
            cancelAtPeriodEnd: cancelling, trialEnd: status == "trialing" ? now + ends : nil, pastDueSince: pastDue.map { now + $0 }, readAt: now,
            updatedAt: now)
    }

    static func appStore(ends: TimeInterval, product: String = "com.hannahhealth.premium.monthly") -> SubscriptionRecord {
        SubscriptionRecord(
            originalTransactionID: "1", userID: nil, productID: product, environment: "Production", status: .active, expiresAt: now + ends,
            willRenew: true, introductory: false, signedAt: now, updatedAt: now)
    }

    static func googlePlay(
        _ state: GooglePlaySubscriptionRecord.State, ends: TimeInterval, product: String = "premium_monthly", supersededBy: String? = nil,
        voided: Bool = false
    ) -> GooglePlaySubscriptionRecord {
        GooglePlaySubscriptionRecord(
            purchaseToken: "token-\(state.rawValue)", userID: nil, productID: product, state: state, expiresAt: now + ends, linkedPurchaseToken: nil,
            obfuscatedAccountID: nil, acknowledged: true, testPurchase: false, readAt: now, supersededBy: supersededBy, voidedAt: voided ? now : nil)
    }

    /// Hannah's preset selling one Google Play product at her premium tier.
    static func engineWithGooglePlay() throws -> EntitlementEngine {
        var preset = try EntitlementEngineTests.preset("hannah")
        preset.googlePlay.packageName = "com.hannahhealth.app"
        preset.googlePlay.products = ["premium_monthly": ProductSettings(plan: .pro, tier: "premium")]
        return EntitlementEngine(preset: preset)
    }

    static func grant(tier: String?, ends: TimeInterval, revoked: Bool = false) -> PlanGrant {
        PlanGrant(
            userID: .random(), tier: tier, startsAt: now - day, until: now + ends, reason: "support", createdBy: "operator",
            revokedAt: revoked ? now : nil)
    }

    /// An account past Hannah's sign-up trial, with `sources`.
    static func input(
        appStore: [SubscriptionRecord] = [], stripe: [StripeSubscriptionRecord] = [], googlePlay: [GooglePlaySubscriptionRecord] = [],
        grants: [PlanGrant] = [], trialStarted: Date? = nil
    ) -> EntitlementInput {
        EntitlementInput(
            userID: .random(), emailVerified: true, accountCreatedAt: now - 30 * day, trialStartedAt: trialStarted ?? now - 30 * day,
            ledger: LedgerRows(appStore: appStore, stripe: stripe, googlePlay: googlePlay, grants: grants))
    }

    /// Stripe's statuses, each to its plan (issue 44's table).
    @Test func stripeStatuses() throws {
        let engine = try Self.engine()
        let cases: [(StripeSubscriptionRecord, String, String?)] = [
            (Self.stripe("trialing", ends: 3 * Self.day), "trial", "active"),
            (Self.stripe("active", ends: 10 * Self.day), "pro", "active"),
            (Self.stripe("active", ends: -3_600), "pro_grace", "active"),
            (Self.stripe("active", ends: -3_600, cancelling: true), "free", "expired"),
            (Self.stripe("active", ends: 10 * Self.day, cancelling: true), "pro", "active"),
            (Self.stripe("past_due", ends: 20 * Self.day, pastDue: -3 * Self.day), "pro", "billing_grace"),
            // Billing grace (14 days) is over, the unpaid period is not: nothing (issue 59, finding 3).
            (Self.stripe("past_due", ends: 10 * Self.day, pastDue: -15 * Self.day), "free", "billing_retry"),
            // Grace never outlasts the unpaid period.
            (Self.stripe("past_due", ends: -60, pastDue: -3 * Self.day), "free", "billing_retry"),
            (Self.stripe("canceled", ends: 10 * Self.day), "free", "expired"),
            (Self.stripe("unpaid", ends: 10 * Self.day), "free", "billing_retry"),
            (Self.stripe("incomplete_expired", ends: 10 * Self.day), "free", "expired"),
            (Self.stripe("paused", ends: 10 * Self.day), "free", "paused"),
            (Self.stripe("active", price: "price_not_sold", ends: 10 * Self.day), "free", nil),
        ]
        for (record, plan, shown) in cases {
            let snapshot = engine.snapshot(Self.input(stripe: [record]), at: Self.now)
            #expect(snapshot.planState.rawValue == plan, "\(record.status) \(record.cancelAtPeriodEnd)")
            #expect(snapshot.subscription?.status == (plan == "free" ? nil : shown), "\(record.status): \(String(describing: snapshot.subscription))")
        }
    }

    /// The best right wins (paid over billing trouble), then the higher tier, then the later end;
    /// ending one source leaves the others; `plan_expires_at` is the latest end of a right giving
    /// a plan; the server trial counts only when nothing bought or granted does.
    @Test func theBestRightWinsAndEndingOneKeepsTheOthers() throws {
        let engine = try Self.engine()
        let premiumInApp = Self.appStore(ends: 5 * Self.day)
        let nutritionistOnWeb = Self.stripe("active", price: "price_hannah_nutritionist_monthly", ends: 20 * Self.day)
        let both = Self.input(appStore: [premiumInApp], stripe: [nutritionistOnWeb])
        var snapshot = engine.snapshot(both, at: Self.now)
        #expect(snapshot.planState == "pro" && snapshot.tier == "nutritionist" && snapshot.subscription?.source == "stripe")
        #expect(snapshot.sources?.compactMap(\.source) == ["app_store", "stripe"])
        #expect(engine.planExpiry(both, at: Self.now) == Self.now + 20 * Self.day + 72 * 3_600)

        var webEnded = both
        webEnded.ledger.stripe[0].status = "canceled"
        snapshot = engine.snapshot(webEnded, at: Self.now)
        #expect(snapshot.planState == "pro" && snapshot.tier == "premium" && snapshot.subscription?.source == "app_store")

        // Billing grace is paid (decision 17): the higher tier still wins; past it, billing
        // trouble on one source does not pull down a paid one.
        var troubled = both
        troubled.ledger.stripe[0].status = "past_due"
        troubled.ledger.stripe[0].pastDueSince = Self.now - 3 * Self.day
        #expect(engine.winningRight(troubled, at: Self.now)?.source == .stripe)
        #expect(engine.planExpiry(troubled, at: Self.now) == Self.now + 11 * Self.day)
        troubled.ledger.stripe[0].pastDueSince = Self.now - 15 * Self.day
        #expect(engine.state(of: troubled, at: Self.now) == .pro)
        #expect(engine.winningRight(troubled, at: Self.now)?.source == .appStore)

        // A grant over a lapsed subscription; a revoked or ended grant gives nothing.
        let lapsed = Self.stripe("unpaid", ends: 3 * Self.day)
        snapshot = engine.snapshot(Self.input(stripe: [lapsed], grants: [Self.grant(tier: "nutritionist", ends: 2 * Self.day)]), at: Self.now)
        #expect(snapshot.planState == "pro" && snapshot.tier == "nutritionist" && snapshot.subscription?.source == "grant")
        #expect(engine.state(of: Self.input(grants: [Self.grant(tier: nil, ends: Self.day, revoked: true)]), at: Self.now) == .free)
        #expect(engine.state(of: Self.input(grants: [Self.grant(tier: nil, ends: -1)]), at: Self.now) == .free)
        // A grant without a tier: the paid plan's own (premium).
        #expect(engine.snapshot(Self.input(grants: [Self.grant(tier: nil, ends: Self.day)]), at: Self.now).tier == "premium")

        // The trial is the floor: a running trial under a paid subscription leaves it pro, and
        // `plan_expires_at` follows whichever ends last.
        let fresh = Self.input(stripe: [Self.stripe("active", ends: 2 * Self.day, cancelling: true)], trialStarted: Self.now - Self.day)
        #expect(engine.state(of: fresh, at: Self.now) == .pro)
        #expect(engine.planExpiry(fresh, at: Self.now) == Self.now + 6 * Self.day)
        #expect(engine.state(of: fresh, at: Self.now + 3 * Self.day) == .trial)
    }

    /// Every source is walked, and each names itself in the snapshot.
    @Test func everySourceIsInTheLedger() throws {
        let engine = try Self.engineWithGooglePlay()
        var input = Self.input(
            appStore: [Self.appStore(ends: Self.day)], stripe: [Self.stripe("active", ends: Self.day)], grants: [Self.grant(tier: nil, ends: Self.day)],
            trialStarted: Self.now - Self.day)
        input.ledger.googlePlay = [Self.googlePlay(.active, ends: Self.day)]
        let rights = engine.ledger(input, at: Self.now)
        #expect(rights.map(\.source) == PlanSource.allCases)
        for source in PlanSource.allCases {
            let right = try #require(rights.first { $0.source == source })
            switch source {
            case .appStore, .stripe, .googlePlay, .grant: #expect(right.info?.source == source.rawValue)
            case .trial: #expect(right.info == nil && right.end == Self.now + 6 * Self.day)
            }
        }
    }

    /// Issue 59: an account holding a right of every paid source at once (App Store, Stripe,
    /// Google Play, a grant); ending any one alone keeps the others, and the snapshot lists them.
    @Test func endingAnyOneSourceKeepsTheOthers() throws {
        let engine = try Self.engineWithGooglePlay()
        var all = Self.input(
            appStore: [Self.appStore(ends: 5 * Self.day)], stripe: [Self.stripe("active", ends: 6 * Self.day)],
            googlePlay: [Self.googlePlay(.active, ends: 7 * Self.day)], grants: [Self.grant(tier: nil, ends: 8 * Self.day)])
        all.trialStartedAt = nil
        let paid = PlanSource.allCases.filter { $0 != .trial }
        #expect(engine.snapshot(all, at: Self.now).sources?.compactMap(\.source) == paid.map(\.rawValue))
        for ended in paid {
            var input = all
            switch ended {
            case .appStore: input.ledger.appStore[0].status = .refunded
            case .stripe: input.ledger.stripe[0].status = "canceled"
            case .googlePlay: input.ledger.googlePlay[0].voidedAt = Self.now
            case .grant: input.ledger.grants[0].revokedAt = Self.now
            case .trial: continue
            }
            let snapshot = engine.snapshot(input, at: Self.now)
            #expect(snapshot.planState == "pro", "ending \(ended)")
            #expect(snapshot.sources?.compactMap(\.source) == paid.filter { $0 != ended }.map(\.rawValue), "ending \(ended)")
        }
    }

    /// Google Play's states (issue 59): ACTIVE, IN_GRACE_PERIOD and CANCELED give the right until
    /// the line item's expiry; the others nothing; a replaced or voided token nothing; a live one
    /// keeps the account from the stale-account clean-up, on hold included (Google may still bill).
    @Test func googlePlayStatesAndChains() throws {
        let engine = try Self.engineWithGooglePlay()
        for state in GooglePlaySubscriptionRecord.State.allCases {
            let input = Self.input(googlePlay: [Self.googlePlay(state, ends: Self.day)])
            let expected: PlanState = [.active, .inGracePeriod, .canceled].contains(state) ? .pro : .free
            #expect(engine.state(of: input, at: Self.now) == expected, "\(state)")
            #expect(engine.state(of: input, at: Self.now + 2 * Self.day) == .free, "\(state) after its expiry")
        }
        let replaced = Self.input(googlePlay: [Self.googlePlay(.active, ends: Self.day, supersededBy: "newer")])
        #expect(engine.state(of: replaced, at: Self.now) == .free)
        #expect(engine.ledger(replaced, at: Self.now).first?.info?.status == "replaced")
        let voided = Self.input(googlePlay: [Self.googlePlay(.active, ends: Self.day, voided: true)])
        #expect(engine.state(of: voided, at: Self.now) == .free)
        #expect(engine.ledger(voided, at: Self.now).first?.info?.status == "refunded")
        let grace = LedgerGrace(proGraceHours: 24)
        #expect(LedgerRows(googlePlay: [Self.googlePlay(.onHold, ends: -Self.day)]).holdLiveRight(at: Self.now, grace: grace))
        #expect(!LedgerRows(googlePlay: [Self.googlePlay(.expired, ends: -Self.day)]).holdLiveRight(at: Self.now, grace: grace))
        #expect(!LedgerRows(googlePlay: [Self.googlePlay(.active, ends: Self.day, voided: true)]).holdLiveRight(at: Self.now, grace: grace))
        // A product the preset does not sell gives nothing.
        #expect(engine.state(of: Self.input(googlePlay: [Self.googlePlay(.active, ends: Self.day, product: "other")]), at: Self.now) == .free)
    }

    /// Stripe's signature scheme: the header parsed, the timestamp's tolerance, every secret tried.
    @Test func stripeSignatureHeader() {
        // A stand-in MAC (FNV-1a over key and message): the scheme is under test here, the real
        // HMAC-SHA256 in StripeTests, checked by Stripe's own package.
        func mac(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in key + [0] + message { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            return withUnsafeBytes(of: hash.bigEndian, Array.init)
        }
        let body = Array(#"{"id": "evt_1"}"#.utf8)
        let t = Int64(Self.now.timeIntervalSince1970)
        let good = mac(Array("whsec_b".utf8), Array("\(t).".utf8) + body).map { String(format: "%02x", $0) }.joined()
        let header = "t=\(t),v1=00ff,v1=\(good),v0=abc"
        #expect(StripeSignature.verify(header: header, body: body, secrets: ["whsec_a", "whsec_b"], now: Self.now, mac: mac) == nil)
        #expect(StripeSignature.verify(header: header, body: body, secrets: ["whsec_a"], now: Self.now, mac: mac) == .mismatch)
        #expect(StripeSignature.verify(header: header, body: body, secrets: ["whsec_b"], now: Self.now + 301, mac: mac) == .stale)
        #expect(StripeSignature.verify(header: header, body: body + [0x20], secrets: ["whsec_b"], now: Self.now, mac: mac) == .mismatch)
        #expect(StripeSignature.verify(header: nil, body: body, secrets: ["whsec_b"], now: Self.now, mac: mac) == .missing)
        #expect(StripeSignature.verify(header: "v1=\(good)", body: body, secrets: ["whsec_b"], now: Self.now, mac: mac) == .malformed)
        #expect(StripeSignature.verify(header: "t=\(t),v1=zz", body: body, secrets: ["whsec_b"], now: Self.now, mac: mac) == .malformed)
    }
}
