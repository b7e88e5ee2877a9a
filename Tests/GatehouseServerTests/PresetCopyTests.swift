import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import Testing

/// Issue 19, item 3: the preset's copy is what reaches the screen. The SDK ships the seeds' words
/// for a first launch with no network (decision 25), so a test that expects the seed's words
/// cannot tell the preset's copy from that fallback; these tests change the preset's copy and
/// expect the changed words from the SDK's models and errors.
@Suite struct PresetCopyTests {
    static let changed: [String: String] = [
        "gate.flow_cap": "Two flows is the Free plan's limit. (changed)",
        "conversion.title": "Sign up to keep this (changed)",
        "conversion.body": "Your flows follow you with an account. (changed)",
        "error.invalid_credentials": "That address and password do not match. (changed)",
        "error.email_in_use": "Someone already uses this address. (changed)",
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

            // The cap sheet, decided on the device from the preset's rules and copy.
            let decision = try await client.decide("save_flow", context: ["saved_count": 2])
            let sheet = try #require(GateSheet(decision: decision))
            #expect(sheet.reasonCode == "flow_cap_reached" && sheet.title == Self.changed["gate.flow_cap"])
            #expect(try await client.check("save_flow", context: ["saved_count": 2]).message == Self.changed["gate.flow_cap"])
        }
    }
}
