import Foundation
import GatehouseWire

/// One row of the Handz gate table (`Tests/fixtures/handz-gates.json`), which the engine's unit
/// test and the HTTP test both run.
public struct GateRow: Decodable, Sendable {
    public struct Expect: Decodable, Sendable {
        public var allowed: Bool
        public var gate: String?
        public var reasonCode: String?
        public var message: String?
        public var secondaryMessage: String?
        public var actions: [String]?
        public var labels: [String]?
        enum CodingKeys: String, CodingKey {
            case allowed, gate, message, actions, labels
            case reasonCode = "reason_code"
            case secondaryMessage = "secondary_message"
        }
    }
    public var name: String
    public var plan: String
    public var verified: Bool
    public var creditsSpent: Int
    public var action: String
    public var context: [String: Int]
    public var expect: Expect
    enum CodingKeys: String, CodingKey {
        case name, plan, verified, action, context, expect
        case creditsSpent = "credits_spent"
    }
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    public static func load() throws -> [GateRow] {
        struct File: Decodable { var rows: [GateRow] }
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: root.appendingPathComponent("Server/Tests/fixtures/handz-gates.json"))).rows
    }

    /// Problems with `decision`, empty when it matches.
    public func mismatches(_ decision: GateDecision?) -> [String] {
        guard let decision else { return ["no decision"] }
        var problems: [String] = []
        if decision.allowed != expect.allowed { problems.append("allowed \(decision.allowed)") }
        if decision.gate != expect.gate { problems.append("gate \(decision.gate ?? "nil")") }
        if decision.reasonCode != expect.reasonCode { problems.append("reason \(decision.reasonCode ?? "nil")") }
        if let message = expect.message, decision.message != message { problems.append("message \(decision.message ?? "nil")") }
        if let secondary = expect.secondaryMessage, decision.secondaryMessage != secondary { problems.append("secondary \(decision.secondaryMessage ?? "nil")") }
        if let actions = expect.actions, decision.actions.map(\.id) != actions { problems.append("actions \(decision.actions.map(\.id))") }
        if let labels = expect.labels, decision.actions.map(\.label) != labels { problems.append("labels \(decision.actions.map(\.label))") }
        return problems
    }
}
