import Foundation
import GatehouseWire

// One ledger of rights to a plan (issue 44). Every source keeps its own row with its own expiry
// and state; the plan, its tier and `plan_expires_at` are computed over all of them, so ending or
// refunding one source never ends what another sold or granted.

/// Where a right to a plan comes from. Closed: a new source does not compile until every rule
/// that walks the ledger (the engine, the export, the console) says what it means.
public enum PlanSource: String, Sendable, CaseIterable, Codable {
    /// A StoreKit subscription (`SubscriptionRecord`).
    case appStore = "app_store"
    /// A Stripe subscription bought on the web (`StripeSubscriptionRecord`).
    case stripe
    /// A Google Play subscription bought in the Android app (`GooglePlaySubscriptionRecord`).
    case googlePlay = "google_play"
    /// An operator's promotional grant (`PlanGrant`).
    case grant
    /// The server trial (`/v1/trial/start`, or sign-up when the preset says so): the floor, counted
    /// only when nothing bought or granted gives a plan.
    case trial
}

/// The windows the ledger's rules count in: CH08's `pro_grace` after a period ends unconfirmed
/// (the preset's `entitlements.pro_grace_hours`), and billing grace for a source that does not
/// say when its own ends (Stripe's `past_due`: the preset's `stripe.billing_grace_days`).
public struct LedgerGrace: Sendable, Equatable {
    public var proGraceHours: Int
    public var billingGraceDays: Int

    public init(proGraceHours: Int, billingGraceDays: Int = StripeSettings.defaultBillingGraceDays) {
        self.proGraceHours = proGraceHours
        self.billingGraceDays = billingGraceDays
    }

    /// The end of the pro_grace window after a period ending at `end`.
    public func unconfirmedUntil(_ end: Date) -> Date { end.addingTimeInterval(TimeInterval(proGraceHours) * 3600) }
}

/// What one source gives at a moment: its entitlement, tier, end and the object the snapshot shows.
public struct PlanRight: Sendable, Equatable {
    public var source: PlanSource
    public var entitlement: SubscriptionRecord.Entitlement
    /// The tier the source sells (a product's or price's, a grant's), `nil` for the plan's own.
    public var tier: String?
    /// When it stops giving its plan if nothing new arrives.
    public var end: Date?
    /// The snapshot's `subscription` object for it (`nil` for the trial, shown under `trial`).
    public var info: SubscriptionInfo?
}

/// What Gatehouse keeps of one Stripe subscription: Stripe's own state as last read from its API
/// (never assembled from webhook payloads, so the order events arrive in does not matter).
public struct StripeSubscriptionRecord: Sendable, Equatable {
    public var subscriptionID: String
    public var customerID: String
    /// `nil` when no account is known for the customer (acknowledged and recorded).
    public var userID: UserID?
    public var priceID: String
    /// Stripe's status: `trialing`, `active`, `past_due`, `canceled`, `unpaid`, `incomplete`,
    /// `incomplete_expired` or `paused`.
    public var status: String
    public var currentPeriodEnd: Date?
    public var cancelAtPeriodEnd: Bool
    public var trialEnd: Date?
    /// While `past_due`: when it first went past due (the failed renewal's period start), kept
    /// across reads while it stays past due, so billing grace runs once, not each cycle.
    public var pastDueSince: Date?
    /// When this state was read from Stripe: an older read never overwrites a newer one.
    public var readAt: Date
    public var updatedAt: Date

    public init(
        subscriptionID: String, customerID: String, userID: UserID?, priceID: String, status: String, currentPeriodEnd: Date?,
        cancelAtPeriodEnd: Bool, trialEnd: Date?, pastDueSince: Date? = nil, readAt: Date, updatedAt: Date
    ) {
        self.subscriptionID = subscriptionID
        self.customerID = customerID
        self.userID = userID
        self.priceID = priceID
        self.status = status
        self.currentPeriodEnd = currentPeriodEnd
        self.cancelAtPeriodEnd = cancelAtPeriodEnd
        self.trialEnd = trialEnd
        self.pastDueSince = pastDueSince
        self.readAt = readAt
        self.updatedAt = updatedAt
    }

    /// Stripe's statuses that end a subscription for good: a late read never revives one.
    public static let terminalStatuses: Set<String> = ["canceled", "incomplete_expired"]

    public var isTerminal: Bool { Self.terminalStatuses.contains(status) }

    /// Whether it runs: Stripe bills it, or will again once a payment goes through (`unpaid`,
    /// `paused`). A second checkout is refused while one runs; one whose first payment has not
    /// gone through (`incomplete`) does not block trying again.
    public var runs: Bool { ["trialing", "active", "past_due", "unpaid", "paused"].contains(status) }

    /// `trialing` → trial until its end; `active` → paid until the period ends (then, unless it
    /// was cancelled at the period's end, the pro_grace window while the renewal is confirmed);
    /// `past_due` → billing grace, paid as the App Store's is (decision 17), from when it went
    /// past due for `grace.billingGraceDays`, never past the unpaid period's end (issue 59,
    /// finding 3); anything else gives nothing, so the plan falls back to what the other sources
    /// grant.
    public func entitlement(at now: Date, grace: LedgerGrace) -> SubscriptionRecord.Entitlement {
        guard let end = currentPeriodEnd else { return .notEntitled }
        switch status {
        case "trialing":
            let until = trialEnd ?? end
            return now < until ? .trial(until: until) : .notEntitled
        case "active":
            if now < end { return .paid }
            if !cancelAtPeriodEnd && now < grace.unconfirmedUntil(end) { return .unconfirmedRenewal }
            return .notEntitled
        case "past_due":
            return billingGraceEnd(grace).map { now < $0 } == true ? .paid : .notEntitled
        default:
            return .notEntitled
        }
    }

    /// The end of billing grace while past due: `billingGraceDays` after it went past due, or the
    /// unpaid period's end if that comes first.
    func billingGraceEnd(_ grace: LedgerGrace) -> Date? {
        guard status == "past_due", let since = pastDueSince, let end = currentPeriodEnd else { return nil }
        return min(since.addingTimeInterval(TimeInterval(grace.billingGraceDays) * 86_400), end)
    }

    /// When it stops giving its plan if nothing new arrives.
    public func entitlementEnd(grace: LedgerGrace) -> Date? {
        guard let end = currentPeriodEnd else { return nil }
        switch status {
        case "trialing": return trialEnd ?? end
        case "active": return cancelAtPeriodEnd ? end : grace.unconfirmedUntil(end)
        case "past_due": return billingGraceEnd(grace)
        default: return nil
        }
    }

    /// The snapshot's `subscription` object, in the vocabulary App Store subscriptions use.
    public func info(at now: Date, grace: LedgerGrace) -> SubscriptionInfo {
        let shown: String
        switch status {
        case "trialing", "active": shown = entitlement(at: now, grace: grace) == .notEntitled ? "expired" : "active"
        // After billing grace Stripe may still retry: the App Store's word for that.
        case "past_due": shown = entitlement(at: now, grace: grace) == .notEntitled ? "billing_retry" : "billing_grace"
        case "unpaid": shown = "billing_retry"
        case "paused": shown = "paused"
        case "incomplete": shown = "incomplete"
        default: shown = "expired"
        }
        let renews = ["trialing", "active"].contains(status) && !cancelAtPeriodEnd && (currentPeriodEnd.map { now < $0 } ?? false)
        return SubscriptionInfo(
            productID: priceID, status: shown, renewsAt: renews ? currentPeriodEnd?.rfc3339 : nil, expiresAt: currentPeriodEnd?.rfc3339,
            willRenew: !cancelAtPeriodEnd && ["trialing", "active", "past_due"].contains(status), source: PlanSource.stripe.rawValue)
    }
}

/// An operator's promotional grant: the paid plan (at a tier, or the plan's own) from `startsAt`
/// until `until`, unless revoked.
public struct PlanGrant: Sendable, Equatable {
    public var id: UUID
    public var userID: UserID
    /// Always `pro` today: a grant gives the paid plan.
    public var plan: PlanState
    public var tier: String?
    public var startsAt: Date
    public var until: Date
    public var reason: String
    /// The operator who made it (`admin_key`, or the console's operator).
    public var createdBy: String
    public var revokedAt: Date?

    public init(
        id: UUID = SecureRandom.uuid(), userID: UserID, plan: PlanState = .pro, tier: String?, startsAt: Date, until: Date, reason: String,
        createdBy: String, revokedAt: Date? = nil
    ) {
        self.id = id
        self.userID = userID
        self.plan = plan
        self.tier = tier
        self.startsAt = startsAt
        self.until = until
        self.reason = reason
        self.createdBy = createdBy
        self.revokedAt = revokedAt
    }

    public func isActive(at now: Date) -> Bool { revokedAt == nil && startsAt <= now && now < until }

    public func info(at now: Date) -> SubscriptionInfo {
        SubscriptionInfo(
            productID: "grant", status: isActive(at: now) ? "active" : (revokedAt != nil ? "revoked" : "expired"), renewsAt: nil,
            expiresAt: until.rfc3339, willRenew: false, source: PlanSource.grant.rawValue)
    }
}

/// The ledger's rows: what an account holds of every paid source (`PlanSource` but the trial,
/// which is the account's own fields), ended rows included. The engine's input carries them;
/// the stale-account clean-up reads them whatever the preset sells today (a price taken off the
/// preset still bills).
public struct LedgerRows: Sendable, Equatable {
    /// App Store subscriptions (`SubscriptionRecord`, one per `originalTransactionId`).
    public var appStore: [SubscriptionRecord]
    /// Stripe subscriptions as last read from Stripe's API.
    public var stripe: [StripeSubscriptionRecord]
    /// Google Play subscription purchases (one per purchase token, replaced ones included).
    public var googlePlay: [GooglePlaySubscriptionRecord]
    /// Operators' grants, revoked and ended ones included.
    public var grants: [PlanGrant]

    public init(
        appStore: [SubscriptionRecord] = [], stripe: [StripeSubscriptionRecord] = [], googlePlay: [GooglePlaySubscriptionRecord] = [],
        grants: [PlanGrant] = []
    ) {
        self.appStore = appStore
        self.stripe = stripe
        self.googlePlay = googlePlay
        self.grants = grants
    }

    /// Whether any source still gives a right, or may still bill for one: an account holding
    /// one is never stale, whatever else says so (issue 59, finding 5: the anonymous cleanup
    /// deleted a paying account and cancelled its subscription). Walks every source.
    public func holdLiveRight(at now: Date, grace: LedgerGrace) -> Bool {
        PlanSource.allCases.contains { source in
            switch source {
            case .appStore: appStore.contains { $0.entitlement(at: now, graceHours: grace.proGraceHours) != .notEntitled }
            case .stripe: stripe.contains { !$0.isTerminal }
            case .googlePlay: googlePlay.contains { $0.mayBill || $0.entitlement(at: now) != .notEntitled }
            case .grant: grants.contains { $0.isActive(at: now) }
            // Not bought: a stale account's server trial does not keep it.
            case .trial: false
            }
        }
    }
}

extension EntitlementEngine {
    /// Every source's right at `now`, entitled or not, in `PlanSource` order. Each case says what
    /// its rows give; the trial is listed only while it runs.
    public func ledger(_ input: EntitlementInput, at now: Date) -> [PlanRight] {
        var rights: [PlanRight] = []
        for source in PlanSource.allCases {
            switch source {
            case .appStore:
                for record in input.ledger.appStore where settings.products[record.productID] != nil {
                    var info = record.info(at: now, graceHours: grace.proGraceHours)
                    info.source = source.rawValue
                    rights.append(
                        PlanRight(
                            source: source, entitlement: record.entitlement(at: now, graceHours: grace.proGraceHours),
                            tier: settings.products[record.productID]?.tier, end: record.entitlementEnd(graceHours: grace.proGraceHours),
                            info: info))
                }
            case .stripe:
                for record in input.ledger.stripe where stripePrices[record.priceID] != nil {
                    rights.append(
                        PlanRight(
                            source: source, entitlement: record.entitlement(at: now, grace: grace),
                            tier: stripePrices[record.priceID]?.tier, end: record.entitlementEnd(grace: grace),
                            info: record.info(at: now, grace: grace)))
                }
            case .googlePlay:
                for record in input.ledger.googlePlay where googlePlayProducts[record.productID] != nil {
                    rights.append(
                        PlanRight(
                            source: source, entitlement: record.entitlement(at: now), tier: googlePlayProducts[record.productID]?.tier,
                            end: record.entitlementEnd, info: record.info(at: now)))
                }
            case .grant:
                for grant in input.ledger.grants {
                    rights.append(
                        PlanRight(
                            source: source, entitlement: grant.isActive(at: now) ? .paid : .notEntitled, tier: grant.tier, end: grant.until,
                            info: grant.info(at: now)))
                }
            case .trial:
                if let end = serverTrialEnd(input), now < end {
                    rights.append(PlanRight(source: source, entitlement: .trial(until: end), tier: nil, end: end, info: nil))
                }
            }
        }
        return rights
    }

    /// The right that decides the plan: among what was bought or granted, the best entitlement
    /// (paid, then trial, then unconfirmed renewal), then the higher tier (the preset's
    /// `entitlements.tiers` order), then the later end; the server trial only when none gives one.
    public func winningRight(_ input: EntitlementInput, at now: Date) -> PlanRight? {
        func rank(_ e: SubscriptionRecord.Entitlement) -> Int {
            switch e {
            case .paid: 3
            case .trial: 2
            case .unconfirmedRenewal: 1
            case .notEntitled: 0
            }
        }
        func tierRank(_ tier: String?) -> Int { tier.flatMap { settings.tiers.firstIndex(of: $0) } ?? -1 }
        let entitled = ledger(input, at: now).filter { $0.entitlement != .notEntitled }
        let bought = entitled.filter { $0.source != .trial }
        return (bought.isEmpty ? entitled : bought).max { a, b in
            (rank(a.entitlement), tierRank(a.tier), a.end ?? .distantFuture) < (rank(b.entitlement), tierRank(b.tier), b.end ?? .distantFuture)
        }
    }

    /// The snapshot's `sources`: the object of every source giving a plan now.
    public func activeSources(_ input: EntitlementInput, at now: Date) -> [SubscriptionInfo] {
        ledger(input, at: now).filter { $0.entitlement != .notEntitled }.compactMap(\.info)
    }
}

/// `purchase.succeeded`'s data, one shape for every source of the ledger (issue 59: it was built
/// three ways with different keys): `source`, `kind` (`purchase`: the right was bought or bought
/// again; `renewal`: a period paid for), `product_id` (the product or price), `purchase_id` (the
/// source's id of the right: an App Store `originalTransactionId`, a Stripe subscription id, a
/// Google Play purchase token) and,
/// when the source names the payment, `transaction_id`.
public struct PurchaseEvent: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case purchase, renewal
    }

    public var source: PlanSource
    public var kind: Kind
    public var productID: String
    public var purchaseID: String
    public var transactionID: String?

    public init(source: PlanSource, kind: Kind, productID: String, purchaseID: String, transactionID: String? = nil) {
        self.source = source
        self.kind = kind
        self.productID = productID
        self.purchaseID = purchaseID
        self.transactionID = transactionID
    }

    /// The event's `data`.
    public var data: [String: String] {
        var data = ["source": source.rawValue, "kind": kind.rawValue, "product_id": productID, "purchase_id": purchaseID]
        data["transaction_id"] = transactionID
        return data
    }
}
