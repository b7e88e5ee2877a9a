import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The SDK's flow models driven against a live server: Handz CH07's acceptance tests that
/// concern logic, OKLah's onboarding, Hannah's trial, gates on the device.
@MainActor @Suite struct SDKFlowTests {
    /// AT-07-01, -02, -03, -04, -07 and -08 in one Handz journey.
    @Test func handzWelcomeConversionSignUpAndLogout() async throws {
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, config in
            try await Self.handzWelcomeConversionSignUpAndLogoutBody(server, config)
        }
    }

    static func handzWelcomeConversionSignUpAndLogoutBody(_ server: any TestClientProtocol, _ config: GatehouseConfig) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let port = try #require(server.port)
        let client = try device.launch(port: port)

        // AT-07-01: logged out, the app opens on the welcome gate with the preset's methods.
        let coordinator = AuthCoordinator(client: client)
        await coordinator.start()
        #expect(coordinator.root == .welcome && coordinator.path.isEmpty && !coordinator.isOffline)
        #expect(coordinator.methods == ["email_password", "apple", "google", "passkey"])
        #expect(coordinator.welcomeButtons.map(\.id) == ["apple", "google", "email", "log_in", "try_without_account"])

        // AT-07-02: a guest taps Create New Flow: the conversion prompt, CH07 §6.3 verbatim.
        let prompt = ConversionPrompt(client: client, storage: device.container)
        await prompt.loadCopy()
        #expect(await prompt.gate(PendingAction(action: "create_flow")))
        #expect(prompt.isPresented && prompt.title == "Create an account to save")
        #expect(prompt.body == "Handz saves your flows and drills across devices. Guests can browse, but saving requires an account.")
        #expect(prompt.buttons.map(\.label) == ["Continue with Apple", "Continue with Google", "Continue with Email"])
        #expect(prompt.repeatLine == nil && prompt.notNowLabel == "Not now")
        prompt.notNow()
        #expect(!prompt.isPresented && prompt.pending == nil)
        // Browsing a demo is not gated.
        #expect(await prompt.gate(PendingAction(action: "view_demo")) == false)

        // AT-07-07: the guest taps Duplicate on a shared flow: asked again, now with the extra line.
        let duplicate = PendingAction(action: "duplicate_shared_flow", context: ["share_id": "s-42", "screen": "shared_flow"])
        #expect(await prompt.gate(duplicate, surface: "flow_save"))
        #expect(prompt.repeatLine == "Saving requires an account so your plans don't get lost.")

        // AT-07-03: a weak password keeps the button off, with the preset's message.
        coordinator.tryWithoutAccount()
        coordinator.createAccount()
        coordinator.continueWithEmail()
        coordinator.chooseSignUp()
        #expect(coordinator.path == [.emailChoice, .emailSignup])
        let form = SignUpForm(client: client, configuration: try #require(await client.configurationSnapshot))
        form.email = "new@example.com"
        form.password = "short"
        #expect(!form.canSubmit && form.passwordMessages == ["Password must be at least 8 characters."])
        form.password = "correct horse battery"
        #expect(form.canSubmit && form.buttonTitle == "Create account")
        #expect(await form.submit())
        coordinator.didSignUp()
        #expect(coordinator.root == .profileSetup && coordinator.path.isEmpty)

        // CH07-G5: back to exactly what the guest was doing.
        #expect(await prompt.didSignIn() == duplicate)
        #expect(!prompt.isPresented)

        // An email already used: the preset's words.
        let second = try TestDevice()
        defer { second.remove() }
        let other = SignUpForm(client: try second.launch(port: port), configuration: try #require(await client.configurationSnapshot))
        other.email = "new@example.com"
        other.password = "correct horse battery"
        #expect(await other.submit() == false)
        #expect(other.errorMessage == "This email is already in use. Log in instead.")

        // AT-07-04: in the app, the verification banner shows until the address is verified.
        let banner = VerificationBanner(client: client)
        await banner.update()
        #expect(banner.isVisible && banner.message == "Verify your email to protect your account.")
        #expect(banner.resendLabel == "Resend" && banner.verifiedLabel == "I've verified")
        await banner.checkVerified()
        #expect(banner.isVisible)
        // The link from the mail, opened by the app itself.
        let mail = try await EmailFlowTests.outboxMail(config, kind: "verification") { $0.recipient == "new@example.com" }
        let link = try EmailFlowTests.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/verify-email")
        #expect(try await client.verifyEmail(token: link).emailVerified)
        await banner.checkVerified()
        #expect(!banner.isVisible)

        coordinator.finishProfileSetup()
        #expect(coordinator.path == [.goalsRouter])
        coordinator.finishOnboarding()
        #expect(coordinator.root == .main)

        // AT-07-08: log out, reopen: the welcome gate, nothing behind it.
        await coordinator.signOut()
        #expect(coordinator.root == .welcome && coordinator.path.isEmpty)
        #expect(await client.state == .signedOut(.userSignedOut))
        let reopened = AuthCoordinator(client: try device.launch(port: port))
        await reopened.start()
        #expect(reopened.root == .welcome && reopened.path.isEmpty && reopened.highlightedProvider == nil)
    }

    /// AT-07-05: Sign in with Apple lands in the app and survives a relaunch; when the session
    /// has ended, the welcome gate highlights Apple (CH07 §7.1).
    @Test func appleSignInPersistsAcrossRelaunch() async throws {
        try await ProviderSignInTests.run(.sqlite, preset: "handz", setup: .live) { api, apple, google, config in
            try await Self.appleSignInPersistsAcrossRelaunchBody(api, apple, google, config)
        }
    }

    static func appleSignInPersistsAcrossRelaunchBody(
        _ api: AuthClient, _ apple: FakeProvider, _ google: FakeProvider, _ config: GatehouseConfig
    ) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let port = try #require(api.client.port)
        let client = try device.launch(port: port)
        let nonce = "n-\(UUID().uuidString)"
        let token = try apple.token(
            sub: "001.sdk", email: "ada@example.com",
            extra: ["email_verified": "true", "is_private_email": "false", "nonce": FakeProvider.sha256Hex(nonce)])
        let result = try await client.signInWithApple(idToken: token, rawNonce: nonce, fullName: PersonName(givenName: "Ada", familyName: "Ng"))
        #expect(result.created && result.user.displayName == "Ada Ng")
        let coordinator = AuthCoordinator(client: client)
        coordinator.didSignIn()
        #expect(coordinator.root == .main)

        let relaunched = AuthCoordinator(client: try device.launch(port: port))
        await relaunched.start()
        #expect(relaunched.root == .main)
        #expect(await relaunched.client.lastProvider == "apple")

        // Signed out everywhere from elsewhere: the next launch offers Apple first.
        try await relaunched.client.signOut(scope: .others)
        let sessions = try await relaunched.client.sessions()
        #expect(sessions.count == 1 && sessions[0].current)
        let id = try #require(UserID(result.user.id))
        _ = try await TestApp.withStore(config) { try await $0.revokeSessions(of: id, keeping: nil, reason: .revokedByAdmin, at: Date()) }
        let afterRevoke = AuthCoordinator(client: try device.launch(port: port))
        await afterRevoke.start()
        #expect(afterRevoke.root == .welcome && afterRevoke.highlightedProvider == "apple")
    }

    /// AT-07-06: after five wrong passwords the form shows the server's wait and stays locked.
    @Test func loginThrottlingLocksTheForm() async throws {
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, config in
            try await Self.loginThrottlingLocksTheFormBody(server, config)
        }
    }

    static func loginThrottlingLocksTheFormBody(_ server: any TestClientProtocol, _ config: GatehouseConfig) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let port = try #require(server.port)
        let client = try device.launch(port: port)
        try await client.signUp(email: "lock@example.com", password: "correct horse battery")
        try await client.signOut()
        let form = LoginForm(client: client)
        form.email = "lock@example.com"
        form.password = "wrong password"
        for _ in 0..<5 { #expect(await form.submit() == false) }
        // The fifth wrong password is still a plain 401; the lock starts with the next attempt.
        #expect(form.errorMessage == "Incorrect email or password." && !form.isLocked)
        _ = await form.submit()
        #expect(form.isLocked && !form.canSubmit, "\(form.errorMessage ?? "")")
        #expect(form.errorMessage == LockoutCopyTests.handzLockout)
        // Locked: even the right password is not sent until the wait is over.
        form.password = "correct horse battery"
        device.transport.reset()
        #expect(await form.submit() == false)
        #expect(device.transport.requests.isEmpty)
    }

    /// CH07 §8.1: no network at first launch: the offline banner, provider buttons off, guest
    /// browsing still possible.
    @Test func welcomeOffline() async throws {
        let device = try TestDevice()
        defer { device.remove() }
        device.transport.setNetworkDown(true)
        // The app ships its preset's copy (`BundledCopy`), so the gate speaks CH07's words.
        let coordinator = AuthCoordinator(client: try device.launch(port: 9, preset: "handz"))
        await coordinator.start()
        #expect(coordinator.root == .welcome && coordinator.isOffline && !coordinator.providerButtonsEnabled)
        #expect(coordinator.offlineBanner == "You’re offline. Sign-in requires internet.")
        #expect(coordinator.welcomeButtons.map(\.label) == [
            "Continue with Apple", "Continue with Google", "Continue with Email", "Log in", "Try without account",
        ])
        coordinator.tryWithoutAccount()
        #expect(coordinator.root == .demoHome)
        // H7.8.3-9: a call that cannot reach the server says so in words a person can act on.
        let offlineClient = try device.launch(port: 9)
        let failure = await #expect(throws: GatehouseClientError.self) { try await offlineClient.signIn(email: "a@example.com", password: "x") }
        #expect(failure?.code == .networkUnavailable && failure?.isNetworkFailure == true)
        #expect(failure?.localizedDescription == "You're offline. Check your connection and try again.")

        // OKLah's privacy screen too renders with no network (decision 25); Start then errs.
        let oklah = try TestDevice()
        defer { oklah.remove() }
        oklah.transport.setNetworkDown(true)
        let model = OnboardingModel(client: try oklah.launch(port: 9, preset: "oklah"), appVersion: "1.0")
        await model.launch()
        #expect(model.state == .privacyScreen && model.title == "Welcome to OKLah" && model.startLabel == "Start")
        #expect(model.bullets == ["Your privacy comes first", "No name, email, or phone needed", "Your data stays on your device"])
        model.start()
        await model.waitForCreation()
        #expect(model.state == .error && model.tryAgainLabel == "Try Again")

        // An app that ships no copy gets the SDK's neutral words, not another app's.
        let plain = try TestDevice()
        defer { plain.remove() }
        plain.transport.setNetworkDown(true)
        let neutral = OnboardingModel(client: try plain.launch(port: 9), appVersion: "1.0")
        await neutral.launch()
        #expect(neutral.title == "Welcome" && neutral.bullets == ["Private by design", "No personal details needed", "Your details stay private"])
        let gate = AuthCoordinator(client: try plain.launch(port: 9))
        await gate.start()
        #expect(gate.offlineBanner == "You're offline. Connect to the internet to sign in.")
    }

    /// OKLah US-ONB-001..003 and §11's edge cases: one account however fast the taps, the error
    /// with Try Again, a retry after being backgrounded, Home on relaunch, the privacy screen
    /// again after the server ended the session, and the onboarding events.
    @Test func oklahOnboarding() async throws {
        try await TestApp.run(.sqlite, preset: "oklah", setup: .live) { server, config in
            try await Self.oklahOnboardingBody(server, config)
        }
    }

    static func oklahOnboardingBody(_ server: any TestClientProtocol, _ config: GatehouseConfig) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let port = try #require(server.port)
        let client = try device.launch(port: port)
        let model = OnboardingModel(client: client, appVersion: "1.0")
        await model.launch()
        let shownUptime = device.clock.uptime()
        device.clock.advance(by: 3.5)  // The person reads the privacy screen.
        #expect(model.state == .privacyScreen && model.isStartEnabled)
        #expect(model.title == "Welcome to OKLah" && model.bullets.count == 3 && model.startLabel == "Start")
        // BR-ONB-003: nothing is created before Start.
        #expect(device.transport.count("POST /v1/auth/anonymous") == 0)

        // No network: the error screen with its copy; Try Again once it is back.
        device.transport.setNetworkDown(true)
        model.start()
        #expect(!model.isStartEnabled)
        await model.waitForCreation()
        #expect(model.state == .error && model.errorText == "Something went wrong. Please check your connection and try again.")
        device.transport.setNetworkDown(false)

        // Rapid taps: one request.
        device.transport.reset()
        model.tryAgain()
        for _ in 0..<5 { model.start() }
        await model.waitForCreation()
        #expect(model.state == .onboarded && model.attempts == 1)
        #expect(device.transport.count("POST /v1/auth/anonymous") == 1)
        #expect(model.nameSuggestions.count == 3)
        let messages = try #require(await client.configurationSnapshot?.app.homeMessages)
        #expect(messages.contains(try #require(model.homeMessage)))
        #expect(model.needsName)
        let homeUptime = device.clock.uptime()
        try await model.chooseName(model.nameSuggestions[1])
        #expect(!model.needsName)
        #expect(model.user?.displayName == model.nameSuggestions[1])
        let user = try #require(model.user)
        #expect(user.email == nil && user.isAnonymous && user.onboardingComplete)

        // The events reach the server, tied to the account.
        await client.flushAnalytics()
        let id = try #require(UserID(user.id))
        let names = try await TestApp.withStore(config) { try await $0.events(after: nil, userID: id, limit: 50) }
            .filter { $0.type == .analytics }.compactMap { $0.data["name"] }
        #expect(names.contains("onboarding_start") && names.contains("onboarding_complete") && names.contains("onboarding_error"))
        #expect(names.contains("onboarding_retry"))
        // O13-3, O13-4: the failure's code and the retry's attempt number.
        let stored = try await TestApp.withStore(config) { try await $0.events(after: nil, userID: id, limit: 50) }.filter { $0.type == .analytics }
        #expect(stored.first { $0.data["name"] == "onboarding_error" }?.data["error_code"] == "network_unavailable")
        #expect(stored.first { $0.data["name"] == "onboarding_retry" }?.data["attempt_number"] == "1")
        // duration_ms: from the privacy screen to Home on the device's clock, the error screen's
        // retries included (`SeedScenarioTests.oklahsOnboardingDurationIsExact` times it alone).
        let complete = try await TestApp.withStore(config) { try await $0.events(after: nil, userID: id, limit: 50) }
            .first { $0.type == .analytics && $0.data["name"] == "onboarding_complete" }
        #expect(homeUptime > shownUptime)
        #expect(complete?.data["duration_ms"] == String(Int(((homeUptime - shownUptime) * 1000).rounded())))

        // US-ONB-003: relaunch lands on Home, no onboarding.
        let relaunched = OnboardingModel(client: try device.launch(port: port), appVersion: "1.0")
        await relaunched.launch()
        #expect(relaunched.state == .onboarded && relaunched.user?.id == user.id)
        #expect(messages.contains(try #require(relaunched.homeMessage)))

        // §11 edge case 7: backgrounded while creating; the answer is lost; back in the
        // foreground one silent retry finishes it, with the same account.
        let fresh = try TestDevice()
        defer { fresh.remove() }
        let second = OnboardingModel(client: try fresh.launch(port: port), appVersion: "1.0")
        await second.launch()
        fresh.transport.loseAnswers(to: "/v1/auth/anonymous")
        second.start()
        second.didEnterBackground()
        await second.waitForCreation()
        #expect(second.state == .creatingAccount)
        fresh.transport.loseAnswers(to: nil)
        await second.didBecomeActive()
        #expect(second.state == .onboarded)
        #expect(fresh.transport.count("POST /v1/auth/anonymous") == 2)

        // …and when the silent retry is lost too, the error screen with Try Again.
        let third = try TestDevice()
        defer { third.remove() }
        let unlucky = OnboardingModel(client: try third.launch(port: port), appVersion: "1.0")
        await unlucky.launch()
        third.transport.loseAnswers(to: "/v1/auth/anonymous")
        unlucky.start()
        unlucky.didEnterBackground()
        await unlucky.waitForCreation()
        await unlucky.didBecomeActive()
        await unlucky.waitForCreation()
        #expect(unlucky.state == .error && unlucky.errorText == "Something went wrong. Please check your connection and try again.")
        third.transport.loseAnswers(to: nil)

        // The server ends the session: the next launch shows the privacy screen again.
        let secondUser = try #require(second.user)
        let secondID = try #require(UserID(secondUser.id))
        _ = try await TestApp.withStore(config) { try await $0.revokeSessions(of: secondID, keeping: nil, reason: .revokedByAdmin, at: Date()) }
        let afterRevoke = OnboardingModel(client: try fresh.launch(port: port), appVersion: "1.0")
        await afterRevoke.launch()
        #expect(afterRevoke.state == .privacyScreen)
    }

    /// Hannah: the trial banner from day 5, the paywall and read-only after day 7; the magic link
    /// comes back into the app through `handle(url:)`.
    @Test func hannahTrialOnTheDevice() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "hannah", clock: clock, setup: .live) { server, config in
            try await Self.hannahTrialOnTheDeviceBody(server, config, clock: clock)
        }
    }

    static func hannahTrialOnTheDeviceBody(_ server: any TestClientProtocol, _ config: GatehouseConfig, clock: ManualClock) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(server.port))
        _ = try await client.loadConfiguration()
        try await client.sendMagicLink(email: "hana@example.com")
        let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link")
        let token = try EmailFlowTests.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/magic-link")
        #expect(try await client.handle(url: URL(string: "hannahhealth://elsewhere")!) == nil)
        let opened = try await client.handle(url: URL(string: "hannahhealth://auth?token=\(token)")!)
        guard case .signedIn(let signedIn) = opened else {
            Issue.record("the magic link did not sign in: \(String(describing: opened))")
            return
        }
        #expect(signedIn.created)

        let status = PlanStatus(client: client)
        await status.update()
        #expect(status.planState == "trial" && status.trialDaysLeft == 6 && status.banner == nil && !status.showsPaywall)

        clock.advance(by: 4 * 86_400 + 60)
        await status.update()
        #expect(status.banner == "2 days left in trial")

        clock.advance(by: 3 * 86_400)
        await status.update()
        #expect(status.planState == "free" && status.showsPaywall && status.isReadOnly && status.banner == nil)
        let decision = try await client.decide("ai_chat")
        #expect(!decision.allowed && decision.reasonCode == "trial_expired")
        #expect(try await client.decide("view_history").allowed == true)
    }

    /// Gates on the device answer as the server does, offline too; a Pro snapshot the server
    /// cannot confirm becomes pro_grace with its banner, and Free after 72 hours.
    @Test func gatesOnTheDeviceAndProGrace() async throws {
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, config in
            try await Self.gatesOnTheDeviceAndProGraceBody(server, config)
        }
    }

    static func gatesOnTheDeviceAndProGraceBody(_ server: any TestClientProtocol, _ config: GatehouseConfig) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(server.port))
        _ = try await client.loadConfiguration()
        let user = try await client.signUp(email: "gates@example.com", password: "correct horse battery").user
        _ = try await client.entitlements()
        // CH08 §5: practice entry points show the credits left; spending one (idempotently) shows 2/3.
        let status = PlanStatus(client: client)
        await status.update()
        #expect(status.creditsLabel("practice") == "Credits: 3/3 this month")
        try await client.spendCredit("practice", action: "practice_saved_flow", idempotencyKey: "session-1")
        try await client.spendCredit("practice", action: "practice_saved_flow", idempotencyKey: "session-1")
        await status.update()
        #expect(status.creditsLabel("practice") == "Credits: 2/3 this month")
        for (action, context) in [("save_flow", ["saved_flows": 2]), ("save_flow", ["saved_flows": 1]), ("upload_media", [:]),
                                  ("practice_saved_flow", [:]), ("practice_inbox_item", [:]), ("share_flow", [:])] {
            let local = try await client.decide(action, context: context)
            let remote = try await client.check(action, context: context)
            #expect(local == remote, "\(action)")
        }

        // A refusal with a surface is reported as `gate_shown`, in the background.
        #expect(try await client.decide("upload_media", surface: .upload).allowed == false)
        await client.flushAnalytics()
        let id = try #require(UserID(user.id))
        let shown = try await TestApp.withStore(config) { try await $0.events(after: nil, userID: id, limit: 50) }
            .filter { $0.type == .analytics && $0.data["name"] == "gate_shown" }
        #expect(shown.contains { $0.data["surface"] == "upload" && $0.data["reasonCode"] == "pro_required" && $0.data["planState"] == "free" })

        let set = try await server.execute(
            uri: "/admin/v1/users/\(user.id)/plan", method: .put, headers: TestApp.adminHeaders, body: jsonBody(#"{"plan": "pro"}"#))
        #expect(set.status == .ok)
        #expect(try await client.entitlements().planState == "pro")

        device.transport.setNetworkDown(true)
        device.clock.advance(by: 16 * 60)
        let offline = try await client.entitlements()
        #expect(offline.planState == "pro_grace")
        #expect(await client.banner == "Can't verify subscription right now. Some Pro features may pause if this continues.")
        #expect(try await client.decide("upload_media", context: ["media_bytes": 0, "upload_bytes": 10]).allowed == true)
        device.clock.advance(by: 72 * 3600)
        #expect(await client.currentEntitlements?.planState == "free")
        #expect(try await client.decide("upload_media").allowed == false)
        #expect(await client.state.user != nil)
    }
}
