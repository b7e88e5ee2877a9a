import Foundation
import GatehouseWire

// App Store Server Notifications V2 and StoreKit 2 payloads, after their JWS has been verified,
// and what Gatehouse keeps of a subscription. Field names follow Apple's JSON; dates are
// milliseconds since 1970.

/// A StoreKit 2 transaction (`JWSTransactionDecodedPayload`).
public struct AppStoreTransaction: Decodable, Sendable, Equatable {
    public var transactionId: String
    public var originalTransactionId: String
    public var bundleId: String
    public var productId: String
    public var environment: String
    public var signedDate: Int64
    public var purchaseDate: Int64?
    public var expiresDate: Int64?
    public var appAccountToken: String?
    /// 1 introductory offer, 2 promotional offer, 3 offer code, 4 win-back offer.
    public var offerType: Int?
    public var revocationDate: Int64?
    public var type: String?

    public init(
        transactionId: String, originalTransactionId: String, bundleId: String, productId: String, environment: String,
        signedDate: Int64, purchaseDate: Int64? = nil, expiresDate: Int64? = nil, appAccountToken: String? = nil,
        offerType: Int? = nil, revocationDate: Int64? = nil, type: String? = nil
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.bundleId = bundleId
        self.productId = productId
        self.environment = environment
        self.signedDate = signedDate
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.appAccountToken = appAccountToken
        self.offerType = offerType
        self.revocationDate = revocationDate
        self.type = type
    }

    public static let introductoryOffer = 1
}

/// A subscription's renewal information (`JWSRenewalInfoDecodedPayload`).
public struct AppStoreRenewal: Decodable, Sendable, Equatable {
    public var originalTransactionId: String
    public var productId: String?
    public var environment: String
    public var signedDate: Int64
    /// 1 when the subscription will renew.
    public var autoRenewStatus: Int?
    public var gracePeriodExpiresDate: Int64?
    public var isInBillingRetryPeriod: Bool?

    public init(
        originalTransactionId: String, productId: String? = nil, environment: String, signedDate: Int64,
        autoRenewStatus: Int? = nil, gracePeriodExpiresDate: Int64? = nil, isInBillingRetryPeriod: Bool? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.environment = environment
        self.signedDate = signedDate
        self.autoRenewStatus = autoRenewStatus
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
    }
}

/// A notification (`ResponseBodyV2DecodedPayload`); its nested JWS are verified separately.
public struct AppStoreNotification: Decodable, Sendable, Equatable {
    public var notificationType: String
    public var subtype: String?
    public var notificationUUID: String
    public var signedDate: Int64
    public var data: DataPart?

    public struct DataPart: Decodable, Sendable, Equatable {
        public var bundleId: String?
        public var environment: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
        /// 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked.
        public var status: Int?
    }
}

/// What Gatehouse keeps of one subscription (one `originalTransactionId`): the facts the
/// entitlement engine needs, updated by purchases and notifications in `signedDate` order.
public struct SubscriptionRecord: Sendable, Equatable {
    public enum Status: String, Sendable, CaseIterable {
        case active
        /// Apple's billing grace period: still entitled until `graceExpiresAt` (decision 17).
        case billingGrace = "billing_grace"
        /// Billing retry after the grace period (or without one): not entitled.
        case billingRetry = "billing_retry"
        case expired, refunded, revoked
    }

    public var originalTransactionID: String
    /// `nil` until an account claims it (a notification may come before the app posts it).
    public var userID: UserID?
    public var productID: String
    public var environment: String
    public var status: Status
    public var expiresAt: Date?
    public var graceExpiresAt: Date?
    public var willRenew: Bool
    /// The latest transaction was an introductory offer (Handz: a StoreKit trial, decision 18).
    public var introductory: Bool
    /// The `signedDate` of the newest payload applied; older ones arriving late change nothing.
    public var signedAt: Date
    public var updatedAt: Date

    public init(
        originalTransactionID: String, userID: UserID?, productID: String, environment: String, status: Status,
        expiresAt: Date?, graceExpiresAt: Date? = nil, willRenew: Bool, introductory: Bool, signedAt: Date, updatedAt: Date
    ) {
        self.originalTransactionID = originalTransactionID
        self.userID = userID
        self.productID = productID
        self.environment = environment
        self.status = status
        self.expiresAt = expiresAt
        self.graceExpiresAt = graceExpiresAt
        self.willRenew = willRenew
        self.introductory = introductory
        self.signedAt = signedAt
        self.updatedAt = updatedAt
    }
}

extension SubscriptionRecord {
    /// The record after `transaction` (and `renewal`) as notification `type`/`subtype` tells
    /// them, or as the app posted them when `type` is nil. `current` is what was stored.
    public static func applying(
        type: String?, subtype: String?, statusHint: Int? = nil, transaction: AppStoreTransaction, renewal: AppStoreRenewal?,
        signedAt: Date, to current: SubscriptionRecord?, now: Date
    ) -> SubscriptionRecord {
        var record =
            current
            ?? SubscriptionRecord(
                originalTransactionID: transaction.originalTransactionId, userID: nil, productID: transaction.productId,
                environment: transaction.environment, status: .active, expiresAt: nil, willRenew: true, introductory: false,
                signedAt: signedAt, updatedAt: now)
        record.productID = transaction.productId
        record.environment = transaction.environment
        record.expiresAt = transaction.expiresDate.map(Date.init(unixMilliseconds:))
        record.introductory = transaction.offerType == AppStoreTransaction.introductoryOffer
        if let renewal {
            if let status = renewal.autoRenewStatus { record.willRenew = status == 1 }
            record.graceExpiresAt = renewal.gracePeriodExpiresDate.map(Date.init(unixMilliseconds:))
        }
        record.signedAt = signedAt
        record.updatedAt = now

        switch type {
        case "SUBSCRIBED", "DID_RENEW", "OFFER_REDEEMED", "RENEWAL_EXTENDED":
            record.status = .active
        case "DID_CHANGE_RENEWAL_STATUS", "DID_CHANGE_RENEWAL_PREF", "PRICE_INCREASE":
            break
        case "DID_FAIL_TO_RENEW":
            record.status = subtype == "GRACE_PERIOD" ? .billingGrace : .billingRetry
        case "GRACE_PERIOD_EXPIRED":
            record.status = .billingRetry
        case "EXPIRED":
            record.status = .expired
            record.willRenew = false
        case "REFUND":
            record.status = .refunded
            record.willRenew = false
        case "REVOKE":
            record.status = .revoked
            record.willRenew = false
        case nil:
            // Posted by the app: the transaction speaks for itself, except that the same period
            // posted again during a billing problem keeps what the notifications said.
            if let current, [.billingGrace, .billingRetry].contains(current.status),
                (record.expiresAt ?? .distantPast) <= (current.expiresAt ?? .distantPast)
            {
                break
            }
            record.status = .active
        default:
            // Any other notification: Apple's own status of the subscription, when it gives one.
            switch statusHint {
            case 1: record.status = .active
            case 2: record.status = .expired
            case 3: record.status = .billingRetry
            case 4: record.status = .billingGrace
            case 5: record.status = .revoked
            default: break
            }
        }
        if transaction.revocationDate != nil && record.status != .refunded {
            record.status = .revoked
            record.willRenew = false
        }
        return record
    }

    /// Whether the subscription gives its plan at `now`, and whether it is only by the
    /// `pro_grace` window (the period ended, a renewal is expected but not yet confirmed).
    public func entitlement(at now: Date, graceHours: Int) -> Entitlement {
        switch status {
        case .active:
            guard let expiresAt else { return .notEntitled }
            if now < expiresAt { return introductory ? .trial(until: expiresAt) : .paid }
            if willRenew && now < expiresAt.addingTimeInterval(TimeInterval(graceHours) * 3600) { return .unconfirmedRenewal }
            return .notEntitled
        case .billingGrace:
            let end = graceExpiresAt ?? expiresAt
            guard let end, now < end else { return .notEntitled }
            return .paid
        case .billingRetry, .expired, .refunded, .revoked:
            return .notEntitled
        }
    }

    public enum Entitlement: Sendable, Equatable {
        case notEntitled
        case paid
        /// An introductory offer until its end (decision 18).
        case trial(until: Date)
        /// CH08's pro_grace: cannot be verified right now, recently verified.
        case unconfirmedRenewal
    }

    /// When this subscription stops giving its plan if nothing new arrives.
    public func entitlementEnd(graceHours: Int) -> Date? {
        switch status {
        case .active:
            guard let expiresAt else { return nil }
            return willRenew ? expiresAt.addingTimeInterval(TimeInterval(graceHours) * 3600) : expiresAt
        case .billingGrace:
            return graceExpiresAt ?? expiresAt
        default:
            return nil
        }
    }

    /// The contract's `subscription` object at `now`.
    public func info(at now: Date, graceHours: Int) -> SubscriptionInfo {
        var shown = status.rawValue
        if status == .active, entitlement(at: now, graceHours: graceHours) == .notEntitled { shown = Status.expired.rawValue }
        let renews = status == .active && willRenew && (expiresAt.map { now < $0 } ?? false)
        return SubscriptionInfo(
            productID: productID, status: shown, renewsAt: renews ? expiresAt?.rfc3339 : nil, expiresAt: expiresAt?.rfc3339,
            willRenew: willRenew && [.active, .billingGrace, .billingRetry].contains(status))
    }
}
