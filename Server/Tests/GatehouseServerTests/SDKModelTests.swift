import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseStore
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
        let user = try await client.signUp(email: "capped@example.com", password: "correct horse battery").user
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
        #expect(await prompt.confirm() == false && prompt.isPresented && prompt.errorMessage == "Incorrect email or password.")
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
            "onboarding/profile_setup", "onboarding/goals_router", "home/demo", "home/main", "auth/forgot_password_sent",
            "flow/create", "practice/setup", "library/demo", "flow/detail_demo",
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
        // Forgot → the confirmation → back to log-in.
        try await client.forgotPassword(email: "routes@example.com")
        coordinator.resetLinkSent()
        #expect(coordinator.path.last == .forgotPasswordSent)
        coordinator.backToLogIn()
        #expect(coordinator.path == [.emailChoice, .emailLogin])
        // The demo home: a demo flow opens view-only; "Create account" goes back to the welcome
        // gate with an empty stack.
        coordinator.tryWithoutAccount()
        #expect(coordinator.root == .demoHome && coordinator.path.isEmpty)
        coordinator.openDemoFlow()
        #expect(coordinator.path == [.flowDetailDemo])
        coordinator.createAccount()
        #expect(coordinator.root == .welcome && coordinator.path.isEmpty)
        // Log in → home.
        let form = LoginForm(client: client)
        form.email = "routes@example.com"
        form.password = "correct horse battery"
        #expect(await form.submit())
        coordinator.didSignIn()
        #expect(coordinator.root == .main && coordinator.path.isEmpty)

        // Sign-up → profile set-up → goals router → each card's screen (CH07 §8.7). Practice
        // on Free with credits left opens the practice set-up; with none left, the paywall.
        try await client.signOut()
        let user = try await client.signUp(email: "goals@example.com", password: "correct horse battery").user
        _ = try await client.entitlements()
        coordinator.didSignUp()
        #expect(coordinator.root == .profileSetup)
        coordinator.finishProfileSetup()
        #expect(coordinator.path == [.goalsRouter])
        #expect(await coordinator.choose(.build) == nil && coordinator.root == .main && coordinator.path == [.flowCreate])
        #expect(await coordinator.choose(.browse) == nil && coordinator.path == [.libraryDemo])
        #expect(await coordinator.choose(.practice) == nil && coordinator.path == [.practiceSetup])
        for index in 0..<3 {
            _ = try await client.spendCredit("practice", action: "practice_saved_flow", idempotencyKey: "goal-\(index)-\(user.id)")
        }
        _ = try await client.entitlements()
        let paywall = try #require(await coordinator.choose(.practice))
        #expect(paywall.reasonCode == "credits_exhausted" && coordinator.root == .main && coordinator.path.isEmpty)
        #expect(GateSheet(decision: paywall) != nil)
    }

    /// CH07 §8.6: the handle is checked once per pause in typing, a taken one is refused with
    /// the reason, Continue saves name and handle, Skip keeps the temporary handle.
    @Test func profileSetupChecksTheHandleAsThePersonTypes() async throws {
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, _ in try await Self.profileSetupBody(server) }
    }

    static func profileSetupBody(_ server: any TestClientProtocol) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(server.port))
        _ = try await client.loadConfiguration()
        let first = try await client.signUp(email: "taken@example.com", password: "correct horse battery").user
        let owner = ProfileSetupModel(client: client, user: first, pause: .milliseconds(50))
        owner.handle = "grappler"
        await owner.settle()
        #expect(await owner.save())
        try await client.signOut()

        let user = try await client.signUp(email: "newcomer@example.com", password: "correct horse battery").user
        let model = ProfileSetupModel(client: client, user: user, pause: .milliseconds(200))
        #expect(model.currentHandle?.hasPrefix("user-") == true)
        // Typing "grappler" letter by letter: one check, after the pause.
        for count in 1...8 { model.handle = String("grappler".prefix(count)) }
        #expect(model.handleStatus == .checking && !model.canContinue)
        await model.settle()
        #expect(model.checksSent == 1)
        #expect(model.handleStatus == .unavailable(reason: "taken", message: "That handle is taken."))
        model.handle = "a!"
        await model.settle()
        // Two characters: the length rule is checked first (ProfilePolicy), so `too_short`.
        if case .unavailable(let reason, _) = model.handleStatus { #expect(reason == "too_short") } else {
            Issue.record("\(model.handleStatus)")
        }
        model.handle = "new_grappler"
        model.displayName = "Kai Lo"
        await model.settle()
        #expect(model.handleStatus == .available && model.canContinue)
        #expect(model.avatar.initials == "KL")
        #expect(await model.save())
        #expect(model.user.handle == "new_grappler" && model.user.displayName == "Kai Lo")

        // Skip sends nothing and keeps the temporary handle.
        try await client.signOut()
        let third = try await client.signUp(email: "skipper@example.com", password: "correct horse battery").user
        let skipping = ProfileSetupModel(client: client, user: third)
        device.transport.reset()
        skipping.skip()
        #expect(device.transport.requests.isEmpty && skipping.canContinue)
        #expect(try await client.refreshUser().handle == third.handle)
    }

    /// Hannah: address → sent → the code (or the link) → signed in, a new account's trial
    /// announced; the second time the link signs in to the same account.
    @Test func hannahsMagicLinkOnboarding() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "hannah", clock: clock, setup: .live) { server, config in
            try await Self.magicLinkBody(server, config, clock)
        }
    }

    static func magicLinkBody(_ server: any TestClientProtocol, _ config: GatehouseConfig, _ clock: ManualClock) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(server.port))
        _ = try await client.loadConfiguration()
        let model = MagicLinkOnboarding(client: client)
        model.email = "not an address"
        #expect(!model.canSend)
        model.email = "hana.m@example.com"
        #expect(await model.send())
        #expect(model.step == .sent)
        #expect(model.sentMessage.hasPrefix("Check your email: we sent a sign-in link to hana.m@example.com."))
        let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link") { $0.recipient == "hana.m@example.com" }
        model.code = try EmailFlowTests.code(in: ReceivedMail(text: mail.textBody ?? ""))
        #expect(await model.submitCode())
        #expect(model.step == .signedIn(newAccount: true) && model.trialDaysLeft == 6)  // Whole days left, as the banner counts them.
        #expect(model.trialStartedMessage == "Your 7-day free trial has started. No payment details required.")

        try await client.signOut()
        let again = MagicLinkOnboarding(client: client)
        again.email = "hana.m@example.com"
        clock.advance(by: 61)  // One link a minute per address.
        #expect(await again.send(), "\(again.errorMessage ?? "")")
        let second = try await EmailFlowTests.outboxMail(config, kind: "magic_link", after: mail.id) { $0.recipient == "hana.m@example.com" }
        let token = try EmailFlowTests.token(in: ReceivedMail(text: second.textBody ?? ""), path: "/auth/magic-link")
        #expect(await again.open(URL(string: "hannahhealth://auth?token=\(token)")!))
        #expect(again.step == .signedIn(newAccount: false))
        #expect(again.trialStartedMessage == nil)
    }
}

/// Decision 26: the SDK judges its access token by the monotonic clock and refreshes it before it
/// expires (Hannah: "tokens refreshed automatically before they expire").
@Suite struct SDKTokenTimingTests {
    @Test func theAccessTokenIsRefreshedAheadAndWallClockJumpsAreIgnored() async throws {
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, _ in
            let device = try TestDevice()
            defer { device.remove() }
            let client = try device.launch(port: try #require(server.port))
            _ = try await client.signUp(email: "ahead@example.com", password: "correct horse battery")
            // The person sets the date a day ahead: the token is still fresh by uptime.
            device.clock.setWallClock(by: 86_400)
            device.transport.reset()
            _ = try await client.refreshUser()
            #expect(device.transport.count("POST /v1/auth/refresh") == 0, "\(device.transport.requests)")
            // 15 minutes less 59 s of uptime later, inside the 60 s margin: refreshed first.
            device.clock.advance(by: 900 - 59)
            device.transport.reset()
            _ = try await client.refreshUser()
            #expect(device.transport.requests.first == "POST /v1/auth/refresh", "\(device.transport.requests)")
            #expect(device.transport.count("POST /v1/auth/refresh") == 1)
        }
    }
}

/// Decision 25: the configuration (methods, copy) is kept on the device, so an app that starts
/// offline still shows its own words.
@Suite struct SDKConfigCacheTests {
    @Test func theConfigurationSurvivesAnOfflineRelaunch() async throws {
        try await TestApp.run(.sqlite, preset: "hannah", setup: .live) { server, _ in
            let device = try TestDevice()
            defer { device.remove() }
            let port = try #require(server.port)
            let online = try device.launch(port: port)
            #expect(try await online.loadConfiguration().copy["welcome.start_trial"] == "Start Free 7-Day Trial")
            device.transport.setNetworkDown(true)
            let offline = try device.launch(port: port)
            let cached = try await offline.loadConfiguration()
            #expect(cached.preset == "hannah" && cached.signInMethods == ["magic_link", "passkey", "phone"])
            #expect(await offline.text("welcome.start_trial", "fallback") == "Start Free 7-Day Trial")
            device.transport.setNetworkDown(false)
        }
    }
}

/// OKLah ERR-ONB-002 and §11: a server error and a rate limit, both real, end on the error
/// screen with Try Again, and Try Again works once the server is back.
@MainActor @Suite struct OnboardingErrorTests {
    @Test func aServerErrorShowsTheRetryScreen() async throws {
        try await TestApp.run(.sqlite, preset: "oklah", setup: .live) { server, config in try await Self.serverErrorBody(server, config) }
    }

    static func serverErrorBody(_ server: any TestClientProtocol, _ config: GatehouseConfig) async throws {
        guard case .sqlite(let path) = config.database else { return }
        let device = try TestDevice()
        defer { device.remove() }
        let model = OnboardingModel(client: try device.launch(port: try #require(server.port)), appVersion: "1.0")
        await model.launch()
        // Another writer holds the database: account creation answers 503.
        let other = try await HeldSQLiteWriter(path: path)
        model.start()
        await model.waitForCreation()
        #expect(model.state == .error && model.errorText == "Something went wrong. Please check your connection and try again.")
        try await other.release()
        model.tryAgain()
        await model.waitForCreation()
        #expect(model.state == .onboarded)
    }

    @Test func aRateLimitShowsTheRetryScreen() async throws {
        try await TestApp.run(.sqlite, preset: "oklah", setup: .live) { server, config in try await Self.rateLimitBody(server, config) }
    }

    static func rateLimitBody(_ server: any TestClientProtocol, _ config: GatehouseConfig) async throws {
        // Use up this address's anonymous sign-ins for the hour (the preset's 30).
        for _ in 0..<config.preset.throttling.anonymousPerIPPerHour {
            #expect(try await server.execute(uri: "/v1/auth/anonymous", method: .post).status == .created)
        }
        #expect(try await server.execute(uri: "/v1/auth/anonymous", method: .post).status == .tooManyRequests)
        let device = try TestDevice()
        defer { device.remove() }
        let model = OnboardingModel(client: try device.launch(port: try #require(server.port)), appVersion: "1.0")
        await model.launch()
        model.start()
        await model.waitForCreation()
        #expect(model.state == .error && model.tryAgainLabel == "Try Again")
        #expect(model.errorText == "Something went wrong. Please check your connection and try again.")
    }
}

/// CH08 §8: the purchase as the paywall shows it, against a live server that verifies App Store
/// transactions (signed by the test's own chain, trusted as Apple's root).
@MainActor @Suite struct PurchaseModelTests {
    @Test func pendingCancelledPurchasedAndRefused() async throws {
        let apple = try FakeAppStore()
        try await TestApp.run(.sqlite, preset: "handz", setup: .live, adjust: TestApp.trusting(apple)) { server, config in
            try await Self.body(server, config, apple)
        }
    }

    static func body(_ server: any TestClientProtocol, _ config: GatehouseConfig, _ apple: FakeAppStore) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let port = try #require(server.port)
        let client = try device.launch(port: port)
        _ = try await client.loadConfiguration()
        let user = try await client.signUp(email: "buyer@example.com", password: "correct horse battery").user
        let model = PurchaseModel(client: client, productID: "com.handz.pro.monthly")
        #expect(model.manageSubscriptionsURL.host == "apps.apple.com")

        // Ask to Buy: pending, nothing granted, the words say so.
        await model.start()
        #expect(model.state == .purchasing)
        await model.finish(.pending)
        #expect(model.state == .pending)
        #expect(model.message == "Your purchase is waiting for approval. We'll unlock it as soon as it's approved.")
        #expect(try await client.entitlements().planState == "free")
        // Closed the sheet: no error.
        await model.finish(.userCancelled)
        #expect(model.state == .cancelled)
        #expect(model.message == nil)
        // Approved: the verified transaction gives Pro.
        let now = Date()
        let signed = try apple.sign(
            FakeAppStore.transaction(
                id: "b1", original: "b1", product: "com.handz.pro.monthly", user: user.id, purchased: now, expires: now + 30 * 86_400, signed: now))
        await model.finish(.purchased(signedTransaction: signed))
        #expect(model.state == .purchased(plan: "pro"))

        // Someone else's device uploads the same purchase: refused with the server's words.
        let other = try TestDevice()
        defer { other.remove() }
        let otherClient = try other.launch(port: port)
        _ = try await otherClient.signUp(email: "other@example.com", password: "correct horse battery")
        let refused = PurchaseModel(client: otherClient, productID: "com.handz.pro.monthly")
        await refused.start()
        await refused.finish(.purchased(signedTransaction: signed))
        guard case .failed(let message) = refused.state else {
            Issue.record("\(refused.state)")
            return
        }
        #expect(message == "This purchase belongs to another account. Sign in to that account to use it.")

        // The CH08 §9 events reached the server under each account.
        await client.flushAnalytics()
        await otherClient.flushAnalytics()
        let mine = try await TestApp.withStore(config) { try await $0.events(after: nil, userID: UserID(user.id)!, limit: 100) }
            .filter { $0.type == .analytics }.compactMap { $0.data["name"] }
        #expect(mine.filter { $0 == "purchase_started" }.count == 1 && mine.contains("purchase_success"))
        let otherID = try #require(await otherClient.state.user.flatMap { UserID($0.id) })
        let theirs = try await TestApp.withStore(config) { try await $0.events(after: nil, userID: otherID, limit: 100) }
            .filter { $0.type == .analytics }.compactMap { $0.data["name"] }
        #expect(theirs.contains("purchase_started") && theirs.contains("purchase_failed"))
    }
}
