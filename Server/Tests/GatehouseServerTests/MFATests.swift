import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseVerifier
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Second factors end to end over HTTP on both databases, with other people's tools on the
/// other side: pyotp computes the codes from the secret the server hands out, oathtool checks
/// pyotp, zbar reads the QR code back to the key URI, and PyJWT (an independent JWT library)
/// reads `aal` and `amr` from the access tokens against the server's published key.
@Suite(.requires(OneTimeCodeTools.available && MFAFlow.hasPyJWT, "pyotp and PyJWT in GATEHOUSE_TEST_PYTHON, oathtool, zbarimg, rsvg-convert"))
struct MFATests {
    static func configure(_ config: inout GatehouseConfig) {
        config.ipLimits = false
        config.httpIdleTimeoutSeconds = 600
    }

    /// Enroll → confirm → sign out → sign in → challenge → code → `aal2`; ±1 step accepted, ±2
    /// refused, a code never twice, each recovery code once.
    @Test(arguments: Backend.available)
    func enrollConfirmAndSignInWithASecondFactor(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, clock: clock, setup: .live, adjust: Self.configure) { client, config in
            let flow = MFAFlow(api: AuthClient(client: client), clock: clock)
            let session = try await flow.api.account("two.step@example.com").session

            let enrolled = try await flow.enroll(session.accessToken, name: "Phone")
            #expect(enrolled.status == "unverified" && enrolled.name == "Phone" && enrolled.type == "totp")
            #expect(enrolled.totp.uri.hasPrefix("otpauth://totp/Gatehouse:two.step%40example.com?secret=\(enrolled.totp.secret)&issuer=Gatehouse"))
            #expect(try await OneTimeCodeTools.readQR(svg: enrolled.totp.qrSVG) == enrolled.totp.uri)
            // oathtool agrees with pyotp on the code the authenticator app shows now.
            let now = try await flow.code(enrolled.totp.secret)
            let oathtool = try await Command.run(
                try #require(OneTimeCodeTools.tool("oathtool")),
                ["--totp", "-b", "--now", "@\(Int64(clock.now.timeIntervalSince1970))", enrolled.totp.secret])
            #expect(oathtool.trimmingCharacters(in: .whitespacesAndNewlines) == now)

            // Not counted until a first code confirms it: sign-in asks for nothing yet.
            #expect(try await flow.api.login("two.step@example.com").json(SignInAnswer<AuthResponse>.self).signedIn != nil)
            let wrong = try await flow.api.post("/v1/mfa/factors/\(enrolled.id)/confirm", #"{"code": "\#(flow.wrong(now))"}"#, token: session.accessToken)
            #expect(wrong.status == .badRequest && wrong.error?.code == .invalidCode)
            let confirmed = try await flow.api.post("/v1/mfa/factors/\(enrolled.id)/confirm", #"{"code": "\#(now)"}"#, token: session.accessToken)
            #expect(confirmed.status == .ok, "\(confirmed.text)")
            let confirmation = try confirmed.json(MFAConfirmResponse.self)
            #expect(confirmation.factor.status == "verified")
            let recovery = try #require(confirmation.recoveryCodes)
            #expect(recovery.count == 10 && Set(recovery).count == 10)
            #expect(recovery.allSatisfy { $0.range(of: #"^[a-z2-7]{4}(-[a-z2-7]{4}){3}$"#, options: .regularExpression) != nil })

            // A sign-in now answers a challenge and no session.
            clock.advance(by: 120)
            let login = try await flow.api.login("two.step@example.com")
            #expect(login.status == .ok)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(login.body.readableBytesView)) as? [String: Any])
            #expect(Set(body.keys) == ["mfa"])
            let challenge = try #require(try login.json(SignInAnswer<AuthResponse>.self).challenge)
            #expect(challenge.factors == [MFAFactorSummary(id: enrolled.id, type: "totp", name: "Phone")])

            // Two steps ahead is refused; one step behind is accepted.
            let ahead = try await flow.verify(challenge.challengeID, factor: enrolled.id, code: try await flow.code(enrolled.totp.secret, steps: 2))
            #expect(ahead.status == .badRequest && ahead.error?.code == .invalidCode, "\(ahead.text)")
            let behindCode = try await flow.code(enrolled.totp.secret, steps: -1)
            let behind = try await flow.verify(challenge.challengeID, factor: enrolled.id, code: behindCode)
            #expect(behind.status == .ok, "\(behind.text)")
            let signedIn = try behind.json(MFAVerifyResponse.self)
            #expect(signedIn.user?.email == "two.step@example.com")
            let claims = try await flow.claims(signedIn.session.accessToken)
            #expect(claims["aal"] as? String == "aal2")
            #expect((claims["amr"] as? [[String: Any]])?.compactMap { $0["method"] as? String } == ["password", "totp"])
            // The challenge is spent.
            #expect(try await flow.verify(challenge.challengeID, factor: enrolled.id, code: now).error?.code == .challengeInvalid)

            // The same code on a new challenge is refused (its step was taken); the next step's works.
            let again = try await flow.challenge("two.step@example.com")
            #expect(try await flow.verify(again, factor: enrolled.id, code: behindCode).error?.code == .invalidCode)
            let current = try await flow.verify(again, factor: enrolled.id, code: try await flow.code(enrolled.totp.secret))
            #expect(current.status == .ok, "\(current.text)")

            // Each recovery code once, in any spelling; its use is audited.
            let first = try await flow.verify(try await flow.challenge("two.step@example.com"), recoveryCode: recovery[0].uppercased())
            #expect(first.status == .ok, "\(first.text)")
            let recovered = try await flow.claims(try first.json(MFAVerifyResponse.self).session.accessToken)
            #expect((recovered["amr"] as? [[String: Any]])?.compactMap { $0["method"] as? String } == ["password", "recovery_code"])
            let reused = try await flow.verify(try await flow.challenge("two.step@example.com"), recoveryCode: recovery[0])
            #expect(reused.status == .badRequest && reused.error?.code == .invalidCode)
            let second = try await flow.verify(
                try await flow.challenge("two.step@example.com"), recoveryCode: recovery[1].replacingOccurrences(of: "-", with: ""))
            #expect(second.status == .ok, "\(second.text)")
            let audit = try await flow.api.client.execute(
                uri: "/admin/v1/audit?limit=500", method: .get, headers: TestApp.adminHeaders)
            #expect(audit.text.contains(#""remaining":"8""#), "\(audit.text)")
            // Every refused code is an audited failure: the wrong first code, the code two steps
            // ahead, the replayed step (refused before its attempt is counted, issue 64) and the
            // used recovery code (refused only inside the transaction that would have taken it).
            let failures = try audit.json(AuditList.self).events.filter { $0.event == "mfa_verify" && $0.outcome == "failure" }
            #expect(failures.map { $0.details["stage"] ?? "" }.sorted() == ["confirm", "verify", "verify", "verify"], "\(failures)")
        }
    }

    /// Issue 22: 30 verifications of one code released together (each on a challenge of its
    /// own, so only the code's single use stands between them) succeed once.
    @Test(arguments: Backend.available)
    func thirtyParallelVerificationsOfOneCodeSucceedOnce(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, clock: clock, setup: .live, adjust: Self.configure) { client, _ in
            let flow = MFAFlow(api: AuthClient(client: client), clock: clock)
            let (factor, secret, _) = try await flow.enrolledAccount("racer@example.com")
            clock.advance(by: 60)
            var challenges: [String] = []
            for _ in 0..<30 { challenges.append(try await flow.challenge("racer@example.com")) }
            let code = try await flow.code(secret)
            let requests = challenges.map {
                LastByteRace.request(
                    "POST", "/v1/auth/mfa/verify", json: #"{"challenge_id": "\#($0)", "factor_id": "\#(factor)", "code": "\#(code)"}"#)
            }
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(client.port), requests) }
            #expect(answers.filter { $0.status == 200 }.count == 1, "\(answers.map(\.status))")
            // The rest: the code was taken, or the account's lockout stopped them first.
            #expect(answers.allSatisfy { $0.status == 200 || $0.error?.code == .invalidCode || $0.error?.code == .tooManyAttempts })
        }
    }

    /// Wrong codes: a challenge dies after the preset's attempts, and the account locks with the
    /// lockout's doubling waits, both in the preset's words (changed here, and seen).
    @Test func bruteForceLocksOutWithThePresetsCopy() async throws {
        let clock = ManualClock(Date())
        let words = "Slow down: too many wrong codes for this account."
        let spentWords = "That was the last try for this sign-in: sign in again."
        try await TestApp.run(
            .sqlite, clock: clock, setup: .live,
            adjust: {
                Self.configure(&$0)
                $0.preset.copy["error.mfa_too_many_attempts"] = words
                $0.preset.copy["error.mfa_challenge_spent"] = spentWords
                $0.preset.mfa.attemptsPerChallenge = 3
            }
        ) { client, _ in
            let flow = MFAFlow(api: AuthClient(client: client), clock: clock)
            let (factor, secret, _) = try await flow.enrolledAccount("guessed@example.com")
            clock.advance(by: 60)
            // Without the password nothing says a factor exists: the same refusal as an account
            // without one, with no challenge.
            _ = try await flow.api.account("unguarded@example.com")
            let guarded = try await flow.api.login("guessed@example.com", "not the password")
            let unguarded = try await flow.api.login("unguarded@example.com", "not the password")
            #expect(guarded.status == .unauthorized && guarded.status == unguarded.status && guarded.text == unguarded.text)
            #expect(!guarded.text.contains("mfa") && !guarded.text.contains("challenge"))
            let wrong = flow.wrong(try await flow.code(secret))
            let challenge = try await flow.challenge("guessed@example.com")
            // Each wrong code says how many tries the sign-in has left; the last one says it ended.
            for left in [2, 1, 0] {
                let answer = try await flow.verify(challenge, factor: factor, code: wrong)
                #expect(answer.error?.code == .invalidCode && answer.error?.details?["attempts_left"] == .number(Double(left)))
                #expect(answer.error?.details?["challenge_ended"] == (left == 0 ? .bool(true) : nil), "\(answer.text)")
            }
            // A sign-in out of tries is over, and a new one may start at once: no wait to show.
            let spent = try await flow.verify(challenge, factor: factor, code: try await flow.code(secret))
            #expect(spent.status == .tooManyRequests && spent.error?.message == spentWords, "\(spent.text)")
            #expect(spent.error?.retryAfter == nil && spent.error?.details?["challenge_ended"] == .bool(true))

            // Five failures on the account (the default threshold) lock it: even the right code waits.
            let next = try await flow.challenge("guessed@example.com")
            for _ in 0..<2 { #expect(try await flow.verify(next, factor: factor, code: wrong).error?.code == .invalidCode) }
            let third = try await flow.challenge("guessed@example.com")
            let locked = try await flow.verify(third, factor: factor, code: try await flow.code(secret))
            #expect(locked.status == .tooManyRequests && locked.error?.message == words, "\(locked.text)")
            #expect(locked.error?.retryAfter == 30)
            // The lockout's refusals do not use the sign-in's tries: after the wait, it goes on.
            for _ in 0..<3 {
                #expect(try await flow.verify(third, factor: factor, code: try await flow.code(secret)).status == .tooManyRequests)
            }
            clock.advance(by: 31)
            let after = try await flow.verify(third, factor: factor, code: try await flow.code(secret))
            #expect(after.status == .ok, "\(after.text)")
        }
    }

    /// A gate requiring `aal2` refuses an `aal1` session with `mfa_required` (the app's own
    /// action through the check and the verifier, the server's export route) and allows it
    /// after a step-up of the same session.
    @Test func stepUpOpensAGateThatRequiresASecondFactor() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(
            .sqlite, clock: clock, setup: .live,
            adjust: {
                Self.configure(&$0)
                $0.preset.entitlements.actions["view_records"] = ActionSettings(rules: [GateRule(kind: .account), GateRule(kind: .mfa)])
                $0.preset.entitlements.actions["account.export"] = ActionSettings(rules: [GateRule(kind: .mfa, message: "Confirm with your app.")])
            }
        ) { client, config in
            let flow = MFAFlow(api: AuthClient(client: client), clock: clock)
            let account = try await flow.api.account("records@example.com")
            // Another device signed in before the factor existed: its session stays aal1.
            let aal1 = try await flow.api.login("records@example.com").json(AuthResponse.self).session
            let enrolled = try await flow.enroll(account.session.accessToken)
            try await flow.confirm(enrolled, token: account.session.accessToken)
            let (factor, secret) = (enrolled.id, enrolled.totp.secret)
            clock.advance(by: 60)
            #expect(try await flow.claims(aal1.accessToken)["aal"] as? String == "aal1")

            let check = try await flow.api.post("/v1/entitlements/check", #"{"action": "view_records"}"#, token: aal1.accessToken)
            let decision = try check.json(GateDecision.self)
            #expect(!decision.allowed && decision.reasonCode == "mfa_required" && decision.gate == "step_up")
            let export = try await flow.api.get("/v1/me/export", token: aal1.accessToken)
            #expect(export.status == .forbidden && export.error?.code == .mfaRequired && export.error?.message == "Confirm with your app.")
            // The app's backend, offline from the token: GatehouseVerifier refuses it too.
            let port = try #require(client.port)
            let access = GatehouseAccess(baseURL: URL(string: "http://127.0.0.1:\(port)")!, audience: config.audience, issuer: config.issuer, clock: clock)
            let verified = try await access.tokens.verify(aal1.accessToken)
            #expect(verified.assuranceLevel == .aal1)
            #expect(try await access.decide("view_records", for: verified).reasonCode == "mfa_required")

            // Managing factors needs aal2 too.
            #expect(try await flow.api.get("/v1/mfa/factors", token: aal1.accessToken).error?.code == .mfaRequired)

            // Step up in place: the same session id, new tokens at aal2.
            let stepUp = try await flow.api.post(
                "/v1/auth/mfa/verify", #"{"factor_id": "\#(factor)", "code": "\#(try await flow.code(secret))"}"#, token: aal1.accessToken)
            #expect(stepUp.status == .ok, "\(stepUp.text)")
            let raised = try stepUp.json(MFAVerifyResponse.self)
            #expect(raised.user == nil && raised.session.sessionID == aal1.sessionID && raised.session.refreshToken != aal1.refreshToken)
            let claims = try await flow.claims(raised.session.accessToken)
            #expect(claims["aal"] as? String == "aal2" && claims["sid"] as? String == aal1.sessionID)
            let allowed = try await flow.api.post("/v1/entitlements/check", #"{"action": "view_records"}"#, token: raised.session.accessToken)
            #expect(try allowed.json(GateDecision.self).allowed)
            #expect(try await flow.api.get("/v1/me/export", token: raised.session.accessToken).status == .ok)
            let raisedUser = try await access.tokens.verify(raised.session.accessToken)
            #expect(raisedUser.assuranceLevel == .aal2 && raisedUser.authenticationMethods.map(\.method) == ["password", "totp"])
            #expect(try await access.decide("view_records", for: raisedUser).allowed)
            // The refresh token from before the step-up was retired; the new one keeps aal2.
            let refreshed = try await flow.api.refresh(raised.session.refreshToken)
            #expect(try await flow.claims(try refreshed.json(SessionResponse.self).session.accessToken)["aal"] as? String == "aal2")
        }
    }

    /// The SDK: enrolling and confirming, then a sign-in that waits in its own state for the
    /// code and completes with it; another device's older session steps up in place.
    @Test func theSDKWaitsForTheSecondFactorInItsOwnState() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, clock: clock, setup: .live, adjust: Self.configure) { server, _ in
            let flow = MFAFlow(api: AuthClient(client: server), clock: clock)
            let port = try #require(server.port)
            let (phone, tablet) = (try TestDevice(), try TestDevice())
            defer { phone.remove(); tablet.remove() }
            let app = try phone.launch(port: port)
            let other = try tablet.launch(port: port)
            try await app.signUp(email: "sdk.mfa@example.com", password: "correct horse battery")
            try await other.signIn(email: "sdk.mfa@example.com", password: "correct horse battery")

            let enrollment = try await app.enrollTOTP(name: "Phone")
            #expect(enrollment.totp.uri.contains("secret=\(enrollment.totp.secret)"))
            let confirmation = try await app.confirmFactor(id: enrollment.id, code: try await flow.code(enrollment.totp.secret))
            #expect(confirmation.recoveryCodes?.count == 10)
            try await app.signOut()

            clock.advance(by: 60)
            await #expect(throws: GatehouseClientError.self) { try await app.signIn(email: "sdk.mfa@example.com", password: "correct horse battery") }
            guard case .secondFactorRequired(let challenge) = await app.state else {
                Issue.record("the state is \(await app.state)")
                return
            }
            let pending = await app.pendingSecondFactor
            #expect(challenge.factors.map(\.name) == ["Phone"] && pending == challenge)
            let wrong = await #expect(throws: GatehouseClientError.self) {
                try await app.completeSignIn(code: flow.wrong(try await flow.code(enrollment.totp.secret)))
            }
            #expect(wrong?.code == .invalidCode && wrong?.message == "That code is not right. Check your authenticator app and try again.")
            let result = try await app.completeSignIn(code: try await flow.code(enrollment.totp.secret))
            let state = await app.state
            #expect(result.user.email == "sdk.mfa@example.com" && state.user?.email == "sdk.mfa@example.com")
            #expect(try await app.mfaFactors().map(\.status) == ["verified"])

            // The tablet's session predates the factor: managing factors asks it to step up.
            let refused = await #expect(throws: GatehouseClientError.self) { try await other.mfaFactors() }
            #expect(refused?.code == .mfaRequired)
            clock.advance(by: 30)
            try await other.stepUp(factorID: enrollment.id, code: try await flow.code(enrollment.totp.secret))
            #expect(try await other.mfaFactors().count == 1)
        }
    }

    /// The SDK's step-up prompt: a gate refused on the device for want of a second factor or of
    /// a recent sign-in leads to the code field (the factors named by the server's refusal,
    /// since an `aal1` session may not list them), the preset's words, a wrong code refused,
    /// the right one stepping the session up so that the same gate opens on the device and on
    /// the server; an account without an authenticator app is sent to set one up, or to sign
    /// in again.
    @Test func theStepUpPromptAnswersARefusedGate() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(
            .sqlite, clock: clock, setup: .live,
            adjust: {
                Self.configure(&$0)
                $0.preset.entitlements.actions["view_records"] = ActionSettings(rules: [
                    GateRule(kind: .account), GateRule(kind: .mfa, message: "Confirm with your app to see your records."),
                ])
                $0.preset.entitlements.actions["edit_plan"] = ActionSettings(rules: [GateRule(kind: .recentSignIn, withinMinutes: 5)])
                $0.preset.copy["mfa.step_up_title"] = "Quick check"
            }
        ) { server, _ in
            try await Self.stepUpPrompts(server, clock)
        }
    }

    /// Issue 41: the code step of a sign-in as a model, through `LoginForm`, against a live
    /// server: wrong codes with the tries left, the last one ending the step back at the form
    /// with the server's words (the client signed out, a new sign-in at once), a used recovery
    /// code refused in its own words and a good one signing in, and the account's lockout shown
    /// with its end, after which the same step goes on. Copy changed in the preset is seen.
    @Test func theSecondFactorModelsJourney() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(
            .sqlite, clock: clock, setup: .live,
            adjust: {
                Self.configure(&$0)
                $0.preset.mfa.attemptsPerChallenge = 3
                $0.preset.copy["mfa.sign_in_title"] = "One more step"
                $0.preset.copy["mfa.attempts_left.other"] = "{count} goes left."
            }
        ) { server, _ in
            try await Self.secondFactorModel(server, clock)
        }
    }

    @MainActor static func secondFactorModel(_ server: any TestClientProtocol, _ clock: ManualClock) async throws {
        let flow = MFAFlow(api: AuthClient(client: server), clock: clock)
        let port = try #require(server.port)
        let phone = try TestDevice()
        defer { phone.remove() }
        let app = try phone.launch(port: port)
        try await app.signUp(email: "steps@example.com", password: "correct horse battery")
        try await app.loadConfiguration()
        let enrollment = try await app.enrollTOTP(name: "Phone")
        let confirmed = try await app.confirmFactor(id: enrollment.id, code: try await flow.code(enrollment.totp.secret))
        let recoveryCodes = try #require(confirmed.recoveryCodes)
        try await app.signOut()
        clock.advance(by: 60)

        let form = LoginForm(client: app, now: { clock.now })
        form.email = "steps@example.com"
        form.password = "correct horse battery"
        #expect(await form.submit() == false)
        let step = try #require(form.secondFactor)
        #expect(step.title == "One more step" && step.factors.map(\.name) == ["Phone"] && step.factorID == enrollment.id)
        #expect(step.prompt == "Enter the code from your authenticator app." && form.errorMessage == nil)
        let wrong = flow.wrong(try await flow.code(enrollment.totp.secret))

        // Wrong codes: the server's words and the tries left.
        step.code = String(wrong.prefix(3)) + " " + String(wrong.suffix(3))
        #expect(step.isVerifyEnabled)
        #expect(await step.verify() == false)
        #expect(step.errorMessage == "That code is not right. Check your authenticator app and try again.")
        #expect(step.attemptsLeft == 2 && step.attemptsLeftMessage == "2 goes left." && step.outcome == nil && step.code.isEmpty)
        step.code = wrong
        #expect(await step.verify() == false)
        #expect(step.attemptsLeft == 1 && step.attemptsLeftMessage == "1 try left.")
        // The last try: the step ends, back at the form with the words, signed out.
        step.code = wrong
        #expect(await step.verify() == false)
        #expect(step.outcome == .ended("That code is not right. Check your authenticator app and try again."))
        #expect(form.secondFactor == nil && form.errorMessage == "That code is not right. Check your authenticator app and try again.")
        let (endedState, stillPending) = (await app.state, await app.pendingSecondFactor)
        #expect(endedState == .signedOut(nil) && stillPending == nil)
        #expect(form.password.isEmpty && !step.isVerifyEnabled)

        // A new sign-in starts at once. A recovery code that is not one: its own words.
        form.password = "correct horse battery"
        #expect(await form.submit() == false)
        let again = try #require(form.secondFactor)
        again.usesRecoveryCode = true
        #expect(again.prompt == "Enter one of the recovery codes you saved." && again.codeLabel == "Recovery code")
        again.code = "aaaa-bbbb-cccc-dddd"
        #expect(await again.verify() == false)
        #expect(again.errorMessage == "That recovery code is not right, or it was used already. Check it and try again.")
        #expect(again.attemptsLeft == 2)
        again.code = recoveryCodes[0]
        #expect(await again.verify() == true)
        guard case .signedIn(let user)? = again.outcome else {
            Issue.record("the step ended with \(String(describing: again.outcome))")
            return
        }
        let signedInID = await app.state.user?.id
        #expect(user.email == "steps@example.com" && signedInID == user.id && form.secondFactor == nil)
        try await app.signOut()

        // A used recovery code is refused in its own words too (and, like any recovery code,
        // not counted on the account's lockout); two wrong codes end this step.
        form.password = "correct horse battery"
        #expect(await form.submit() == false)
        let third = try #require(form.secondFactor)
        third.usesRecoveryCode = true
        third.code = recoveryCodes[0]
        #expect(await third.verify() == false)
        #expect(third.errorMessage == "That recovery code is not right, or it was used already. Check it and try again.")
        third.usesRecoveryCode = false
        for _ in 0..<2 {
            third.code = wrong
            _ = await third.verify()
        }
        #expect(third.outcome == .ended("That code is not right. Check your authenticator app and try again."))

        // Those were the account's fifth wrong code (three before the recovery code, which does
        // not clear them, and two now): it is locked. The step shows the wait's end, keeps its
        // tries, and goes on after the wait.
        form.password = "correct horse battery"
        #expect(await form.submit() == false)
        let locked = try #require(form.secondFactor)
        locked.code = try await flow.code(enrollment.totp.secret)
        #expect(await locked.verify() == false)
        #expect(locked.isLocked && locked.lockedUntil == clock.now.addingTimeInterval(30) && !locked.isVerifyEnabled)
        #expect(locked.errorMessage == "Too many wrong codes. Please wait, then try again." && locked.outcome == nil)
        #expect(locked.attemptsLeft == nil)
        clock.advance(by: 31)
        #expect(!locked.isLocked)
        locked.code = try await flow.code(enrollment.totp.secret)
        #expect(await locked.verify() == true)
        let finalEmail = await app.state.user?.email
        #expect(finalEmail == "steps@example.com")
    }

    /// Issue 41: the deletion screen of a preset that asks for a second factor before deleting:
    /// a session older than the account's authenticator app is refused with `mfa_required`, the
    /// model hands over a step-up prompt, and once it is complete the deletion goes through.
    @Test func theDeletionModelStepsUpWhenThePresetAsksForASecondFactor() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(
            .sqlite, clock: clock, setup: .live,
            adjust: {
                Self.configure(&$0)
                $0.preset.entitlements.actions["account.delete"] = ActionSettings(rules: [GateRule(kind: .mfa)])
            }
        ) { server, _ in
            try await Self.deletionStepUp(server, clock)
        }
    }

    @MainActor static func deletionStepUp(_ server: any TestClientProtocol, _ clock: ManualClock) async throws {
        let flow = MFAFlow(api: AuthClient(client: server), clock: clock)
        let port = try #require(server.port)
        let (phone, tablet) = (try TestDevice(), try TestDevice())
        defer { phone.remove(); tablet.remove() }
        let app = try phone.launch(port: port)
        let other = try tablet.launch(port: port)
        try await app.signUp(email: "leaving.mfa@example.com", password: "correct horse battery")
        try await other.signIn(email: "leaving.mfa@example.com", password: "correct horse battery")
        let enrollment = try await app.enrollTOTP(name: "Phone")
        _ = try await app.confirmFactor(id: enrollment.id, code: try await flow.code(enrollment.totp.secret))
        clock.advance(by: 30)

        let deletion = AccountDeletionModel(client: other)
        #expect(await deletion.delete() == false)
        let prompt = try #require(deletion.stepUp)
        #expect(deletion.route == .stepUp && !deletion.canDelete && prompt.route == .code && prompt.factors.map(\.name) == ["Phone"])
        prompt.code = try await flow.code(enrollment.totp.secret)
        #expect(await prompt.verify())
        #expect(deletion.canDelete)
        #expect(await deletion.delete())
        let ended = await other.state
        #expect(deletion.route == .deleted && ended == .signedOut(.accountDeleted))
    }

    @MainActor static func stepUpPrompts(_ server: any TestClientProtocol, _ clock: ManualClock) async throws {
        let flow = MFAFlow(api: AuthClient(client: server), clock: clock)
        let port = try #require(server.port)
        let (phone, tablet, laptop) = (try TestDevice(), try TestDevice(), try TestDevice())
        defer { phone.remove(); tablet.remove(); laptop.remove() }
        let app = try phone.launch(port: port)
        let other = try tablet.launch(port: port)
        try await app.signUp(email: "prompt@example.com", password: "correct horse battery")
        try await other.signIn(email: "prompt@example.com", password: "correct horse battery")

        // No authenticator app yet: the prompt sends the person to set one up.
        let first = try await app.decide("view_records")
        #expect(!first.allowed && first.reasonCode == "mfa_required")
        let setUp = try #require(StepUpPrompt(client: app, decision: first))
        await setUp.load()
        #expect(setUp.route == .enrollFactor && setUp.message == "Confirm with your app to see your records.")
        #expect(setUp.title == "Quick check" && setUp.guidance == "Set up an authenticator app to continue.")
        // Confirming the first factor raises this session; the device's tokens say so at once.
        let enrollment = try await app.enrollTOTP(name: "Phone")
        _ = try await app.confirmFactor(id: enrollment.id, code: try await flow.code(enrollment.totp.secret))
        #expect(await app.assurance?.level == .aal2)
        #expect(try await app.decide("view_records").allowed)

        // The tablet's session predates the factor. A call it may not make gives a prompt;
        // other refusals, and allowed decisions, do not.
        clock.advance(by: 30)
        let listing = await #expect(throws: GatehouseClientError.self) { try await other.mfaFactors() }
        let listingError = try #require(listing)
        let fromCall = try #require(StepUpPrompt(client: other, error: listingError))
        #expect(fromCall.reason == .secondFactor && fromCall.message == "Confirm it's you with your authenticator app to continue.")
        let wrongCode = await #expect(throws: GatehouseClientError.self) { try await other.stepUp(factorID: enrollment.id, code: "000000") }
        let wrongError = try #require(wrongCode)
        #expect(wrongError.code == .invalidCode && StepUpPrompt(client: other, error: wrongError) == nil)
        #expect(StepUpPrompt(client: app, decision: try await app.decide("view_records")) == nil)
        // Refused on the device, then the prompt.
        let refused = try await other.decide("view_records")
        #expect(!refused.allowed && refused.gate == "step_up")
        #expect(try await other.check("view_records").reasonCode == "mfa_required")
        let prompt = try #require(StepUpPrompt(client: other, decision: refused))
        #expect(prompt.reason == .secondFactor && prompt.route == .loading && !prompt.isVerifyEnabled)
        await prompt.load()
        #expect(prompt.route == .code && prompt.factors.map(\.name) == ["Phone"] && prompt.factorID == enrollment.id)
        #expect(prompt.title == "Quick check" && prompt.codeLabel == "6-digit code" && prompt.verifyLabel == "Verify")
        prompt.code = "12 34"
        #expect(!prompt.isVerifyEnabled)
        prompt.code = flow.wrong(try await flow.code(enrollment.totp.secret))
        #expect(await prompt.verify() == false)
        #expect(prompt.errorMessage == "That code is not right. Check your authenticator app and try again." && prompt.code.isEmpty)
        let right = try await flow.code(enrollment.totp.secret)
        prompt.code = String(right.prefix(3)) + " " + String(right.suffix(3))
        #expect(await prompt.verify() && prompt.isComplete && prompt.errorMessage == nil)
        #expect(await other.assurance?.level == .aal2)
        #expect(try await other.decide("view_records").allowed)
        #expect(try await other.check("view_records").allowed)

        // Ten minutes on, an action wanting a sign-in within five: a code answers it too.
        clock.advance(by: 600)
        tablet.clock.advance(by: 600)
        let stale = try await other.decide("edit_plan")
        #expect(!stale.allowed && stale.reasonCode == "reauthentication_required")
        let again = try #require(StepUpPrompt(client: other, decision: stale))
        await again.load()
        #expect(again.reason == .recentSignIn && again.route == .code)
        again.code = try await flow.code(enrollment.totp.secret)
        #expect(await again.verify())
        #expect(try await other.decide("edit_plan").allowed)

        // An account without an authenticator app, signed in long ago: sign in again.
        laptop.clock.advance(by: clock.now.timeIntervalSince(laptop.clock.now()))  // the laptop keeps the server's time
        let plain = try laptop.launch(port: port)
        try await plain.signUp(email: "plain@example.com", password: "correct horse battery")
        clock.advance(by: 600)
        laptop.clock.advance(by: 600)
        let old = try #require(StepUpPrompt(client: plain, decision: try await plain.decide("edit_plan")))
        await old.load()
        #expect(old.route == .signInAgain && old.guidance == "Sign out, then sign in again to continue.")
    }

    /// Removing a factor needs aal2; support can list and remove a user's factors, audited and
    /// mailed, after which sign-in asks for no second factor.
    @Test func supportRemovesALostFactor() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, clock: clock, setup: .live, adjust: Self.configure) { client, _ in
            let flow = MFAFlow(api: AuthClient(client: client), clock: clock)
            let (factor, _, user) = try await flow.enrolledAccount("lost.phone@example.com")
            let listed = try await flow.api.client.execute(
                uri: "/admin/v1/users/\(user)/mfa/factors", method: .get, headers: TestApp.adminHeaders)
            let factors = try listed.json(MFAFactorsResponse.self).factors
            #expect(factors.map(\.id) == [factor] && !listed.text.contains("secret"))
            let removed = try await flow.api.client.execute(
                uri: "/admin/v1/users/\(user)/mfa/factors/\(factor)", method: .delete, headers: TestApp.adminHeaders)
            #expect(removed.status == .noContent)
            #expect(try await flow.api.login("lost.phone@example.com").json(SignInAnswer<AuthResponse>.self).signedIn != nil)
            let audit = try await flow.api.client.execute(uri: "/admin/v1/audit?limit=500", method: .get, headers: TestApp.adminHeaders)
            #expect(audit.text.contains(#""by":"operator""#), "\(audit.text)")
        }
    }

    /// Issue 42: every operator call names an account the same way (`UserReference`): by id or
    /// by address. Support's second-factor calls took an id only, so an address was a 404.
    @Test func supportNamesTheAccountByItsAddressToo() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, clock: clock, setup: .live, adjust: Self.configure) { client, _ in
            let flow = MFAFlow(api: AuthClient(client: client), clock: clock)
            let (factor, _, _) = try await flow.enrolledAccount("Lost.Address@example.com")
            let address = "lost.address@EXAMPLE.com"
            let listed = try await flow.api.client.execute(
                uri: "/admin/v1/users/\(address)/mfa/factors", method: .get, headers: TestApp.adminHeaders)
            #expect(listed.status == .ok)
            #expect(try listed.json(MFAFactorsResponse.self).factors.map(\.id) == [factor])
            let unknown = try await flow.api.client.execute(
                uri: "/admin/v1/users/nobody@example.com/mfa/factors", method: .get, headers: TestApp.adminHeaders)
            #expect(unknown.status == .notFound)
            let removed = try await flow.api.client.execute(
                uri: "/admin/v1/users/\(address)/mfa/factors/\(factor)", method: .delete, headers: TestApp.adminHeaders)
            #expect(removed.status == .noContent)
            #expect(try await flow.api.login("lost.address@example.com").json(SignInAnswer<AuthResponse>.self).signedIn != nil)
        }
    }
}

/// The calls of the tests above, with pyotp as the authenticator app.
struct MFAFlow {
    let api: AuthClient
    let clock: ManualClock

    /// Asked once per run: four suites' conditions read it.
    static let hasPyJWT: Bool = {
        guard let python = SMTPSink.python else { return false }
        let process = Spawned()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", "import jwt"]
        do {
            try process.run()
            // Blocks its thread: once a run, and only `import jwt`.
            process.waitUntilExit()
            return process.terminationStatus == 0
        } catch {
            return false
        }
    }()

    static func python(_ program: String, _ arguments: [String]) async throws -> String {
        try await Command.run(try #require(SMTPSink.python), ["-c", program] + arguments).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// pyotp's code for `secret` at the clock's time, `steps` periods away.
    func code(_ secret: String, steps: Int = 0) async throws -> String {
        let time = Int64(clock.now.timeIntervalSince1970) + Int64(steps) * 30
        return try await Self.python("import sys, pyotp; print(pyotp.TOTP(sys.argv[1]).at(int(sys.argv[2])))", [secret, String(time)])
    }

    /// A six-digit code that is not `code`.
    func wrong(_ code: String) -> String {
        String(format: "%06d", ((Int(code) ?? 0) + 500_000) % 1_000_000)
    }

    /// The access token's claims as PyJWT reads them, checked with the server's published key.
    func claims(_ token: String) async throws -> [String: Any] {
        let jwks = try await api.client.execute(uri: "/.well-known/jwks.json", method: .get).text
        let program = """
            import sys, json, jwt
            keys = json.loads(sys.argv[1])["keys"]
            kid = jwt.get_unverified_header(sys.argv[2])["kid"]
            key = jwt.PyJWK(next(k for k in keys if k["kid"] == kid)).key
            print(json.dumps(jwt.decode(sys.argv[2], key, algorithms=["ES256"], options={"verify_aud": False, "verify_exp": False, "verify_iat": False, "verify_nbf": False})))
            """
        let text = try await Self.python(program, [jwks, token])
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    func enroll(_ token: String, name: String? = nil) async throws -> MFAEnrollment {
        let body = name.map { #"{"type": "totp", "name": "\#($0)"}"# } ?? #"{"type": "totp"}"#
        let response = try await api.post("/v1/mfa/factors", body, token: token)
        #expect(response.status == .created, "\(response.text)")
        return try response.json(MFAEnrollment.self)
    }

    /// A new account with a confirmed TOTP factor: the factor's id, its base32 secret, the user id.
    func enrolledAccount(_ email: String) async throws -> (factor: String, secret: String, user: String) {
        let account = try await api.account(email)
        let enrolled = try await enroll(account.session.accessToken)
        try await confirm(enrolled, token: account.session.accessToken)
        return (enrolled.id, enrolled.totp.secret, account.user.id)
    }

    func confirm(_ enrolled: MFAEnrollment, token: String) async throws {
        let confirmed = try await api.post(
            "/v1/mfa/factors/\(enrolled.id)/confirm", #"{"code": "\#(try await code(enrolled.totp.secret))"}"#, token: token)
        #expect(confirmed.status == .ok, "\(confirmed.text)")
    }

    /// A password sign-in's challenge id.
    func challenge(_ email: String) async throws -> String {
        let login = try await api.login(email)
        #expect(login.status == .ok, "\(login.text)")
        return try #require(try login.json(SignInAnswer<AuthResponse>.self).challenge).challengeID
    }

    func verify(_ challenge: String, factor: String, code: String) async throws -> TestResponse {
        try await api.post("/v1/auth/mfa/verify", #"{"challenge_id": "\#(challenge)", "factor_id": "\#(factor)", "code": "\#(code)"}"#)
    }

    func verify(_ challenge: String, recoveryCode: String) async throws -> TestResponse {
        try await api.post("/v1/auth/mfa/verify", #"{"challenge_id": "\#(challenge)", "recovery_code": "\#(recoveryCode)"}"#)
    }
}
