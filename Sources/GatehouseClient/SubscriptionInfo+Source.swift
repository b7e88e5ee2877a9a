import Foundation
import GatehouseCore

/// A right to a plan in the snapshot (`subscription`, `sources`), read as the ledger's cases.
extension SubscriptionInfo {
    /// The ledger's source of this right (`source` as a case): `.appStore`, `.stripe`,
    /// `.googlePlay` (bought in the app's Android version) or `.grant`; nil for a source this
    /// SDK does not know yet. Switch over it to send "Manage subscription" where the right was
    /// bought:
    ///
    /// ```swift
    /// switch snapshot.subscription?.planSource {
    /// case .stripe: page = try await gatehouse.stripePortalURL()
    /// case .googlePlay: page = URL(string: "https://play.google.com/store/account/subscriptions")
    /// case .appStore: page = URL(string: "https://apps.apple.com/account/subscriptions")
    /// case .grant, .trial, nil: page = nil
    /// }
    /// ```
    public var planSource: PlanSource? { source.flatMap(PlanSource.init(rawValue:)) }
}
