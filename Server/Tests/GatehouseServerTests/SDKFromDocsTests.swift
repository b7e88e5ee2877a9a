import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseWire
import GatehouseServer
import GatehouseTestSupport
import Testing

/// Issue 18: what a new user of the SDK hit, written from `docs/sdk.md`, against live servers.
@Suite struct SDKFromDocsTests {
    static let password = "correct horse battery"

    /// Bug 1: a relaunched app that never calls `restore()` is still signed in: its first call
    /// confirms the saved session, `signedIn` is announced once, and gates judge the Free person
    /// as Free (a third saved flow meets the cap, not the account gate), as the server does.
    @Test func callsWithoutRestoreSignInOnceAndGateAsTheServerDoes() async throws {
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, _ in
            let device = try TestDevice()
            defer { device.remove() }
            let port = try #require(server.port)
            let first = try device.launch(port: port)
            let user = try await first.signUp(email: "norestore@example.com", password: Self.password).user

            let relaunched = try device.launch(port: port)
            let (log, watcher) = await EventLog.watch(relaunched)
            defer { watcher.cancel() }
            let snapshot = try await relaunched.entitlements()
            #expect(snapshot.plan == .free)
            let events = await log.settled { $0.contains(.signedIn(user)) }
            #expect(events.filter { if case .signedIn = $0 { true } else { false } }.count == 1, "\(events)")
            #expect(await relaunched.state == .signedIn(user, offline: false))

            let local = try await relaunched.decide("save_flow", context: ["saved_count": 2])
            let remote = try await relaunched.check("save_flow", context: ["saved_count": 2])
            #expect(local.reasonCode == "flow_cap_reached" && local == remote)
            // The snapshot is kept for this person, so the next launch has it offline.
            #expect(await relaunched.currentEntitlements?.plan == .free)

            // `restore()` afterwards confirms the same person without announcing them again.
            #expect(await relaunched.restore() == .restored(user))
            let after = await log.settled { _ in false }
            #expect(after.filter { if case .signedIn = $0 { true } else { false } }.count == 1, "\(after)")
        }
    }

    /// Bug 1, the other way: an app with no saved session that calls without `restore()` leaves
    /// `.restoring` for `signedOut`, and the gate is the guest's.
    @Test func callsWithoutRestoreAndNoSessionAreSignedOut() async throws {
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, _ in
            let device = try TestDevice()
            defer { device.remove() }
            let client = try device.launch(port: try #require(server.port))
            let decision = try await client.decide("save_flow", context: ["saved_count": 0])
            #expect(decision.reasonCode == "account_required" && !decision.allowed)
            #expect(await client.state == .signedOut(nil))
        }
    }

    /// Item 6: `decide` before `loadConfiguration()` loads it on first need; with no network and
    /// nothing cached it says so (`configuration_unavailable`), and an action the preset does not
    /// know is `unknown_action`, as on the server.
    @Test func decideLoadsTheConfigurationOrSaysItIsMissing() async throws {
        try await TestApp.run(.sqlite, preset: "hannah", setup: .live) { server, _ in
            let offline = try TestDevice()
            defer { offline.remove() }
            let port = try #require(server.port)
            let cold = try offline.launch(port: port)
            offline.transport.setNetworkDown(true)
            let missing = await #expect(throws: GatehouseClientError.self) { try await cold.decide("ai_chat") }
            #expect(missing?.code == .configurationUnavailable)
            #expect(missing?.localizedDescription == "This isn't available offline yet. Check your connection and try again.")

            offline.transport.setNetworkDown(false)
            offline.transport.reset()
            let guest = try await cold.decide("ai_chat")
            #expect(!guest.allowed && guest.gate == "account")
            #expect(offline.transport.count("GET /v1/config") == 1)
            _ = try await cold.decide("view_history")
            #expect(offline.transport.count("GET /v1/config") == 1)
            let unknown = await #expect(throws: GatehouseClientError.self) { try await cold.decide("no_such_action") }
            #expect(unknown?.code == .unknownAction)
        }
    }

    /// Item 4: an error's `localizedDescription` is the server's message, in the preset's words.
    @Test func errorsShowTheServersWords() async throws {
        try await TestApp.run(.sqlite, preset: "syncwell", setup: .live) { server, _ in
            let device = try TestDevice()
            defer { device.remove() }
            let client = try device.launch(port: try #require(server.port))
            let refused = await #expect(throws: GatehouseClientError.self) {
                try await client.signIn(email: "nobody@example.com", password: "Wrong-Password-1")
            }
            let error: any Error = try #require(refused)
            #expect(refused?.code == .invalidCredentials)
            #expect(error.localizedDescription == refused?.message)
            #expect(error.localizedDescription == "Invalid email or password. Please try again.")
        }
    }

    /// Bug 2: only Gatehouse's own links are handled. Another app's callback, look-alike hosts,
    /// other paths and extra query items answer nil and send nothing at all; a verification link
    /// verifies, a reset link answers the screen to show, and a magic link signs in, through the
    /// hosted pages' URLs (universal links) and the preset's `open_app_url`.
    @Test func onlyGatehouseLinksAreHandled() async throws {
        try await TestApp.run(.sqlite, preset: "default", setup: .live) { server, config in
            let device = try TestDevice()
            defer { device.remove() }
            let port = try #require(server.port)
            let client = try device.launch(port: port)
            let base = "http://127.0.0.1:\(port)"
            let foreign = [
                "otherapp://oauth/callback?token=abc",
                "https://accounts.example.com/auth/magic-link?token=abc",
                "http://127.0.0.1.evil.example:\(port)/auth/magic-link?token=abc",
                "http://127.0.0.1:\(port + 1)/auth/magic-link?token=abc",
                "https://127.0.0.1:\(port)/auth/magic-link?token=abc",
                "\(base)/auth/magic-link-other?token=abc",
                "\(base)/oauth/callback?token=abc",
                "\(base)/auth/magic-link?token=abc&state=xyz",
                "\(base)/auth/magic-link?code=abc",
                "\(base)/auth/magic-link?token=",
                "\(base)/auth/magic-link?token=a%2Fb",
                "http://user@127.0.0.1:\(port)/auth/magic-link?token=abc",
                "gatehouse://auth?token=abc",
            ]
            device.transport.reset()
            for text in foreign {
                #expect(try await client.handle(url: try #require(URL(string: text))) == nil, "\(text)")
            }
            #expect(device.transport.requests.isEmpty, "\(device.transport.requests)")

            // A verification link verifies the address of the account signed in here.
            let account = try await client.signUp(email: "links@example.com", password: Self.password)
            #expect(!account.user.emailVerified)
            let verification = try await EmailFlowTests.outboxMail(config, kind: "verification")
            let verifyToken = try EmailFlowTests.token(in: ReceivedMail(text: verification.textBody ?? ""), path: "/auth/verify-email")
            let verified = try await client.handle(url: try #require(URL(string: "\(base)/auth/verify-email?token=\(verifyToken)")))
            guard case .emailVerified(let user) = verified else {
                Issue.record("not verified: \(String(describing: verified))")
                return
            }
            #expect(user.emailVerified && user.id == account.user.id)
            #expect(await client.state.user?.emailVerified == true)

            // A reset link is a screen to show; nothing is sent until the new password is.
            try await client.forgotPassword(email: "links@example.com")
            let reset = try await EmailFlowTests.outboxMail(config, kind: "password_reset")
            let resetToken = try EmailFlowTests.token(in: ReceivedMail(text: reset.textBody ?? ""), path: "/auth/reset-password")
            device.transport.reset()
            let route = try await client.handle(url: try #require(URL(string: "\(base)/auth/reset-password?token=\(resetToken)")))
            #expect(route == .resetPassword(token: resetToken))
            #expect(device.transport.requests.isEmpty)
            try await client.resetPassword(token: resetToken, newPassword: "a new password 22")

            // A magic link, through the hosted page's URL, then through the app's own link.
            try await client.sendMagicLink(email: "links@example.com")
            let magic = try await EmailFlowTests.outboxMail(config, kind: "magic_link")
            let magicToken = try EmailFlowTests.token(in: ReceivedMail(text: magic.textBody ?? ""), path: "/auth/magic-link")
            let viaPage = try await client.handle(url: try #require(URL(string: "\(base)/auth/magic-link?token=\(magicToken)")))
            #expect(viaPage.map { if case .signedIn(let result) = $0 { result.user.id == account.user.id && !result.created } else { false } } == true)

            var configuration = client.configuration
            configuration.appLinks = [try #require(URL(string: "myapp://signed-in"))]
            let app = Gatehouse(configuration: configuration, tokenStore: MemoryTokenStore(), storage: MemoryStorage(), transport: device.transport)
            #expect(try await app.handle(url: try #require(URL(string: "myapp://elsewhere?token=abc"))) == nil)
            try await app.sendMagicLink(email: "second@example.com")
            let second = try await EmailFlowTests.outboxMail(config, kind: "magic_link", where: { $0.recipient == "second@example.com" })
            let secondToken = try EmailFlowTests.token(in: ReceivedMail(text: second.textBody ?? ""), path: "/auth/magic-link")
            let viaApp = try await app.handle(url: try #require(URL(string: "MyApp://Signed-In?token=\(secondToken)")))
            #expect(viaApp.map { if case .signedIn(let result) = $0 { result.created } else { false } } == true)
        }
    }

    /// Item 3: the module name qualifies its types (the actor is `Gatehouse`, not the module's
    /// name), and the wire and configuration types an app names come with `import GatehouseClient`.
    @Test func theModuleQualifiesItsTypes() throws {
        let code: GatehouseClient.ErrorCode = .invalidCredentials
        let configuration: GatehouseClient.ClientConfiguration = ClientConfiguration("https://auth.example.com")
        let scope: GatehouseClient.SignOutScope = .local
        #expect(code.rawValue == "invalid_credentials" && configuration.baseURL.host == "auth.example.com" && scope.rawValue == "local")
        #expect(GatehouseClientError(code: .rateLimited, message: "Slow down.").localizedDescription == "Slow down.")
    }
}
