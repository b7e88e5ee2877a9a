import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HummingbirdTesting
import Testing

/// Issue 21, item 5: the flow models offer passkey sign-in and the upgrade to a passkey, with
/// the preset's words, and the soft authenticator as the device's sheet.
@MainActor
@Suite(.requires(SoftAuthenticator.isAvailable, "GATEHOUSE_TEST_PYTHON with soft-webauthn and webauthn"))
struct PasskeyModelTests {
    /// What an app's `ASAuthorizationController` wrapper does, played by the soft authenticator:
    /// make or use the passkey, or the person closes the sheet, or the device cannot.
    struct Sheet: PasskeyAuthenticator {
        enum Outcome: Sendable { case completes, cancelled, fails }
        struct DeviceError: Error {}
        let authenticator: SoftAuthenticator
        var outcome = Outcome.completes

        func register(_ options: PasskeyRegistrationOptions) async throws -> PasskeyRegistration {
            try check()
            return try await SDKPasskeyTests.register(authenticator, options)
        }

        func signIn(_ options: PasskeySignInOptions) async throws -> PasskeyAssertion {
            try check()
            return try await SDKPasskeyTests.assert(authenticator, options)
        }

        /// The same device, with the person (or the device) doing something else.
        func when(_ outcome: Outcome) -> Sheet { Sheet(authenticator: authenticator, outcome: outcome) }

        private func check() throws {
            switch outcome {
            case .completes: return
            case .cancelled: throw CancellationError()
            case .fails: throw DeviceError()
            }
        }
    }

    /// A phone with the app launched against `server`, the soft authenticator as its sheet.
    static func onPhone(_ server: any TestClientProtocol, _ body: (Gatehouse, Sheet) async throws -> Void) async throws {
        let phone = try TestDevice()
        defer { phone.remove() }
        let app = try phone.launch(port: try #require(server.port))
        try await body(app, Sheet(authenticator: try SoftAuthenticator()))
    }

    nonisolated static let changedTitle = "Passkeys, now (changed)"

    nonisolated static func configureHandz(_ config: inout GatehouseConfig) {
        PasskeyTests.configure(&config)
        config.preset.copy["passkey.offer_title"] = changedTitle
    }

    /// Handz: the welcome gate keeps CH07's buttons and adds the passkey one; after a password
    /// sign-up the offer adds a passkey, and the gate signs back in with it.
    @Test(arguments: Backend.available)
    func handzOffersThePasskeyAndSignsInWithIt(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "handz", clock: clock, setup: .live, adjust: Self.configureHandz) { server, _ in
            try await Self.handz(server, clock)
        }
    }

    static func handz(_ server: any TestClientProtocol, _ clock: ManualClock) async throws {
        try await onPhone(server) { app, sheet in
            let gate = AuthCoordinator(client: app)
            await gate.start()
            #expect(gate.welcomeButtons.map(\.id) == ["apple", "google", "email", "log_in", "try_without_account"])
            #expect(gate.passkeyButton == GateAction(id: "passkey", label: "Continue with a passkey"))

            _ = try await app.signUp(email: "pk.models@example.com", password: "correct horse battery")
            let offer = PasskeyEnrollment(client: app)
            await offer.load()
            #expect(offer.isOffered && offer.title == Self.changedTitle)
            #expect(offer.message == "Save a passkey and get back to your flows with Face ID.")
            // The sheet closed: nothing shown, still offered. The device failing: its words.
            #expect(!(await offer.add(using: sheet.when(.cancelled))))
            #expect(offer.errorMessage == nil && offer.isOffered)
            #expect(!(await offer.add(using: sheet.when(.fails))))
            #expect(offer.errorMessage == "This device couldn't use a passkey. Try again, or sign in another way.")
            #expect(await offer.add(using: sheet, name: "iPhone"))
            #expect(offer.passkeys.map(\.name) == ["iPhone"] && !offer.isOffered && offer.errorMessage == nil)
            #expect(offer.notice == "Passkey saved. Your flows are a glance away.")
            let later = PasskeyEnrollment(client: app)
            await later.load()
            #expect(!later.isOffered && later.passkeys.map(\.name) == ["iPhone"])

            // Signed out, then back in from the welcome gate with the passkey (no address typed).
            // The offer adds to an account only: signed out it never makes a new one.
            await gate.signOut()
            let signedOut = PasskeyEnrollment(client: app)
            #expect(!(await signedOut.add(using: sheet)))
            #expect(signedOut.errorMessage == "Please sign in first." && signedOut.passkeys.isEmpty)
            #expect(await app.state.user == nil)
            #expect(await !(gate.signInWithPasskey(using: sheet.when(.cancelled))))
            #expect(gate.root == .welcome && gate.passkeyError == nil)
            #expect(await gate.signInWithPasskey(using: sheet))
            #expect(gate.root == .main && gate.path.isEmpty && gate.passkeyError == nil)
            #expect(await app.state.user?.email == "pk.models@example.com")
            #expect(await app.lastProvider == .passkey)

            // Six minutes on, a second passkey needs a fresh sign-in: the model says so.
            clock.advance(by: 360)
            let stale = PasskeyEnrollment(client: app)
            await stale.load()
            #expect(!(await stale.add(using: sheet)))
            #expect(stale.needsReauthentication && stale.errorMessage == "To add a passkey, sign in again first.")
            // The password stays a way in, so the passkey may go; then the offer is back.
            let passkey = try #require(stale.passkeys.first)
            await stale.remove(passkey)
            #expect(stale.passkeys.isEmpty && stale.isOffered && stale.errorMessage == nil)
        }
    }

    /// Hannah: the first time by magic link, then the offer; the next time the passkey signs in
    /// from the address step, with no mail, into the same account and its trial.
    @Test func hannahSignsInWithAPasskeyAfterTheFirstLink() async throws {
        try await TestApp.run(.sqlite, preset: "hannah", setup: .live, adjust: PasskeyTests.configure) { server, config in
            try await Self.hannah(server, config)
        }
    }

    static func hannah(_ server: any TestClientProtocol, _ config: GatehouseConfig) async throws {
        try await onPhone(server) { app, sheet in
            let first = MagicLinkOnboarding(client: app)
            await first.start()
            #expect(first.passkeyLabel == "Sign in with Face ID")
            first.email = "hana.pk@example.com"
            #expect(await first.send())
            let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link") { $0.recipient == "hana.pk@example.com" }
            first.code = try EmailFlowTests.code(in: ReceivedMail(text: mail.textBody ?? ""))
            #expect(await first.submitCode())
            #expect(first.step == .signedIn(newAccount: true))
            let account = try #require(await app.state.user)

            let offer = PasskeyEnrollment(client: app)
            await offer.load()
            #expect(offer.isOffered && offer.title == "No more waiting for emails")
            #expect(await offer.add(using: sheet))
            #expect(offer.notice == "All set: next time, sign in with Face ID.")

            try await app.signOut()
            let again = MagicLinkOnboarding(client: app)
            await again.start()
            #expect(await again.signInWithPasskey(using: sheet))
            #expect(again.step == .signedIn(newAccount: false) && again.trialStartedMessage == nil)
            #expect(again.trialDaysLeft == 6)
            #expect(await app.state.user?.id == account.id)
            // Still the one link mail: the passkey sent nothing.
            let mails = try await EmailFlowTests.outbox(config) { _ in true }
            #expect(mails.filter { $0.kind == "magic_link" && $0.recipient == "hana.pk@example.com" }.count == 1)
        }
    }

    /// A preset without passkeys (SyncWell) shows no passkey button and makes no offer.
    @Test func aPresetWithoutPasskeysOffersNone() async throws {
        try await TestApp.run(.sqlite, preset: "syncwell", setup: .live, adjust: PasskeyTests.configure) { server, _ in
            try await Self.noPasskeys(server)
        }
    }

    static func noPasskeys(_ server: any TestClientProtocol) async throws {
        try await onPhone(server) { app, sheet in
            let gate = AuthCoordinator(client: app)
            await gate.start()
            #expect(gate.passkeyButton == nil)
            #expect(!(await gate.signInWithPasskey(using: sheet)))
            _ = try await app.signUp(email: "no.pk@example.com", password: "Correct-Horse-9-Battery")
            let offer = PasskeyEnrollment(client: app)
            await offer.load()
            #expect(!offer.isOffered)
        }
    }
}
