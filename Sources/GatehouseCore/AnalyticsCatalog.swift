import Foundation
import GatehouseWire

/// The client analytics events Gatehouse accepts at `POST /v1/events` (decision 23: the seeds'
/// names, under type `analytics`), with their properties: Handz CH08 §9 and OKLah §13.
public enum AnalyticsCatalog {
    public enum Kind: Sendable, Equatable {
        case string
        case integer
        case bool
        /// One of these strings.
        case oneOf(Set<String>)
    }

    public struct Event: Sendable {
        public var properties: [String: Kind]
        public var required: Set<String>
    }

    static let planStates: Kind = .oneOf(Set(PlanState.all.map(\.rawValue)))
    static let surfaces: Kind = .oneOf(Set(GateSurface.all.map(\.rawValue)))

    public static let events: [String: Event] = [
        "entitlement_snapshot_loaded": Event(
            properties: ["planState": planStates, "creditsRemaining": .integer, "caps": .string], required: ["planState"]),
        "gate_shown": Event(properties: ["reasonCode": .string, "planState": planStates, "surface": surfaces], required: ["reasonCode", "planState"]),
        "upgrade_clicked": Event(properties: ["surface": surfaces, "planState": planStates], required: ["surface"]),
        "trial_started": Event(properties: [:], required: []),
        "purchase_started": Event(properties: ["productId": .string], required: []),
        "purchase_success": Event(properties: ["productId": .string], required: []),
        "purchase_failed": Event(properties: ["productId": .string, "errorCode": .string], required: []),
        "restore_clicked": Event(properties: [:], required: []),
        "restore_success": Event(properties: [:], required: []),
        "restore_failed": Event(properties: ["errorCode": .string], required: []),
        "credit_spent": Event(properties: ["flowId": .string, "sessionId": .string], required: []),
        "downgrade_detected": Event(
            properties: ["previousPlan": planStates, "newPlan": planStates, "hasOverCapFlows": .bool], required: ["previousPlan", "newPlan"]),
        "onboarding_start": Event(properties: ["app_version": .string, "timestamp": .string, "user_id": .string], required: []),
        "onboarding_complete": Event(
            properties: ["app_version": .string, "timestamp": .string, "user_id": .string, "duration_ms": .integer], required: []),
        "onboarding_error": Event(
            properties: ["app_version": .string, "timestamp": .string, "user_id": .string, "error_code": .string], required: []),
        "onboarding_retry": Event(
            properties: ["app_version": .string, "timestamp": .string, "user_id": .string, "attempt_number": .integer], required: []),
    ]
}
