import Foundation
import GatehouseCore
import GatehouseTestSupport
import GatehouseWire
import Testing

extension GateRow: CustomTestStringConvertible {
    public var testDescription: String { name }
}

@Suite struct EntitlementEngineTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func preset(_ name: String) throws -> Preset {
        try Preset.decode(
            Data(contentsOf: GateRow.root.appendingPathComponent("Sources/GatehouseServer/Resources/presets/\(name).json")), source: name)
    }

    static func input(_ row: GateRow) -> EntitlementInput {
        guard row.plan != "guest" else { return .guest }
        return EntitlementInput(
            userID: .random(), emailVerified: row.verified, accountCreatedAt: now.addingTimeInterval(-86_400),
            planOverride: ["pro", "pro_grace"].contains(row.plan) ? row.plan : nil,
            trialStartedAt: row.plan == "trial" ? now.addingTimeInterval(-3_600) : nil, creditsSpent: ["practice": row.creditsSpent])
    }

    @Test(arguments: try GateRow.load())
    func handzGates(_ row: GateRow) throws {
        let preset = try Self.preset("handz")
        let engine = EntitlementEngine(settings: preset.entitlements, copy: preset.copy)
        let decision = engine.decide(row.action, context: row.context, input: Self.input(row), at: Self.now)
        #expect(row.mismatches(decision).isEmpty, "\(row.name): \(row.mismatches(decision))")
    }

    @Test func everySeedPresetCoversTheContractsActions() throws {
        let handz = [
            "create_flow", "add_node", "save_flow", "edit_flow", "save_move", "practice_saved_flow", "practice_inbox_item", "accept_import",
            "move_inbox_to_library", "upload_media", "create_share_link", "duplicate_shared_flow", "share_flow", "export_data", "view_demo",
            "create_move", "save_practice_log", "save_draft", "attach_link_media", "open_share_link", "practice_demo",
        ]
        #expect(Set(try Self.preset("handz").entitlements.actions.keys) == Set(handz))
        #expect(Set(try Self.preset("hannah").entitlements.actions.keys) == ["ai_chat", "log_food", "view_history", "send_sms"])
        for name in ["oklah", "syncwell", "default"] {
            #expect(Array(try Self.preset(name).entitlements.actions.keys) == ["use_app"])
        }
    }

    /// Decision 18: day N is ⌊elapsed days⌋ + 1 and days_left = 7 − N; day 8 is expired.
    @Test func hannahsTrialEndsByTheClock() throws {
        let preset = try Self.preset("hannah")
        let engine = EntitlementEngine(settings: preset.entitlements, copy: preset.copy)
        let created = Self.now
        let input = EntitlementInput(userID: .random(), emailVerified: true, accountCreatedAt: created, trialStartedAt: created)
        func day(_ n: Int) -> Date { created.addingTimeInterval(Double(n - 1) * 86_400 + 60) }
        #expect(engine.snapshot(input, at: day(1)).trial?.daysLeft == 6)
        #expect(engine.snapshot(input, at: day(5)).trial?.daysLeft == 2)
        #expect(engine.decide("ai_chat", context: [:], input: input, at: day(7))?.allowed == true)
        let expired = engine.snapshot(input, at: day(8))
        #expect(expired.planState == "free" && expired.readOnly && expired.trial == nil)
        let chat = engine.decide("ai_chat", context: [:], input: input, at: day(8))
        #expect(chat?.allowed == false && chat?.gate == "paywall" && chat?.reasonCode == "trial_expired")
        #expect(engine.decide("view_history", context: [:], input: input, at: day(8))?.allowed == true)
        #expect(engine.planExpiry(input, at: day(2)) == created.addingTimeInterval(7 * 86_400))
    }

    @Test func creditPeriodsAreCalendarMonthsOrAnniversaries() throws {
        var settings = EntitlementSettings()
        let engine = EntitlementEngine(settings: settings, copy: [:])
        let created = Date(timeIntervalSince1970: 1_799_000_000)  // 2027-01-03
        let input = EntitlementInput(userID: .random(), accountCreatedAt: created)
        let now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15
        let month = engine.creditPeriod(input, at: now)
        #expect(month.start.rfc3339 == "2027-01-01T00:00:00Z" && month.end.rfc3339 == "2027-02-01T00:00:00Z")
        settings.creditPeriod = "anniversary"
        let anniversary = EntitlementEngine(settings: settings, copy: [:]).creditPeriod(input, at: now)
        #expect(anniversary.start.rfc3339 == "2027-01-03T00:00:00Z" && anniversary.end.rfc3339 == "2027-02-03T00:00:00Z")
    }
}
