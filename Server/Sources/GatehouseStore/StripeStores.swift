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
    /// Notes an event as applied by its id (a unique key); false when it had been already.
    func recordStripeEvent(id: String, type: String, outcome: String, at date: Date) async throws(StoreError) -> Bool
    /// Whether the event was recorded (a read; `recordStripeEvent` is what decides).
    func stripeEventRecorded(_ id: String) async throws(StoreError) -> Bool
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
public protocol PlanLedgerStore: AppStoreSubscriptionStore, StripeStore, GrantStore {}
