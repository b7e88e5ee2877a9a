/// Where a person stands with the app's plans (CH08 §2): the engine answers one of the five
/// states below. A preset names them as the keys of `entitlements.plans`, in `same_as` and in a
/// product's `plan`; the wire carries the raw string (`plan_state`, the access token's `plan`
/// claim, an operator's stored override), which `PlanState(known:)` checks.
public struct PlanState: GatehouseValue, CodingKeyRepresentable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// No account.
    public static let guest: PlanState = "guest"
    public static let free: PlanState = "free"
    /// A server trial or an App Store introductory offer; behaves as `pro` in the seed presets.
    public static let trial: PlanState = "trial"
    public static let pro: PlanState = "pro"
    /// Pro that could not be verified lately (the store or the network is down; 72 hours by
    /// default, decision 16).
    public static let proGrace: PlanState = "pro_grace"

    /// Every state the engine answers, in CH08's order.
    public static let all: [PlanState] = [.guest, .free, .trial, .pro, .proGrace]

    /// The state `rawValue` names, or `nil` when it is none of the engine's (an override or a
    /// claim the engine does not honour).
    public init?(known rawValue: String) {
        guard let state = Self.all.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = state
    }

    /// Whether this is one of the engine's states.
    public var isKnown: Bool { Self.all.contains(self) }
}
