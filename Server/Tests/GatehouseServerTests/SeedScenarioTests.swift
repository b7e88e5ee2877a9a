import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseVerifier
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The seeds' remaining scenarios, run for real (issue 19, item 5): the SDK against a live
/// server, each outcome asserted exactly.
@MainActor @Suite struct SeedScenarioTests {
    // MARK: H7.3.4-4 — Apple private relay, then the real address

    /// Handz CH07 §3.4 and decision 8: an Apple account with a private-relay address, then a
    /// sign-up with the person's real address: two accounts, never merged. Apple keeps opening
    /// the relay account; Google with the real address asks for the password while that address
    /// is unproven (409 `link_confirmation_required`), and joins the real-address account, never
    /// the relay one, once it is verified.
    @Test func applePrivateRelayThenTheRealAddressAreTwoAccounts() async throws {
        try await ProviderSignInTests.run(.sqlite, preset: "handz", setup: .live) { api, apple, google, config in
            try await Self.privateRelayBody(api, apple, google, config)
        }
    }

    static func privateRelayBody(_ api: AuthClient, _ apple: FakeProvider, _ google: FakeProvider, _ config: GatehouseConfig) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(api.client.port))
        let relay = "x7k2p9qw4m@privaterelay.appleid.com"
        let first = try apple.token(sub: "001.relay", email: relay, extra: ["email_verified": "true", "is_private_email": "true"])
        let relayAccount = try await client.signInWithApple(idToken: first, rawNonce: nil)
        // CH07 §3.1: the relay address is the account's email.
        #expect(relayAccount.created && relayAccount.user.email == relay && relayAccount.user.emailVerified)
        #expect(relayAccount.user.identities.map(\.provider) == ["apple"])
        #expect(relayAccount.user.identities.map(\.isPrivateRelay) == [true])
        #expect(relayAccount.user.identities.map(\.email) == [relay])
        try await client.signOut()

        // Later, the same person signs up with the real address: a separate account.
        let real = try await client.signUp(email: "ada.real@example.com", password: "correct horse battery")
        #expect(real.created && real.user.id != relayAccount.user.id)
        #expect(real.user.email == "ada.real@example.com" && !real.user.emailVerified)
        #expect(real.user.identities.map(\.provider) == ["email"])
        try await client.signOut()

        // Apple again (later tokens carry no address): the relay account, as it was.
        let back = try await client.signInWithApple(idToken: try apple.token(sub: "001.relay"), rawNonce: nil)
        #expect(!back.created && back.user.id == relayAccount.user.id)
        #expect(back.user.email == relay && back.user.identities.map(\.provider) == ["apple"])
        try await client.signOut()

        // Decision 8: Google vouches for the real address, but the account has not proven it yet.
        let googleToken = try google.token(sub: "g-ada", email: "ada.real@example.com", extra: ["email_verified": true])
        do throws(GatehouseClientError) {
            _ = try await client.signInWithGoogle(idToken: googleToken)
            Issue.record("Google was merged into an account whose address is unproven")
        } catch {
            #expect(error.code == .linkConfirmationRequired && error.status == 409)
            #expect(error.message == "An account with this email already exists. Log in with your password to connect it.")
        }
        // The person verifies the real address; Google then joins that account, never the relay one.
        try await client.signIn(email: "ada.real@example.com", password: "correct horse battery")
        let mail = try await EmailFlowTests.outboxMail(config, kind: "verification") { $0.recipient == "ada.real@example.com" }
        let link = try EmailFlowTests.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/verify-email")
        #expect(try await client.verifyEmail(token: link).emailVerified)
        try await client.signOut()
        let linked = try await client.signInWithGoogle(idToken: googleToken)
        #expect(!linked.created && linked.user.id == real.user.id)
        #expect(Set(linked.user.identities.map(\.provider)) == ["email", "google"])
        try await client.signOut()
        let stillRelay = try await client.signInWithApple(idToken: try apple.token(sub: "001.relay"), rawNonce: nil)
        #expect(stillRelay.user.id == relayAccount.user.id && stillRelay.user.identities.map(\.provider) == ["apple"])

        // Two accounts in all.
        let users = try await TestApp.withStore(config) { try await $0.users(search: nil, before: nil, limit: 10) }
        #expect(Set(users.map(\.id.description)) == [relayAccount.user.id, real.user.id])
    }

    // MARK: H8.5-7 and HH-E4 — credits and a trial survive a reinstall and a new device

    /// Handz CH08 §5 anti-exploit: credits are the account's. Two of three spent on one phone; the
    /// app deleted and reinstalled (its storage gone, signed out), then a second phone: the same
    /// account shows 1/3 on both, and a spend on one is seen on the other.
    @Test func creditsSurviveAReinstallAndANewDevice() async throws {
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, _ in try await Self.creditsBody(server) }
    }

    static func creditsBody(_ server: any TestClientProtocol) async throws {
        let port = try #require(server.port)
        let phone = try TestDevice()
        defer { phone.remove() }
        let client = try phone.launch(port: port)
        _ = try await client.loadConfiguration()
        try await client.signUp(email: "credits@example.com", password: "correct horse battery")
        try await client.spendCredit("practice", action: "practice_saved_flow", idempotencyKey: "practice-1", subject: "flow-1")
        try await client.spendCredit("practice", action: "practice_saved_flow", idempotencyKey: "practice-2", subject: "flow-2")
        let before = try #require(try await client.entitlements().credits["practice"])
        #expect(before.remaining == 1 && before.granted == 3)

        // Reinstalled: the container goes, the Keychain's session is discarded.
        try await phone.uninstall(closing: client)
        // The app ships its preset's words (decision 25): the label reads so before any
        // configuration is loaded on the new install.
        let reinstalled = try phone.launch(port: port, preset: "handz")
        #expect(await reinstalled.restore() == .signedOut(.reinstalled))
        #expect(await reinstalled.currentEntitlements == nil, "nothing of the old install is left to show")
        try await reinstalled.signIn(email: "credits@example.com", password: "correct horse battery")
        let afterReinstall = PlanStatus(client: reinstalled)
        await afterReinstall.update()
        #expect(afterReinstall.snapshot?.credits["practice"] == before)
        #expect(afterReinstall.creditsLabel("practice") == "Credits: 1/3 this month")

        // A second phone, never used before.
        let other = try TestDevice()
        defer { other.remove() }
        let second = try other.launch(port: port, preset: "handz")
        try await second.signIn(email: "credits@example.com", password: "correct horse battery")
        let onSecond = PlanStatus(client: second)
        await onSecond.update()
        #expect(onSecond.snapshot?.credits["practice"] == before)
        #expect(onSecond.creditsLabel("practice") == "Credits: 1/3 this month")

        // The last credit spent on the second phone is gone on the first too.
        try await second.spendCredit("practice", action: "practice_saved_flow", idempotencyKey: "practice-3", subject: "flow-1")
        await afterReinstall.update()
        #expect(afterReinstall.creditsLabel("practice") == "Credits: 0/3 this month")
        #expect(try await reinstalled.decide("practice_saved_flow").reasonCode == "credits_exhausted")
    }

    /// Hannah edge cases 4 and 5: the app deleted on day 3 and a new phone: signing in again finds
    /// the same trial, ending at the same moment, with the days left the clock says.
    @Test func aTrialSurvivesAReinstallAndANewDevice() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        try await TestApp.run(.sqlite, preset: "hannah", clock: clock, setup: .live) { server, config in
            try await Self.trialBody(server, config, clock)
        }
    }

    /// Signs in by magic link from the app; `used` are the mails already opened.
    static func magicLinkSignIn(_ client: Gatehouse, _ config: GatehouseConfig, email: String, used: [UUID]) async throws -> (SignInResult, UUID) {
        try await client.sendMagicLink(email: email)
        let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link") { $0.recipient == email && !used.contains($0.id) }
        let token = try EmailFlowTests.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/magic-link")
        guard case .signedIn(let result)? = try await client.handle(url: URL(string: "hannahhealth://auth?token=\(token)")!) else {
            throw GatehouseClientError(code: .internalError, message: "the magic link did not sign in")
        }
        return (result, mail.id)
    }

    static func trialBody(_ server: any TestClientProtocol, _ config: GatehouseConfig, _ clock: ManualClock) async throws {
        let port = try #require(server.port)
        let phone = try TestDevice()
        defer { phone.remove() }
        let client = try phone.launch(port: port)
        _ = try await client.loadConfiguration()
        let (created, firstMail) = try await Self.magicLinkSignIn(client, config, email: "hana.trial@example.com", used: [])
        #expect(created.created)
        let start = try await client.entitlements()
        // 1_800_000_000 + 7 days.
        #expect(start.planState == "trial" && start.trial == TrialInfo(endsAt: "2027-01-22T08:00:00Z", daysLeft: 6))

        // Day 3: the app is deleted and installed again.
        clock.advance(by: 2 * 86_400 + 3_600)
        try await phone.uninstall(closing: client)
        let reinstalled = try phone.launch(port: port)
        #expect(await reinstalled.restore() == .signedOut(.reinstalled))
        _ = try await reinstalled.loadConfiguration()
        let (again, secondMail) = try await Self.magicLinkSignIn(reinstalled, config, email: "hana.trial@example.com", used: [firstMail])
        #expect(!again.created && again.user.id == created.user.id)
        let status = PlanStatus(client: reinstalled)
        await status.update()
        #expect(status.planState == "trial" && status.snapshot?.trial == TrialInfo(endsAt: "2027-01-22T08:00:00Z", daysLeft: 4))
        #expect(status.banner == nil)

        // Day 6 on a second phone: the same trial, its banner.
        clock.advance(by: 3 * 86_400)
        let other = try TestDevice()
        defer { other.remove() }
        let second = try other.launch(port: port)
        _ = try await second.loadConfiguration()
        _ = try await Self.magicLinkSignIn(second, config, email: "hana.trial@example.com", used: [firstMail, secondMail])
        let onSecond = PlanStatus(client: second)
        await onSecond.update()
        #expect(onSecond.snapshot?.trial == TrialInfo(endsAt: "2027-01-22T08:00:00Z", daysLeft: 1))
        #expect(onSecond.banner == "1 day left in trial")

        // Day 8: expired on both, whichever phone asks.
        clock.advance(by: 2 * 86_400)
        for device in [reinstalled, second] {
            let decision = try await device.check("ai_chat")
            #expect(!decision.allowed && decision.reasonCode == "trial_expired")
        }
    }

    // MARK: S3 — SyncWell's password rules in the SDK's sign-up form

    /// SyncWell §2.1 and §3 in the form model against a live syncwell server: at least 10
    /// characters and 3 of the 4 classes, each broken rule with its message, the button off while
    /// any rule or the confirmation fails, nothing sent; a password the form accepts is
    /// accepted by the server.
    @Test func syncWellsPasswordRulesInTheSignUpForm() async throws {
        try await TestApp.run(.sqlite, preset: "syncwell", setup: .live) { server, _ in try await Self.syncWellRulesBody(server) }
    }

    static func syncWellRulesBody(_ server: any TestClientProtocol) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(server.port))
        let form = SignUpForm(client: client, configuration: try await client.loadConfiguration())
        form.email = "rules@example.com"
        let short = "Password must be at least 10 characters."
        let classes = "Password must contain at least 3 of: uppercase letters, lowercase letters, numbers and special characters."
        let cases: [(String, [String])] = [
            ("Ab1!", [short]),  // four classes, too short
            ("Abcdef1!x", [short]),  // nine characters
            ("abcdefghij", [classes]),  // ten, lowercase only
            ("abcdefghi1", [classes]),  // ten, two classes
            ("ABCDEFGH!!", [classes]),  // ten, two classes
            ("abc", [short, classes]),
            ("abcdefgh1!", []),  // ten, lower + digit + special
            ("ABCDEFGHi1", []),  // upper + lower + digit
            ("Abcdefghi!", []),  // upper + lower + special
        ]
        device.transport.reset()
        for (password, messages) in cases {
            form.password = password
            form.confirmPassword = password
            #expect(form.passwordMessages == messages, "\(password)")
            #expect(form.canSubmit == messages.isEmpty, "\(password)")
            if !messages.isEmpty { #expect(await form.submit() == false) }
        }
        #expect(device.transport.requests.isEmpty, "a password the rules refuse is never sent")

        // The confirmation too: a valid password typed differently keeps the button off.
        form.password = "Tr1cky-Passphrase"
        form.confirmPassword = "Tr1cky-passphrase"
        #expect(form.passwordMessages.isEmpty && form.confirmationMessage == "Passwords do not match." && !form.canSubmit)
        #expect(await form.submit() == false)
        #expect(device.transport.requests.isEmpty)
        form.confirmPassword = "Tr1cky-Passphrase"
        #expect(form.confirmationMessage == nil && form.canSubmit)
        #expect(await form.submit(), "\(form.errorMessage ?? "")")
        #expect(await client.state.user?.email == "rules@example.com")
        #expect(device.transport.requests.filter { $0 == "POST /v1/auth/signup" }.count == 1)
    }

    // MARK: HH-49 — only verified emails get access

    /// Hannah's cost protection: an account whose address is not verified (a password sign-up,
    /// possible once the app turns it on) is refused every action, by `/v1/entitlements/check`
    /// and by the app's own API behind `GatehouseVerifier` (403 `plan_required`, reason
    /// `verification_required`); once the address is verified and the session refreshed
    /// (decision 10), the same calls go through.
    @Test func anUnverifiedHannahAccountIsRefused() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "hannah", clock: clock, setup: .live, adjust: Self.turnOnPasswords) { gatehouse, config in
            try await Self.unverifiedBody(gatehouse, config, clock)
        }
    }

    /// Hannah with password sign-up turned on (the seed's Session 13 form), which makes accounts
    /// whose address is not yet proven.
    nonisolated static func turnOnPasswords(_ config: inout GatehouseConfig) { config.preset.signInMethods.emailPassword = true }

    static func unverifiedBody(_ gatehouse: any TestClientProtocol, _ config: GatehouseConfig, _ clock: ManualClock) async throws {
        let api = AuthClient(client: gatehouse)
        let account = try await api.account("unverified.hana@example.com")
        #expect(!account.user.emailVerified)
        let token = account.session.accessToken
        for action in ["ai_chat", "log_food", "send_sms", "view_history"] {
            let check = try await api.post("/v1/entitlements/check", #"{"action": "\#(action)"}"#, token: token)
            #expect(check.status == .ok, "\(action)")
            let decision = try check.json(GateDecision.self)
            #expect(!decision.allowed && decision.gate == "verification" && decision.reasonCode == "verification_required", "\(action)")
            #expect(decision.message == "Verify your email to use Hannah Health.", "\(action)")
        }

        // The app's API, protected by GatehouseVerifier.
        let port = try #require(gatehouse.port)
        let access = GatehouseAccess(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, audience: config.audience, issuer: config.issuer, clock: clock)
        let backend = Application(router: VerifierTests.backend(access, meter: UsageMeter(limits: [:], clock: clock)))
        try await backend.test(.router) { backend in
            func call(_ uri: String, _ method: HTTPRequest.Method, _ token: String) async throws -> TestResponse {
                try await backend.execute(uri: uri, method: method, headers: [.authorization: "Bearer \(token)"])
            }
            for (uri, method) in [("/ai/chat", HTTPRequest.Method.post), ("/history", .get)] {
                let refused = try await call(uri, method, token)
                #expect(refused.status == .forbidden && refused.error?.code == .planRequired, "\(uri): \(refused.text)")
                #expect(refused.error?.message == "Verify your email to use Hannah Health.", "\(uri)")
                let details = try #require(try refused.json(ErrorBody.self).error.details, "\(uri)")
                #expect(details["reason_code"] == .string("verification_required") && details["allowed"] == .bool(false), "\(uri)")
            }

            // Verified, then refreshed: allowed.
            _ = try await TestApp.withStore(config) {
                try await $0.markEmailVerified(UserID(account.user.id)!, normalizedEmail: "unverified.hana@example.com", at: clock.now)
            }
            let refreshed = try await api.refresh(account.session.refreshToken).json(SessionResponse.self).session.accessToken
            #expect(try await call("/ai/chat", .post, refreshed).status == .ok)
            #expect(try await call("/history", .get, refreshed).status == .ok)
            let check = try await api.post("/v1/entitlements/check", #"{"action": "ai_chat"}"#, token: refreshed).json(GateDecision.self)
            #expect(check.allowed)
        }
    }

    // MARK: O13-6 — OKLah's duration_ms on the injected clock

    /// OKLah §13 and decision 24: `duration_ms` runs from the privacy screen to Home (the name
    /// chosen), on the SDK's monotonic clock: a change of the device's date does not move it.
    /// The events' `timestamp` is the device's time when each happened.
    @Test func oklahsOnboardingDurationIsExact() async throws {
        try await TestApp.run(.sqlite, preset: "oklah", setup: .live) { server, config in try await Self.durationBody(server, config) }
    }

    static func durationBody(_ server: any TestClientProtocol, _ config: GatehouseConfig) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(server.port))
        let model = OnboardingModel(client: client, appVersion: "2.3.1")
        await model.launch()
        #expect(model.state == .privacyScreen)
        let shownAt = device.clock.now().rfc3339
        // The person reads the screen for 42.25 s, and meanwhile the device's date is changed.
        device.clock.advance(by: 42.25)
        device.clock.setWallClock(by: -3_600)
        model.start()
        await model.waitForCreation()
        #expect(model.state == .onboarded)
        // 17.5 s to pick a name.
        device.clock.advance(by: 17.5)
        let doneAt = device.clock.now().rfc3339
        try await model.chooseName(try #require(model.nameSuggestions.first))
        #expect(device.clock.waits.isEmpty, "no retry moved the clock")
        await client.flushAnalytics()

        let user = try #require(model.user)
        let id = try #require(UserID(user.id))
        let events = try await TestApp.withStore(config) { try await $0.events(after: nil, userID: id, limit: 50) }.filter { $0.type == .analytics }
        let start = try #require(events.first { $0.data["name"] == "onboarding_start" })
        #expect(start.data.filter { $0.key != "occurred_at" } == ["name": "onboarding_start", "app_version": "2.3.1", "timestamp": shownAt])
        let complete = try #require(events.first { $0.data["name"] == "onboarding_complete" })
        #expect(
            complete.data.filter { $0.key != "occurred_at" } == [
                "name": "onboarding_complete", "app_version": "2.3.1", "timestamp": doneAt, "user_id": id.description, "duration_ms": "59750",
            ])
    }

    // MARK: H8.9 — CH08 §9's analytics, each from the model that owns the moment

    /// Every CH08 §9 event, emitted by the SDK where the moment happens (the snapshot load, a gate,
    /// the cap sheet's Upgrade, the purchase and restore models, a trial start, a credit spend,
    /// the plan status seeing a downgrade), sent by the SDK and stored by the server with its
    /// properties: nothing in this test builds an event.
    @Test func everyCH08AnalyticsEventComesFromTheSDK() async throws {
        let appStore = try FakeAppStore()
        try await TestApp.run(.sqlite, preset: "handz", setup: .live, adjust: TestApp.trusting(appStore)) { server, config in
            try await Self.analyticsBody(server, config, appStore)
        }
    }

    static func analyticsBody(_ server: any TestClientProtocol, _ config: GatehouseConfig, _ appStore: FakeAppStore) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(server.port))
        _ = try await client.loadConfiguration()
        let user = try await client.signUp(email: "events@example.com", password: "correct horse battery").user
        let status = PlanStatus(client: client)
        status.savedFlowCount = 3

        // entitlement_snapshot_loaded: the plan status loads the snapshot.
        await status.update()
        // credit_spent: a practice session starts on a saved flow (once, however many retries).
        try await client.spendCredit("practice", action: "practice_saved_flow", idempotencyKey: "session-7", subject: "flow-42")
        try await client.spendCredit("practice", action: "practice_saved_flow", idempotencyKey: "session-7", subject: "flow-42")
        // gate_shown, then upgrade_clicked on the cap sheet's Upgrade.
        let decision = try await client.decide("upload_media", surface: .upload)
        let sheet = try #require(GateSheet(decision: decision, surface: .upload))
        await sheet.choose(try #require(sheet.primary), client: client)
        // purchase_started, purchase_failed.
        let purchase = PurchaseModel(client: client, productID: "com.handz.pro.monthly")
        await purchase.start()
        await purchase.finish(.failed(reason: "payment_declined"))
        // trial_started: the server trial.
        #expect(try await client.startTrial().planState == "trial")
        // purchase_started, purchase_success.
        let now = Date()
        let signed = try appStore.sign(
            FakeAppStore.transaction(
                id: "e1", original: "e1", product: "com.handz.pro.monthly", user: user.id, purchased: now, expires: now + 30 * 86_400, signed: now))
        await purchase.start()
        await purchase.finish(.purchased(signedTransaction: signed))
        #expect(purchase.state == .purchased(plan: "pro"))
        // restore_clicked, restore_success; restore_clicked, restore_failed.
        await purchase.startRestore()
        await purchase.finishRestore(signedTransactions: [signed])
        #expect(purchase.restoreState == .restored(plan: "pro"))
        await purchase.startRestore()
        await purchase.finishRestore(signedTransactions: [])
        #expect(purchase.restoreState == .failed(message: "No purchases to restore were found for this Apple ID."))
        // downgrade_detected: Pro taken away; the plan status sees Free with 3 flows over the cap of 2.
        await status.update()
        let down = try await server.execute(
            uri: "/admin/v1/users/\(user.id)/plan", method: .put, headers: TestApp.adminHeaders, body: jsonBody(#"{"plan": "free"}"#))
        #expect(down.status == .ok, "\(down.text)")
        await status.update()
        #expect(status.planState == "free")

        await client.flushAnalytics()
        let id = try #require(UserID(user.id))
        let stored = try await TestApp.withStore(config) { try await $0.events(after: nil, userID: id, limit: 100) }
            .filter { $0.type == .analytics }.map { $0.data.filter { $0.key != "occurred_at" } }
        let caps = "branch_cap_per_move=10,inbox_cap=10,media_cap_bytes=0,saved_flow_cap=2,share_links_per_day=3"
        let expected: [[String: String]] = [
            ["name": "entitlement_snapshot_loaded", "planState": "free", "creditsRemaining": "3", "caps": caps],
            ["name": "credit_spent", "flowId": "flow-42", "sessionId": "session-7"],
            ["name": "entitlement_snapshot_loaded", "planState": "free", "creditsRemaining": "2", "caps": caps],
            ["name": "entitlement_snapshot_loaded", "planState": "free", "creditsRemaining": "2", "caps": caps],
            ["name": "gate_shown", "reasonCode": "pro_required", "planState": "free", "surface": "upload"],
            ["name": "upgrade_clicked", "surface": "upload", "planState": "free"],
            ["name": "purchase_started", "productId": "com.handz.pro.monthly"],
            ["name": "purchase_failed", "productId": "com.handz.pro.monthly", "errorCode": "payment_declined"],
            ["name": "trial_started"],
            ["name": "purchase_started", "productId": "com.handz.pro.monthly"],
            ["name": "purchase_success", "productId": "com.handz.pro.monthly"],
            ["name": "restore_clicked"],
            ["name": "restore_success"],
            ["name": "restore_clicked"],
            ["name": "restore_failed", "errorCode": "nothing_to_restore"],
            [
                "name": "entitlement_snapshot_loaded", "planState": "pro",
                "caps": "branch_cap_per_move=10,inbox_cap=none,inbox_soft_cap=100,media_cap_bytes=2147483648,saved_flow_cap=none,"
                    + "saved_flow_soft_cap=500,share_links_per_day=none",
            ],
            ["name": "entitlement_snapshot_loaded", "planState": "free", "creditsRemaining": "2", "caps": caps],
            ["name": "downgrade_detected", "previousPlan": "pro", "newPlan": "free", "hasOverCapFlows": "true"],
        ]
        #expect(stored.count == expected.count, "\(stored)")
        for (index, event) in expected.enumerated() where index < stored.count {
            #expect(stored[index] == event, "event \(index)")
        }
        // Every event CH08 §9 lists came from the SDK, except trial_started's and purchase_success's
        // server twins, which the server records itself (decision 23).
        let ch08 = ["entitlement_snapshot_loaded", "gate_shown", "upgrade_clicked", "trial_started", "purchase_started", "purchase_success",
                    "purchase_failed", "restore_clicked", "restore_success", "restore_failed", "credit_spent", "downgrade_detected"]
        #expect(Set(stored.compactMap { $0["name"] }) == Set(ch08))
    }
}
