import Foundation
import GatehouseCore
import GatehouseWire
import Testing

@Suite struct PresetTests {
    func decode(_ json: String) throws(PresetError) -> Preset {
        try Preset.decode(Data(json.utf8), source: "test")
    }

    @Test func onlyTheNameIsRequiredAndTheRestDefaults() throws {
        let preset = try decode(#"{"name": "mine"}"#)
        #expect(preset.name == "mine")
        #expect(preset.passwordPolicy.minLength == 8)
        #expect(preset.tokens.accessTokenTTLSeconds == 900)
        #expect(preset.tokens.refreshTokenTTLSeconds == 2_592_000)
        #expect(preset.tokens.sessionAbsoluteTTLSeconds == nil)
        #expect(preset.enumerationProtection == .strict)
        #expect(preset.signInMethods.enabled == ["email_password", "magic_link", "anonymous", "apple", "google"])
    }

    @Test func anUnknownKeyIsRefusedNamingItsPath() {
        #expect {
            try decode(#"{"name": "x", "password_policy": {"min_lenght": 10}}"#)
        } throws: { error in
            "\(error)".contains("'password_policy.min_lenght': unknown key")
        }
        #expect {
            try decode(#"{"name": "x", "colour": "red"}"#)
        } throws: { error in
            "\(error)".contains("'colour': unknown key")
        }
    }

    @Test func aWrongTypeIsRefusedNamingItsPath() {
        #expect {
            try decode(#"{"name": "x", "tokens": {"access_token_ttl_seconds": "15m"}}"#)
        } throws: { error in
            "\(error)".contains("'tokens.access_token_ttl_seconds': expected an integer")
        }
        #expect {
            try decode(#"{"name": "x", "enumeration_protection": "loose"}"#)
        } throws: { error in
            "\(error)".contains("enumeration_protection")
        }
    }

    @Test func outOfRangeValuesAreAllReportedAtOnce() {
        #expect {
            try decode(#"{"name": "x", "password_policy": {"min_length": 0, "max_length": 32}, "tokens": {"access_token_ttl_seconds": 5}}"#)
        } throws: { error in
            let problems = (error as? PresetError)?.problems ?? []
            return problems.count == 3 && problems.contains { $0.contains("min_length") }
                && problems.contains { $0.contains("max_length") } && problems.contains { $0.contains("access_token_ttl_seconds") }
        }
    }

    @Test func aPresetWithEveryMethodOffIsRefused() {
        #expect(throws: PresetError.self) {
            try decode(
                #"{"name": "x", "sign_in_methods": {"email_password": false, "magic_link": false, "anonymous": false, "apple": false, "google": false}}"#)
        }
    }

    @Test func invalidJSONIsRefusedWithAReason() {
        #expect {
            try decode("{ not json")
        } throws: { error in
            "\(error)".contains("not valid JSON")
        }
    }

    @Test func brandColoursMustBeHex() throws {
        var preset = Preset(name: "x")
        preset.app.brandColor = "red; background: url(https://evil.example)"
        #expect(preset.problems().contains("'app.brand_color' must be a colour written #rrggbb"))
        preset.app.brandColor = "#A0b1C2"
        #expect(preset.problems().isEmpty)
    }

    /// The server's own actions take step-up rules only: the person's account and data are
    /// never behind a paywall; a `recent_sign_in` rule says how recent.
    @Test func serverActionsTakeStepUpRulesOnly() throws {
        var preset = Preset(name: "x")
        preset.entitlements.actions["account.export"] = ActionSettings(rules: [GateRule(kind: .capability, capability: "can_export")])
        #expect(preset.problems() == ["'entitlements.actions.account.export' may only hold mfa and recent_sign_in rules"])
        preset.entitlements.actions["account.export"] = ActionSettings(rules: [GateRule(kind: .mfa), GateRule(kind: .recentSignIn)])
        #expect(preset.problems() == ["'entitlements.actions.account.export.rules[1]': a recent_sign_in rule needs 'within_minutes' between 1 and 10080"])
        preset.entitlements.actions["account.export"]?.rules[1].withinMinutes = 10
        #expect(preset.problems().isEmpty)
    }

    /// A usage meter must fill a cap rule of a real action, over an hour, a day or a month.
    @Test func aMeterMustFillACapRule() throws {
        var preset = Preset(name: "x")
        preset.entitlements.meters = ["chats": MeterSettings(action: "use_app", context: "chats_today")]
        #expect(preset.problems() == ["'entitlements.meters.chats': the action 'use_app' has no cap rule on the context 'chats_today'"])
        preset.entitlements.meters = ["chats": MeterSettings(action: "chat", context: "chats_today")]
        #expect(preset.problems() == ["'entitlements.meters.chats': 'action' names no action of this preset"])
        preset.entitlements.actions["chat"] = ActionSettings(rules: [GateRule(kind: .cap, limit: "chats_per_day", context: "chats_today")])
        preset.entitlements.meters = ["chats": MeterSettings(action: "chat", context: "chats_today", period: "week")]
        #expect(preset.problems() == ["'entitlements.meters.chats': 'period' must be hour, day or month"])
        preset.entitlements.meters["chats"]?.period = "hour"
        #expect(preset.problems().isEmpty)
        let window = try #require(preset.entitlements.meters["chats"]).window(at: Date(timeIntervalSince1970: 1_800_000_123))
        #expect(window.start == Date(timeIntervalSince1970: 1_800_000_000) && window.end == Date(timeIntervalSince1970: 1_800_003_600))
    }

    /// A rule's kind is one the engine knows: another is refused with its path and the kinds
    /// there are.
    @Test func anUnknownRuleKindIsRefusedNamingTheKnownOnes() {
        #expect {
            try decode(#"{"name": "x", "entitlements": {"actions": {"a": {"rules": [{"kind": "account"}, {"kind": "quota"}]}}}}"#)
        } throws: { error in
            "\(error)".contains(
                "'entitlements.actions.a.rules[1].kind': unknown kind 'quota' (expected one of: account, cap, capability, credit, mfa, rank, recent_sign_in, soft_cap, sum_cap, verification, writable)"
            )
        }
    }

    /// The SDK reads the rules from `/v1/config`: a kind a newer server added is left out (the
    /// engine always skipped a kind it did not know) and the others still decide.
    @Test func theSDKSkipsARuleKindItDoesNotKnow() throws {
        let json = #"{"actions": {"a": {"rules": [{"kind": "quota", "per": "day"}, {"kind": "account"}]}}, "new_setting": 1}"#
        let settings = try JSONDecoder().decode(EntitlementSettings.self, from: Data(json.utf8))
        #expect(settings.actions["a"]?.rules == [GateRule(kind: .account)])
    }

    /// Every shipped preset encodes under the keys it is read from (`/v1/config` publishes its
    /// parts), strictly, and reads back the same.
    @Test(arguments: Preset.builtInNames)
    func aPresetEncodesUnderItsOwnKeys(_ name: String) throws {
        let preset = try EntitlementEngineTests.preset(name)
        #expect(try Preset.decode(try JSONEncoder().encode(preset), source: name) == preset)
    }

    @Test func planStatesAreTheEnginesFive() {
        #expect(PlanState.all.map(\.rawValue) == ["guest", "free", "trial", "pro", "pro_grace"])
        #expect(PlanState(known: "pro_grace") == .proGrace && PlanState(known: "premium") == nil)
        #expect(!PlanState(rawValue: "premium").isKnown && PlanState.proGrace.isKnown)
    }

    @Test func publicConfigurationDecodingToleratesNewKeys() throws {
        // The SDK reads /v1/config; a newer server may add settings.
        let json = ##"{"preset":"x","app":{"name":"A","brand_color":"#000000","new_thing":1},"sign_in_methods":["anonymous"],"password_policy":{"min_length":8,"max_length":64,"min_character_classes":0,"blocklist":true,"breached_check":false},"handles":{"enabled":false,"min_length":3,"max_length":20,"temporary_prefix":"user-"},"access_token_ttl_seconds":900,"refresh_token_ttl_seconds":2592000,"enumeration_protection":"strict","copy":{},"extra":true}"##
        let decoded = try JSONDecoder().decode(PublicConfiguration.self, from: Data(json.utf8))
        #expect(decoded.signInMethods == ["anonymous"])
    }
}

@Suite struct EmailAddressTests {
    @Test(arguments: [
        ("  Alice@Example.COM ", "alice@example.com"),
        ("ａｌｉｃｅ@example.com", "alice@example.com"),  // fullwidth letters
        ("\u{212A}ate@example.com", "kate@example.com"),  // KELVIN SIGN
        ("STRASSE@example.com", "strasse@example.com"),
        ("straße@example.com", "strasse@example.com"),  // full case folding
        ("e\u{0301}lise@example.com", "\u{00E9}lise@example.com"),  // NFD → NFC
    ])
    func normalisesToOneIdentityKey(input: String, expected: String) {
        #expect(EmailAddress.normalize(input) == expected)
    }
}

@Suite struct ClockTests {
    @Test func manualClockMovesOnlyWhenTold() {
        let clock = ManualClock(Date(unixSeconds: 1_000))
        #expect(clock.now.unixSeconds == 1_000)
        clock.advance(by: 90)
        #expect(clock.now.unixSeconds == 1_090)
        #expect(Date(unixSeconds: 0).rfc3339 == "1970-01-01T00:00:00Z")
    }
}
