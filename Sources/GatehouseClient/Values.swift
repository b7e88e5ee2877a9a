import Foundation

// `GatehouseValue`, `PlanState`, `Provider`, `SignOutScope` and `AssuranceLevel` are Wire's, and
// `GateSurface` the core's: one definition for the server and the SDK (re-exported in Exports.swift).

/// Plan checks for the app's screens.
extension PlanState {
    /// Pro, or Pro kept through a grace window.
    public var isPro: Bool { self == .pro || self == .proGrace }
}

/// How a person signs in: an identity on the account, the last way used on this device
/// (`.email`, `.apple`, `.google`, `.magicLink`, `.anonymous`, `.passkey`, `.phone`).
public typealias SignInProvider = Provider

/// The snapshot's plan, typed.
extension EntitlementsPayload {
    /// `planState` (kept for apps written when the wire carried a string).
    public var plan: PlanState { planState }
}
