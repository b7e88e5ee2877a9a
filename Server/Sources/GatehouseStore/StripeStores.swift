import Foundation
import GatehouseCore

/// Stripe's side of the plan ledger (issue 44): the customer made for each account, each
/// subscription's state as last read from Stripe's API, and the events applied.
public protocol StripeStore: Sendable {
    /// The account's own Stripe customer (the one its checkouts made), if one was made.
    func stripeCustomer(of userID: UserID) async throws(StoreError) -> String?
    /// Every Stripe customer of the account: its own first, then those that came with merged
    /// accounts (issue 59), oldest first.
    func stripeCustomers(of userID: UserID) async throws(StoreError) -> [String]
    /// The account a Stripe customer was made for, if it is one of ours.
    func stripeCustomerOwner(_ customerID: String) async throws(StoreError) -> UserID?
    /// Keeps `customerID` as the account's customer unless one is stored already (the account is
    /// the key, so parallel checkouts keep the first); answers the customer stored afterwards.
    func saveStripeCustomer(userID: UserID, customerID: String, at date: Date) async throws(StoreError) -> String
    func stripeSubscriptions(of userID: UserID) async throws(StoreError) -> [StripeSubscriptionRecord]
    /// The account a stored subscription belongs to (a merged account's subscription keeps
    /// its customer, which may be no longer the account's own).
    func stripeSubscriptionOwner(_ subscriptionID: String) async throws(StoreError) -> UserID?
    /// Gives `from`'s Stripe subscriptions and every one of its customers to `to` (an anonymous
    /// account merged into another); `from`'s own customer stays `to`'s own only when `to` has none.
    func moveStripeRows(from: UserID, to: UserID) async throws(StoreError)
    /// Saves Stripe's state of a subscription in one conditional statement, unless a later read
    /// is stored or the stored state ended it for good (a late read never revives it); a stored
    /// owner is never replaced. True when written.
    @discardableResult
    func saveStripeSubscription(_ record: StripeSubscriptionRecord) async throws(StoreError) -> Bool
}

/// What each paid source delivered, applied once (issue 59: it was kept three ways): Apple's
/// `notificationUUID`, Stripe's event id, Google Play's Pub/Sub `messageId`, keyed by the source
/// and that id and written in the transaction that applies the delivery.
public protocol LedgerEventStore: Sendable {
    /// Notes a delivery as applied by its source's id (a unique key); false when it had been already.
    func recordLedgerEvent(source: PlanSource, id: String, type: String, outcome: String, at date: Date) async throws(StoreError) -> Bool
    /// Whether the delivery was recorded (a read to skip work early; `recordLedgerEvent` is what decides).
    func ledgerEventRecorded(source: PlanSource, id: String) async throws(StoreError) -> Bool
}

/// Google Play's side of the plan ledger (issue 59): each purchase token's state as last read
/// from `purchases.subscriptionsv2`.
public protocol GooglePlayStore: Sendable {
    func googlePlayPurchases(of userID: UserID) async throws(StoreError) -> [GooglePlaySubscriptionRecord]
    func googlePlayPurchase(token: String) async throws(StoreError) -> GooglePlaySubscriptionRecord?
    /// Saves Google's state of a purchase in one conditional statement unless a later read is
    /// stored; the token is the key, so a stored owner is never replaced (an unowned row is
    /// adopted) and `supersededBy`, `voidedAt` once set are kept. Answers the owner as stored
    /// afterwards.
    @discardableResult
    func saveGooglePlayPurchase(_ record: GooglePlaySubscriptionRecord) async throws(StoreError) -> UserID?
    /// Marks `token` replaced by `newer` (the newer purchase's `linkedPurchaseToken`); true
    /// when a row was marked.
    @discardableResult
    func supersedeGooglePlayPurchase(_ token: String, by newer: String) async throws(StoreError) -> Bool
    /// Marks `token` voided (a refund or chargeback) unless it was; true when marked now.
    @discardableResult
    func voidGooglePlayPurchase(_ token: String, at date: Date) async throws(StoreError) -> Bool
    /// Notes Google's acknowledgement of `token`.
    func markGooglePlayPurchaseAcknowledged(_ token: String) async throws(StoreError)
    /// Gives `from`'s purchases to `to` (an anonymous account merged into another).
    func moveGooglePlayPurchases(from: UserID, to: UserID) async throws(StoreError)
}

/// Operators' promotional grants.
public protocol GrantStore: Sendable {
    func insertGrant(_ grant: PlanGrant) async throws(StoreError)
    /// Every grant of the account, revoked and ended ones included, oldest first.
    func grants(of userID: UserID) async throws(StoreError) -> [PlanGrant]
    /// Revokes a live grant of the account in one conditional statement; false when there is no
    /// such grant or it was revoked already.
    func revokeGrant(_ id: UUID, of userID: UserID, at date: Date) async throws(StoreError) -> Bool
    /// Gives `from`'s grants to `to` (an anonymous account merged into another).
    func moveGrants(from: UserID, to: UserID) async throws(StoreError)
}

/// Every source of the plan ledger (`PlanSource`): what reading an account's plan needs. Use
/// cases that compute a plan see the store through this, so a new source's rows reach each one.
public protocol PlanLedgerStore: AppStoreSubscriptionStore, StripeStore, GooglePlayStore, GrantStore, LedgerEventStore {
    /// The rows of `sources` that each account of `ids` holds, read together, a statement per
    /// source for up to 50 accounts (the console's lists); an account with none is absent.
    func ledgerRows(ofAccounts ids: [UserID], sources: Set<PlanSource>) async throws(StoreError) -> [UserID: LedgerRows]
}

extension PlanLedgerStore {
    /// Every row the account holds of every paid source, ended ones included, walked source by
    /// source: what the clean-up, the export and a merge's check read, whatever the preset sells
    /// today. A new source names its rows here before this compiles. With `sources`, only theirs.
    public func ledgerRows(of userID: UserID, sources: Set<PlanSource> = Set(PlanSource.allCases)) async throws(StoreError) -> LedgerRows {
        var rows = LedgerRows()
        for source in PlanSource.allCases where sources.contains(source) {
            switch source {
            case .appStore: rows.appStore = try await subscriptions(of: userID)
            case .stripe: rows.stripe = try await stripeSubscriptions(of: userID)
            case .googlePlay: rows.googlePlay = try await googlePlayPurchases(of: userID)
            case .grant: rows.grants = try await grants(of: userID)
            case .trial: continue  // The account's own fields.
            }
        }
        return rows
    }
}
