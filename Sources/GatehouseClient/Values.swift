import Foundation

/// Where the person stands with the app's plans (`EntitlementsPayload.plan`).
public struct PlanState: GatehouseValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// No account.
    public static let guest: PlanState = "guest"
    public static let free: PlanState = "free"
    public static let trial: PlanState = "trial"
    public static let pro: PlanState = "pro"
    /// Pro that could not be verified lately (the store or the network is down).
    public static let proGrace: PlanState = "pro_grace"

    /// Pro, or Pro kept through a grace window.
    public var isPro: Bool { self == .pro || self == .proGrace }
}

/// How a person signs in: an identity on the account, the last way used on this device.
public struct SignInProvider: GatehouseValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Email and password.
    public static let email: SignInProvider = "email"
    public static let apple: SignInProvider = "apple"
    public static let google: SignInProvider = "google"
    public static let magicLink: SignInProvider = "magic_link"
    public static let anonymous: SignInProvider = "anonymous"
}

/// Which sessions `signOut(scope:)` ends.
public struct SignOutScope: GatehouseValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// This device only (the default: a phone signing out leaves the person's other devices
    /// alone). supabase-swift's default is `.global`.
    public static let local: SignOutScope = "local"
    /// Every other device; this one stays signed in.
    public static let others: SignOutScope = "others"
    /// Every device, this one included.
    public static let global: SignOutScope = "global"
}

/// Where in the app a gate was met, for the `gate_shown` and `upgrade_clicked` analytics events.
public struct GateSurface: GatehouseValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let flowSave: GateSurface = "flow_save"
    public static let practiceStart: GateSurface = "practice_start"
    public static let upload: GateSurface = "upload"
    public static let share: GateSurface = "share"
    public static let inbox: GateSurface = "inbox"
}

extension EntitlementsPayload {
    /// `planState` as a typed value.
    public var plan: PlanState { PlanState(rawValue: planState) }
}
