import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HummingbirdTesting
import Testing

/// Issue 64's stumbles of a new user trying the newest journeys from the docs: the code that
/// just confirmed an authenticator app, typed again at sign-in in the same 30 seconds, is
/// refused in its own words and spends no try (over HTTP, then through the SDK's code step); a
/// code that is not whole yet is refused on the device in words, and nothing is sent.
@Suite struct JourneyStumbleTests {
    static let codeUsed = "That code was used already. Each code works once: wait for the next code in your authenticator app."

    /// The authenticator app of a factor whose base32 secret is `secret`.
    static func app(_ secret: String) throws -> TOTP {
        OneTimeCodeToolTests.totp(try #require(Base32.decode(secret)))
    }

    /// Over HTTP: the confirming code, typed again at the challenge, is 400 `invalid_code` with
    /// its own words and `details.reason: "code_used"`, and costs nothing: typed again and again
    /// (past the lockout's threshold) the tries left stay 5 and nothing locks; a wrong code then
    /// spends one (4 left), and the next step's code signs in. At step-up, the code the sign-in
    /// just took is refused the same way.
    @Test(arguments: Backend.available)
    func aReusedCodeSaysSoAndSpendsNoTry(_ backend: Backend) async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 30).rounded(.down) * 30))
        try await TestApp.run(backend, clock: clock, setup: .live, adjust: MFATests.configure) { client, _ in
            let flow = MFAFlow(api: AuthClient(client: client), clock: clock)
            let session = try await flow.api.account("reused.code@example.com").session
            let enrolled = try await flow.enroll(session.accessToken)
            let app = try Self.app(enrolled.totp.secret)
            let confirming = app.code(at: clock.now)
            let confirmed = try await flow.api.post(
                "/v1/mfa/factors/\(enrolled.id)/confirm", #"{"code": "\#(confirming)"}"#, token: session.accessToken)
            #expect(confirmed.status == .ok, "\(confirmed.text)")

            clock.advance(by: 5)  // The same 30 seconds.
            let challenge = try await flow.challenge("reused.code@example.com")
            for _ in 0..<7 {
                let again = try await flow.verify(challenge, factor: enrolled.id, code: confirming)
                #expect(again.status == .badRequest && again.error?.code == .invalidCode, "\(again.text)")
                #expect(again.error?.message == Self.codeUsed)
                #expect(again.error?.details?["reason"] == .string("code_used"))
                #expect(again.error?.details?["attempts_left"] == .number(5))
            }
            let wrong = try await flow.verify(challenge, factor: enrolled.id, code: flow.wrong(confirming))
            #expect(wrong.error?.message == "That code is not right. Check your authenticator app and try again.")
            #expect(wrong.error?.details?["attempts_left"] == .number(4) && wrong.error?.details?["reason"] == nil)
            let next = app.code(at: clock.now.addingTimeInterval(30))
            let signedIn = try await flow.verify(challenge, factor: enrolled.id, code: next)
            #expect(signedIn.status == .ok, "\(signedIn.text)")
            let token = try signedIn.json(MFAVerifyResponse.self).session.accessToken

            // Step-up with the code the sign-in just took: the same words.
            let stepUp = try await flow.api.post("/v1/auth/mfa/verify", #"{"factor_id": "\#(enrolled.id)", "code": "\#(next)"}"#, token: token)
            #expect(stepUp.status == .badRequest && stepUp.error?.message == Self.codeUsed, "\(stepUp.text)")
        }
    }

    /// Through the SDK (`LoginForm` → `SecondFactorModel`): five digits, and a recovery code of
    /// the wrong form, are refused on the device in words and send nothing; the confirming code
    /// again says a code works once and leaves the tries as they were; the next code signs in.
    /// The step-up prompt refuses an incomplete code in the same words.
    @Test func theCodeStepSaysWhatIsWrongWithTheCode() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 30).rounded(.down) * 30))
        try await TestApp.run(.sqlite, clock: clock, setup: .live, adjust: MFATests.configure) { server, _ in
            try await Self.codeStepBody(server, clock)
        }
    }

    @MainActor static func codeStepBody(_ server: any TestClientProtocol, _ clock: ManualClock) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(server.port))
        try await client.signUp(email: "code.step@example.com", password: "correct horse battery")
        let enrollment = try await client.enrollTOTP(name: "Phone")
        let app = try Self.app(enrollment.totp.secret)
        let confirming = app.code(at: clock.now)
        _ = try await client.confirmFactor(id: enrollment.id, code: confirming)
        try await client.signOut()
        clock.advance(by: 5)

        let form = LoginForm(client: client, now: { clock.now })
        form.email = "code.step@example.com"
        form.password = "correct horse battery"
        #expect(await form.submit() == false)
        let step = try #require(form.secondFactor)

        device.transport.reset()
        step.code = "12345"
        #expect(!step.isVerifyEnabled)
        #expect(await step.verify() == false)
        #expect(step.errorMessage == "Enter the 6-digit code from your authenticator app.")
        step.usesRecoveryCode = true
        step.code = "abcd-efgh-2345"
        #expect(await step.verify() == false)
        #expect(step.errorMessage == "Enter a recovery code as you saved it: 16 letters and digits, like abcd-efgh-2345-ijkl.")
        #expect(device.transport.requests.isEmpty, "\(device.transport.requests)")
        #expect(step.attemptsLeft == nil && step.outcome == nil)

        step.usesRecoveryCode = false
        step.code = confirming
        #expect(await step.verify() == false)
        #expect(step.errorMessage == Self.codeUsed)
        #expect(step.attemptsLeft == 5 && step.outcome == nil && !step.isLocked)
        step.code = app.code(at: clock.now.addingTimeInterval(30))
        #expect(await step.verify(), "\(step.errorMessage ?? "")")
        #expect(await client.state.user?.email == "code.step@example.com")

        let prompt = try #require(
            StepUpPrompt(client: client, error: GatehouseClientError(code: .mfaRequired, message: "Confirm it's you.", status: 403)))
        await prompt.load()
        #expect(prompt.route == .code)
        device.transport.reset()
        prompt.code = "12 34"
        #expect(await prompt.verify() == false)
        #expect(prompt.errorMessage == "Enter the 6-digit code from your authenticator app.")
        #expect(device.transport.requests.isEmpty, "\(device.transport.requests)")
    }

    /// Hannah's address step: a code from the mail with five digits says so and sends nothing;
    /// the code typed as `123 456` is taken.
    @Test func theMagicLinkCodeSaysWhenItIsIncomplete() async throws {
        try await TestApp.run(.sqlite, preset: "hannah", setup: .live) { server, config in
            try await Self.magicCodeBody(server, config)
        }
    }

    @MainActor static func magicCodeBody(_ server: any TestClientProtocol, _ config: GatehouseConfig) async throws {
        let device = try TestDevice()
        defer { device.remove() }
        let client = try device.launch(port: try #require(server.port))
        let onboarding = MagicLinkOnboarding(client: client)
        await onboarding.start()
        onboarding.email = "code.typed@example.com"
        #expect(await onboarding.send())
        let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link") { $0.recipient == "code.typed@example.com" }
        let code = try EmailFlowTests.code(in: ReceivedMail(text: mail.textBody ?? ""))
        device.transport.reset()
        onboarding.code = String(code.prefix(5))
        #expect(!onboarding.canSubmitCode)
        #expect(await onboarding.submitCode() == false)
        #expect(onboarding.errorMessage == "Enter the 6-digit code from the email.")
        #expect(device.transport.requests.isEmpty, "\(device.transport.requests)")
        onboarding.code = String(code.prefix(3)) + " " + String(code.suffix(3))
        #expect(await onboarding.submitCode(), "\(onboarding.errorMessage ?? "")")
        #expect(onboarding.step == .signedIn(newAccount: true) && onboarding.errorMessage == nil)
    }
}
