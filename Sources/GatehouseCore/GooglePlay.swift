import Foundation
import GatehouseWire

// Google Play Billing, the ledger's next source (issue 59): what Gatehouse reads of a
// subscription purchase from `purchases.subscriptionsv2.get` (`SubscriptionPurchaseV2`) and
// what each of Google's states gives. Pure: the server's client fetches the resource, this file
// says what it means.

/// The preset's `google_play`: the app's package name and the subscription products it sells,
/// each with the plan and tier it gives (`{"package_name": "com.example.app", "products":
/// {"premium_monthly": {"plan": "pro", "tier": "premium"}}}`).
public struct GooglePlaySettings: Sendable, Equatable, PresetSection {
    public var packageName: String?
    public var products: [String: ProductSettings] = [:]

    public init() {}

    static var fields: [PresetField<Self>] { [.key("package_name", \.packageName), .key("products", \.products)] }

    func problems() -> [String] {
        var problems: [String] = []
        if !products.isEmpty, packageName?.isEmpty ?? true { problems.append("'google_play.package_name' must be set when it sells products") }
        if let name = packageName, !Self.isPackageName(name) {
            problems.append("'google_play.package_name' must be an Android package name (com.example.app)")
        }
        for (id, product) in products.sorted(by: { $0.key < $1.key }) where product.plan != .pro {
            problems.append("'google_play.products.\(id).plan' must be pro (a subscription gives Pro)")
        }
        return problems
    }

    /// Letters, digits and `_` in two or more dot-separated parts, each starting with a letter.
    static func isPackageName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count >= 2 && name.utf8.count <= 255
            && parts.allSatisfy { part in
                guard let first = part.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
                return part.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }
            }
    }
}

/// The parts of Google's `SubscriptionPurchaseV2` Gatehouse reads. Unknown members are ignored;
/// a state this build does not know is kept as Google spelled it and gives nothing.
public struct SubscriptionPurchaseV2: Sendable, Equatable, Decodable {
    public struct LineItem: Sendable, Equatable, Decodable {
        public var productId: String
        /// RFC 3339, up to nanoseconds (`2026-11-28T10:00:00.123456789Z`).
        public var expiryTime: String?
    }

    public struct ExternalAccountIdentifiers: Sendable, Equatable, Decodable {
        /// What the app passed to `BillingFlowParams.setObfuscatedAccountId`: Gatehouse's account id.
        public var obfuscatedExternalAccountId: String?
    }

    /// Present (an empty object) for a license tester's purchase.
    public struct TestPurchase: Sendable, Equatable, Decodable {}

    public var subscriptionState: String?
    public var lineItems: [LineItem]?
    public var linkedPurchaseToken: String?
    public var acknowledgementState: String?
    public var testPurchase: TestPurchase?
    public var externalAccountIdentifiers: ExternalAccountIdentifiers?
    public var startTime: String?

    public init(json: [UInt8]) throws {
        self = try JSONDecoder().decode(Self.self, from: Data(json))
    }
}

/// What Gatehouse keeps of one Google Play subscription purchase (one purchase token): Google's
/// state as last read from its API, never assembled from notifications (each is only a reason to
/// read again).
public struct GooglePlaySubscriptionRecord: Sendable, Equatable {
    /// `SubscriptionPurchaseV2.subscriptionState`, without its `SUBSCRIPTION_STATE_` prefix.
    public enum State: String, Sendable, CaseIterable {
        case pending = "PENDING"
        case active = "ACTIVE"
        case paused = "PAUSED"
        case inGracePeriod = "IN_GRACE_PERIOD"
        case onHold = "ON_HOLD"
        case canceled = "CANCELED"
        case expired = "EXPIRED"
        case pendingPurchaseCanceled = "PENDING_PURCHASE_CANCELED"
        /// A state Google added after this build: it gives nothing until it is named here.
        case unknown = "UNKNOWN"

        /// Google's spelling, `SUBSCRIPTION_STATE_ACTIVE`, into a case.
        public init(google: String?) {
            let name = google.map { $0.hasPrefix("SUBSCRIPTION_STATE_") ? String($0.dropFirst(19)) : $0 } ?? ""
            self = Self(rawValue: name) ?? .unknown
        }

        /// Whether the state gives the product's right until the line item's expiry: bought and
        /// running, in Google's grace period while it retries the payment (billing grace, paid as
        /// the App Store's, decision 17), or cancelled but paid until its end.
        public var givesRight: Bool {
            switch self {
            case .active, .inGracePeriod, .canceled: true
            case .pending, .paused, .onHold, .expired, .pendingPurchaseCanceled, .unknown: false
            }
        }
    }

    public var purchaseToken: String
    /// `nil` until an account claims it.
    public var userID: UserID?
    public var productID: String
    public var state: State
    /// The latest line item's `expiryTime`.
    public var expiresAt: Date?
    /// The token this purchase replaced (an upgrade, a downgrade, a re-subscribe from the app).
    public var linkedPurchaseToken: String?
    public var obfuscatedAccountID: String?
    public var acknowledged: Bool
    /// A license tester's purchase: marked in the ledger and the console.
    public var testPurchase: Bool
    /// When this state was read from Google: an older read never overwrites a newer one.
    public var readAt: Date
    /// The newer purchase token that replaced this one (its `linkedPurchaseToken` names this):
    /// only the newest token of a chain gives the right.
    public var supersededBy: String?
    /// When Google voided it (a refund or a chargeback): it gives nothing from then on.
    public var voidedAt: Date?

    public init(
        purchaseToken: String, userID: UserID?, productID: String, state: State, expiresAt: Date?, linkedPurchaseToken: String?,
        obfuscatedAccountID: String?, acknowledged: Bool, testPurchase: Bool, readAt: Date, supersededBy: String? = nil, voidedAt: Date? = nil
    ) {
        self.purchaseToken = purchaseToken
        self.userID = userID
        self.productID = productID
        self.state = state
        self.expiresAt = expiresAt
        self.linkedPurchaseToken = linkedPurchaseToken
        self.obfuscatedAccountID = obfuscatedAccountID
        self.acknowledged = acknowledged
        self.testPurchase = testPurchase
        self.readAt = readAt
        self.supersededBy = supersededBy
        self.voidedAt = voidedAt
    }

    /// The record of `resource` as read for `purchaseToken` at `readAt`; `nil` when it names no
    /// product (a resource Gatehouse cannot give a right for).
    public init?(purchaseToken: String, resource: SubscriptionPurchaseV2, readAt: Date) {
        let items = resource.lineItems ?? []
        let latest = items.max { (Self.time($0.expiryTime) ?? .distantPast) < (Self.time($1.expiryTime) ?? .distantPast) }
        guard let latest else { return nil }
        self.init(
            purchaseToken: purchaseToken, userID: nil, productID: latest.productId, state: State(google: resource.subscriptionState),
            expiresAt: Self.time(latest.expiryTime), linkedPurchaseToken: resource.linkedPurchaseToken,
            obfuscatedAccountID: resource.externalAccountIdentifiers?.obfuscatedExternalAccountId,
            acknowledged: resource.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED", testPurchase: resource.testPurchase != nil,
            readAt: readAt)
    }

    /// Google's RFC 3339 times carry up to nine fractional digits; three are kept.
    public static func time(_ text: String?) -> Date? {
        guard var text else { return nil }
        if let dot = text.firstIndex(of: "."), let end = text[dot...].firstIndex(where: { !$0.isNumber && $0 != "." }) {
            let digits = text[text.index(after: dot)..<end]
            text.replaceSubrange(dot..<end, with: digits.isEmpty ? "" : "." + digits.prefix(3))
        }
        return Date(rfc3339: text)
    }

    /// Whether the token still stands for the purchase: not replaced by a newer token, not voided.
    public var stands: Bool { supersededBy == nil && voidedAt == nil }

    /// Paid until the line item's expiry in a state that gives the right, on a token that still
    /// stands; nothing otherwise.
    public func entitlement(at now: Date) -> SubscriptionRecord.Entitlement {
        guard stands, state.givesRight, let expiresAt, now < expiresAt else { return .notEntitled }
        return .paid
    }

    /// When it stops giving its plan if nothing new arrives.
    public var entitlementEnd: Date? { stands && state.givesRight ? expiresAt : nil }

    /// Whether Google may still charge for it (on hold and paused ones resume once paid): an
    /// account holding one is never cleaned up as stale.
    public var mayBill: Bool { stands && [.active, .inGracePeriod, .onHold, .paused, .pending].contains(state) }

    /// The snapshot's `subscription` object, in the App Store's vocabulary.
    public func info(at now: Date) -> SubscriptionInfo {
        let shown: String
        switch state {
        case _ where voidedAt != nil: shown = "refunded"
        case _ where supersededBy != nil: shown = "replaced"
        case .active: shown = entitlement(at: now) == .notEntitled ? "expired" : "active"
        case .inGracePeriod: shown = "billing_grace"
        case .onHold: shown = "billing_retry"
        case .canceled: shown = entitlement(at: now) == .notEntitled ? "expired" : "active"
        case .paused: shown = "paused"
        case .pending: shown = "incomplete"
        case .expired, .pendingPurchaseCanceled, .unknown: shown = "expired"
        }
        let renews = stands && state == .active && (expiresAt.map { now < $0 } ?? false)
        return SubscriptionInfo(
            productID: productID, status: shown, renewsAt: renews ? expiresAt?.rfc3339 : nil, expiresAt: expiresAt?.rfc3339,
            willRenew: stands && [.active, .inGracePeriod, .onHold].contains(state), source: PlanSource.googlePlay.rawValue,
            testPurchase: testPurchase ? true : nil)
    }
}
