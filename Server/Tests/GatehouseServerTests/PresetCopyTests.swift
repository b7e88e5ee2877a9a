import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import Testing

/// Issue 19, item 3: the preset's copy is what reaches the screen. The SDK's own fallbacks are
/// neutral English and an app ships its preset's words for a first launch offline
/// (`BundledCopy`, decision 25), so these tests change the preset's copy and expect the changed
/// words from the SDK's models and errors.
@Suite struct PresetCopyTests {
    static let changed: [String: String] = [
        "gate.flow_cap": "Two flows is the Free plan's limit. (changed)",
        "conversion.title": "Sign up to keep this (changed)",
        "conversion.body": "Your flows follow you with an account. (changed)",
        "error.invalid_credentials": "That address and password do not match. (changed)",
        "error.email_in_use": "Someone already uses this address. (changed)",
        "verification.banner": "Please confirm your address. (changed)",
        "welcome.try_without_account": "Look around first (changed)",
    ]

    @Test func changedCopyReachesTheModelsAndTheErrors() async throws {
        try await TestApp.run(.sqlite, preset: "handz", setup: .live, adjust: { config in
            for (key, text) in Self.changed { config.preset.copy[key] = text }
        }) { server, _ in
            let device = try TestDevice()
            defer { device.remove() }
            let client = try device.launch(port: try #require(server.port))
            try await client.loadConfiguration()

            // The conversion prompt (CH07 §6.3's slot).
            let prompt = await ConversionPrompt(client: client, storage: device.container)
            await prompt.loadCopy()
            #expect(await prompt.title == Self.changed["conversion.title"])
            #expect(await prompt.body == Self.changed["conversion.body"])

            // The error table, through the SDK's error and the log-in form.
            _ = try await client.signUp(email: "copy@example.com", password: "correct horse battery")
            let taken = try device.launch(port: try #require(server.port))
            let inUse = await #expect(throws: GatehouseClientError.self) {
                try await taken.signUp(email: "copy@example.com", password: "correct horse battery")
            }
            #expect(inUse?.localizedDescription == Self.changed["error.email_in_use"])
            let form = await LoginForm(client: taken)
            await MainActor.run {
                form.email = "copy@example.com"
                form.password = "not the password"
            }
            _ = await form.submit()
            #expect(await form.errorMessage == Self.changed["error.invalid_credentials"])

            // The verification banner and the welcome gate.
            let banner = await VerificationBanner(client: client)
            await banner.update()
            #expect(await banner.message == Self.changed["verification.banner"])
            let gate = await AuthCoordinator(client: try device.launch(port: try #require(server.port)))
            await gate.start()
            #expect(await gate.welcomeButtons.last?.label == Self.changed["welcome.try_without_account"])

            // The cap sheet, decided on the device from the preset's rules and copy.
            let decision = try await client.decide("save_flow", context: ["saved_count": 2])
            let sheet = try #require(GateSheet(decision: decision))
            #expect(sheet.reasonCode == "flow_cap_reached" && sheet.title == Self.changed["gate.flow_cap"])
            #expect(try await client.check("save_flow", context: ["saved_count": 2]).message == Self.changed["gate.flow_cap"])
        }
    }

    /// The SDK ships every preset's copy for a first launch offline (decision 25), the same
    /// words as the preset files (`scripts/bundled-copy.py` writes them).
    @Test(arguments: ["default", "handz", "hannah", "oklah", "syncwell"])
    func theSDKShipsEachPresetsCopy(_ name: String) throws {
        #expect(BundledCopy.preset(name) == (try PresetLibrary.load(name).get()).copy, "run scripts/bundled-copy.py")
    }

    /// The SDK's own fallbacks are neutral English, never one app's copy: no sentence of the
    /// SDK's sources is an app preset's words (the `default` preset's are neutral), and no
    /// literal names an app. So a test that expects a preset's words sees them only when the
    /// preset's copy (served or bundled) reaches the screen.
    @Test func theSDKsFallbacksAreNoAppsCopy() throws {
        var appWords: [String: String] = [:]
        let neutral = Set((try PresetLibrary.load("default").get()).copy.values)
        for name in ["handz", "hannah", "oklah", "syncwell"] {
            for (key, text) in try PresetLibrary.load(name).get().copy where !neutral.contains(text) && text.split(separator: " ").count >= 4 {
                appWords[text] = "\(name): \(key)"
            }
        }
        let sources = DocumentationTests.root.appendingPathComponent("Sources/GatehouseClient")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.hasSuffix("BundledCopy.swift") }
        #expect(files.count > 10)
        let literal = try Regex(#""((?:[^"\\\n]|\\.)*)""#)
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                for match in line.matches(of: literal) {
                    let value = String(match.output[1].substring ?? "")
                    #expect(appWords[value] == nil, "\(file) says \"\(value)\", the words of \(appWords[value] ?? "")")
                    for app in ["OKLah", "Handz", "Hannah", "SyncWell"] {
                        #expect(!value.contains(app), "\(file) names \(app) in \"\(value)\"")
                    }
                }
            }
        }
    }
}
