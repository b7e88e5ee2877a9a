import GatehouseWire
/// Where in the app a gate was met: the `surface` of the `gate_shown` and `upgrade_clicked`
/// analytics events (CH08 §9), which `AnalyticsCatalog` accepts and the SDK sends.
public struct GateSurface: GatehouseValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let flowSave: GateSurface = "flow_save"
    public static let practiceStart: GateSurface = "practice_start"
    public static let upload: GateSurface = "upload"
    public static let share: GateSurface = "share"
    public static let inbox: GateSurface = "inbox"

    /// Every surface the catalogue accepts.
    public static let all: [GateSurface] = [.flowSave, .practiceStart, .upload, .share, .inbox]
}
