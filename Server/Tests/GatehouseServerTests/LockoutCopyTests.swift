import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import HTTPTypes
import Testing

/// Issue 19, item 4: the lockout's words, exactly, on the server and in the SDK's log-in model,
/// from the preset (changed copy shows), and the doubling wait that reaches its cap and stays.
@Suite struct LockoutCopyTests {
    static let handzLockout =
        "Too many failed attempts. Please wait before trying again. To sign in now, reset your password from the link we email you."

    /// Handz (no lockout copy of its own): the server's words, in the 429 and in `LoginForm`,
    /// with the button off for the server's 30 s.
    @Test func theLockoutIsWordForWordOnTheServerAndInTheForm() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "handz", clock: clock, setup: .live) { server, _ in
            let device = try TestDevice()
            defer { device.remove() }
            let client = try device.launch(port: try #require(server.port))
            _ = try await client.signUp(email: "form@example.com", password: "correct horse battery")
            try await client.signOut()
            let formClock = ManualClock(Date())
            let form = await LoginForm(client: client, now: { formClock.now })
            await MainActor.run {
                form.email = "form@example.com"
                form.password = "wrong password"
            }
            for _ in 0..<5 { #expect(await form.submit() == false) }
            #expect(await form.errorMessage == "Incorrect email or password.")
            await MainActor.run { form.password = "correct horse battery" }
            #expect(await form.submit() == false)
            #expect(await form.errorMessage == Self.handzLockout)
            let locked = await MainActor.run { form.isLocked && !form.canSubmit }
            #expect(locked)
            formClock.advance(by: 31)
            #expect(await MainActor.run { !form.isLocked })

            let api = AuthClient(client: server)
            let refused = try await api.login("form@example.com")
            #expect(refused.status == .tooManyRequests && refused.error?.message == Self.handzLockout)
            #expect(refused.headers[.retryAfter] == "30")
        }
    }

    /// The preset's `error.too_many_attempts` reaches the 429 and the form.
    @Test func thePresetsLockoutCopyReachesTheScreen() async throws {
        let changed = "Slow down: try again in a little while, or reset your password."
        try await TestApp.run(.sqlite, preset: "handz", setup: .live, adjust: { $0.preset.copy["error.too_many_attempts"] = changed }) { server, _ in
            let device = try TestDevice()
            defer { device.remove() }
            let client = try device.launch(port: try #require(server.port))
            _ = try await client.signUp(email: "copy@example.com", password: "correct horse battery")
            try await client.signOut()
            let form = await LoginForm(client: client)
            await MainActor.run {
                form.email = "copy@example.com"
                form.password = "wrong password"
            }
            for _ in 0..<6 { _ = await form.submit() }
            #expect(await form.errorMessage == changed)
            #expect(try await AuthClient(client: server).login("copy@example.com").error?.message == changed)
        }
    }

    /// Each failure past the fifth doubles the wait (30 s, 60 s, … 1920 s) until the preset's
    /// hour, which it then keeps: read from `Retry-After` over HTTP, on the injected clock.
    @Test(arguments: Backend.available)
    func theDoublingReachesItsHourAndStays(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "handz", clock: clock, setup: .live, adjust: { $0.ipLimits = false }) { server, _ in
            let api = AuthClient(client: server)
            _ = try await api.account("cap@example.com", "correct horse battery")
            for _ in 0..<5 { _ = try await api.login("cap@example.com", "wrong") }
            var waits: [String] = []
            for _ in 0..<10 {
                let refused = try await api.login("cap@example.com", "wrong")
                #expect(refused.status == .tooManyRequests)
                let wait = refused.headers[.retryAfter] ?? "?"
                waits.append(wait)
                // Past the lock, the next wrong password fails and locks again for twice as long.
                clock.advance(by: TimeInterval(Int(wait) ?? 0) + 1)
                #expect(try await api.login("cap@example.com", "wrong").status == .unauthorized)
            }
            #expect(waits == ["30", "60", "120", "240", "480", "960", "1920", "3600", "3600", "3600"])
        }
    }
}
