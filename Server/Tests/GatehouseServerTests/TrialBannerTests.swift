import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseWire
import GatehouseServer
import GatehouseTestSupport
import Testing

/// Issue 19, item 2: Hannah's trial banner, day by day (decision 18: day N is ⌊elapsed days⌋ + 1
/// and `days_left` = 7 − N), with the preset's plural forms, through the SDK against a live
/// server on an injected clock.
@Suite struct TrialBannerTests {
    /// Signs up through a magic link on `clock` and answers the plan model after `days` whole
    /// days (day `days + 1` of the trial, an hour into it).
    static func banners(
        adjust: @escaping @Sendable (inout GatehouseConfig) -> Void = { _ in }
    ) async throws -> [Day] {
        let clock = ManualClock(Date())
        let seen = Days()
        try await TestApp.run(.sqlite, preset: "hannah", clock: clock, setup: .live, adjust: adjust) { server, config in
            let device = try TestDevice()
            defer { device.remove() }
            let client = try device.launch(port: try #require(server.port))
            _ = try await client.loadConfiguration()
            try await client.sendMagicLink(email: "days@example.com")
            let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link")
            let code = try #require(mail.textBody?.firstMatch(of: /\b(\d{6})\b/)?.1)
            _ = try await client.verifyMagicLink(email: "days@example.com", code: String(code))
            clock.advance(by: 3_600)
            let status = await PlanStatus(client: client)
            for day in 1...8 {
                await status.update()
                await seen.append(Day(day: day, banner: await status.banner, plan: await status.planState.rawValue, paywall: await status.showsPaywall))
                clock.advance(by: 86_400)
            }
        }
        return await seen.rows
    }

    struct Day: Sendable {
        var day: Int
        var banner: String?
        var plan: String
        var paywall: Bool
    }

    actor Days {
        var rows: [Day] = []
        func append(_ row: Day) { rows.append(row) }
    }

    @Test func theBannerCountsDownInTheSeedsWords() async throws {
        let seen = try await Self.banners()
        let expected: [(String?, String, Bool)] = [
            (nil, "trial", false), (nil, "trial", false), (nil, "trial", false), (nil, "trial", false),
            ("2 days left in trial", "trial", false),
            ("1 day left in trial", "trial", false),
            ("Last day of your trial", "trial", false),
            (nil, "free", true),
        ]
        #expect(seen.count == 8)
        for (row, want) in zip(seen, expected) {
            #expect(row.banner == want.0 && row.plan == want.1 && row.paywall == want.2, "day \(row.day): \(row)")
        }
    }

    /// The preset's words reach the screen: changed copy shows changed words.
    @Test func thePresetsPluralFormsReachTheScreen() async throws {
        let seen = try await Self.banners(adjust: {
            $0.preset.copy["trial.days_left"] = "Trial: {days} days to go"
            $0.preset.copy["trial.days_left.one"] = "Trial: one day to go"
            $0.preset.copy["trial.days_left.zero"] = "Trial: ends today"
        })
        #expect(seen[4].banner == "Trial: 2 days to go")
        #expect(seen[5].banner == "Trial: one day to go")
        #expect(seen[6].banner == "Trial: ends today")
    }

    /// The forms' fallbacks, and a preset whose plural form has no `other` form is refused.
    @Test func pluralFormsFallBackAndAreChecked() {
        let forms = PluralCopy.Forms(zero: "none", one: "one", other: "{n} many")
        #expect(PluralCopy.text([:], "k", count: 0, placeholder: "n", fallback: forms) == "none")
        #expect(PluralCopy.text([:], "k", count: 1, placeholder: "n", fallback: forms) == "one")
        #expect(PluralCopy.text([:], "k", count: 5, placeholder: "n", fallback: forms) == "5 many")
        // A preset with only its `other` form keeps to its own words for every count.
        #expect(PluralCopy.text(["k": "{n} x"], "k", count: 1, placeholder: "n", fallback: forms) == "1 x")
        var preset = Preset(name: "custom")
        preset.copy["trial.days_left.one"] = "1 day"
        #expect(preset.problems().contains { $0.contains("'copy.trial.days_left.one'") })
    }
}
