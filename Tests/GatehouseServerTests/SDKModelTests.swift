import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HummingbirdTesting
import Testing

/// The SDK's screen models that turn server answers into what a SwiftUI view shows, against a
/// live server: the cap gate sheet and the practice labels (Handz CH08), the link confirmation
/// prompt (decision 8), and Apple's credential-state check at launch.
@MainActor @Suite struct SDKModelTests {
    /// CH08 §7 and §5.1: a Free account at its flow cap gets the sheet with Upgrade and Manage
    /// flows; its flows say "Practice (1 credit)", a Pro account's "Practice (Pro)".
    @Test func capSheetAndPracticeLabels() async throws {
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, _ in try await Self.capSheetBody(server) }
    }

    static func capSheetBody(_ server: any TestClientProtocol) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(server.port))
        _ = try await client.loadConfiguration()
        let user = try await client.signUp(email: "capped@example.com", password: "correct horse battery")
        let decision = try await client.check("save_flow", context: ["saved_count": 2])
        let sheet = try #require(GateSheet(decision: decision))
        #expect(sheet.reasonCode == "flow_cap_reached" && sheet.title == "You've reached the Free limit (2 saved flows).")
        #expect(sheet.primary == GateAction(id: "upgrade", label: "Upgrade to Pro"))
        #expect(sheet.others.map(\.id) == ["manage_flows"] && sheet.others.map(\.label) == ["Manage flows"])
        // Allowed actions and account gates get no sheet.
        #expect(GateSheet(decision: try await client.check("save_flow", context: ["saved_count": 1])) == nil)

        let status = PlanStatus(client: client)
        await status.update()
        #expect(status.practiceLabel() == "Practice (1 credit)")
        #expect(status.creditsLabel("practice") == "Credits: 3/3 this month")
        let pro = try await server.execute(
            uri: "/admin/v1/users/\(user.id)/plan", method: .put, headers: TestApp.adminHeaders, body: jsonBody(#"{"plan": "pro"}"#))
        #expect(pro.status == .ok)
        await status.update()
        #expect(status.planState == "pro" && status.practiceLabel() == "Practice (Pro)")
    }

    /// Decision 8: Google finds an account with the same address that has not proven it owns it;
    /// the prompt asks for that account's password, signs in and links Google: one account.
    @Test func linkConfirmationLogsInAndLinks() async throws {
        try await ProviderSignInTests.run(.sqlite, preset: "handz", setup: .live) { api, _, google, _ in
            try await Self.linkConfirmationBody(api, google)
        }
    }

    static func linkConfirmationBody(_ api: AuthClient, _ google: FakeProvider) async throws {
        let existing = try await api.account("both@example.com")
        #expect(existing.user.emailVerified == false)
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(api.client.port))
        _ = try await client.loadConfiguration()
        let prompt = LinkConfirmationPrompt(client: client)
        let token = try google.token(sub: "g-both", email: "both@example.com", extra: ["email_verified": true])
        #expect(try await prompt.signIn(with: .google, idToken: token, rawNonce: nil) == false)
        #expect(prompt.isPresented)
        #expect(prompt.message == "An account with this email already exists. Log in with your password to connect it.")
        prompt.email = "both@example.com"
        prompt.password = "not the password"
        #expect(await prompt.confirm() == false && prompt.isPresented && prompt.errorMessage != nil)
        prompt.password = "correct horse battery"
        #expect(await prompt.confirm())
        #expect(!prompt.isPresented)
        let me = try await client.refreshUser()
        #expect(me.id == existing.user.id)
        #expect(Set(me.identities.map(\.provider)) == ["email", "google"])
        // Google now signs in to that same account directly.
        try await client.signOut()
        let again = try await client.signInWithGoogle(idToken: try google.token(sub: "g-both", email: "both@example.com", extra: ["email_verified": true]))
        #expect(again.user.id == existing.user.id)
    }

    /// Apple's guideline: at launch, a session signed in with Apple ends when Apple says the
    /// person revoked the app; an authorized credential keeps it.
    @Test func aRevokedAppleCredentialSignsOutAtLaunch() async throws {
        try await ProviderSignInTests.run(.sqlite, preset: "handz", setup: .live) { api, apple, _, _ in
            try await Self.appleCredentialBody(api, apple)
        }
    }

    static func appleCredentialBody(_ api: AuthClient, _ apple: FakeProvider) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let port = try #require(api.client.port)
        let client = try device.launch(port: port)
        let nonce = "n-\(UUID().uuidString)"
        let token = try apple.token(sub: "001.revoked", email: "r@example.com", extra: ["nonce": FakeProvider.sha256Hex(nonce)])
        try await client.signInWithApple(idToken: token, rawNonce: nonce)
        #expect(await client.appleUserID == "001.revoked")

        let relaunched = try device.launch(port: port)
        _ = await relaunched.restore()
        let asked = IDLog()
        #expect(await relaunched.checkAppleCredential { id in asked.append(id); return .authorized } == false)
        #expect(await relaunched.state.user != nil)
        #expect(await relaunched.checkAppleCredential { id in asked.append(id); return .revoked })
        #expect(asked.ids == ["001.revoked", "001.revoked"])
        #expect(await relaunched.state == .signedOut(.appleCredentialRevoked))
        // Nothing of the session is left on the device: the next launch starts signed out.
        let again = try device.launch(port: port)
        _ = await again.restore()
        #expect(await again.state.user == nil)
        #expect(await again.appleUserID == nil)
    }
}

/// Ids a closure saw, from any thread.
final class IDLog: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [String] = []
    func append(_ id: String) { lock.withLock { seen.append(id) } }
    var ids: [String] { lock.withLock { seen } }
}

/// Handz CH07 §8's routes through the coordinator: the ids, the log-in and forgot-password
/// branches, and the demo home's "Create account" back to the welcome gate.
@MainActor @Suite struct NavigationTests {
    @Test func handzRoutesAndBranches() async throws {
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, _ in try await Self.routesBody(server) }
    }

    static func routesBody(_ server: any TestClientProtocol) async throws {
        #expect(AuthRoute.allCases.map(\.rawValue) == [
            "auth/welcome", "auth/email_choice", "auth/email_signup", "auth/email_login", "auth/forgot_password",
            "onboarding/profile_setup", "onboarding/goals_router", "home/demo", "home/main",
        ])
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(server.port))
        _ = try await client.signUp(email: "routes@example.com", password: "correct horse battery")
        try await client.signOut()
        let coordinator = AuthCoordinator(client: client)
        await coordinator.start()
        #expect(coordinator.root == .welcome)
        // Email → Log in → Forgot password, each pushed on the stack.
        coordinator.continueWithEmail()
        coordinator.chooseLogIn()
        #expect(coordinator.path == [.emailChoice, .emailLogin])
        coordinator.forgotPassword()
        #expect(coordinator.path == [.emailChoice, .emailLogin, .forgotPassword])
        // The demo home's "Create account" goes back to the welcome gate with an empty stack.
        coordinator.tryWithoutAccount()
        #expect(coordinator.root == .demoHome && coordinator.path.isEmpty)
        coordinator.createAccount()
        #expect(coordinator.root == .welcome && coordinator.path.isEmpty)
        // Log in → home.
        let form = LoginForm(client: client)
        form.email = "routes@example.com"
        form.password = "correct horse battery"
        #expect(await form.submit())
        coordinator.didSignIn()
        #expect(coordinator.root == .main && coordinator.path.isEmpty)
    }
}
