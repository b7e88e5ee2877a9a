import Foundation
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

/// Issue 39's seven findings, each reproduced through HTTP on both databases (each failed on
/// the code before the fix), and the bursts released on their last byte: factor confirmation,
/// recovery-code regeneration, the second factor's lockout.
@Suite(.requires(
    SoftAuthenticator.isAvailable && OneTimeCodeTools.available && MFAFlow.hasPyJWT,
    "GATEHOUSE_TEST_PYTHON with soft-webauthn, webauthn, pyotp and PyJWT; oathtool, zbarimg, rsvg-convert"))
struct WaysInFindingsTests {
    static func run(
        _ backend: Backend, adjust: @escaping @Sendable (inout GatehouseConfig) -> Void = { _ in },
        _ body: @escaping @Sendable (MFAFlow, GatehouseConfig, any TestClientProtocol) async throws -> Void
    ) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, clock: clock, setup: .live, adjust: { WaysInTests.configure(&$0); adjust(&$0) }) { client, config in
            try await body(MFAFlow(api: AuthClient(client: client), clock: clock), config, client)
        }
    }

    /// The owner's magic link: the session it opens (never a challenge).
    static func magicLink(_ api: AuthClient, _ email: String, _ config: GatehouseConfig) async throws -> SignInResponse {
        #expect(try await api.post("/v1/auth/magic-link", #"{"email": "\#(email)"}"#).status == .accepted)
        let mail = ReceivedMail(text: try await EmailFlowTests.outboxMail(config, kind: "magic_link").textBody ?? "")
        let verified = try await api.post("/v1/auth/magic-link/verify", #"{"email": "\#(email)", "code": "\#(try EmailFlowTests.code(in: mail))"}"#)
        return try #require(try verified.json(SignInAnswer<SignInResponse>.self).signedIn, "\(verified.text)")
    }

    /// An account with a confirmed factor: the factor, its secret, the recovery codes, and an
    /// `aal2` session (the confirming session refreshed).
    static func protected(
        _ flow: MFAFlow, _ email: String
    ) async throws -> (factor: String, secret: String, codes: [String], session: SessionPayload, user: String) {
        let account = try await flow.api.account(email)
        let enrolled = try await flow.enroll(account.session.accessToken)
        let confirmed = try await flow.api.post(
            "/v1/mfa/factors/\(enrolled.id)/confirm", #"{"code": "\#(try await flow.code(enrolled.totp.secret))"}"#,
            token: account.session.accessToken)
        #expect(confirmed.status == .ok, "\(confirmed.text)")
        let codes = try #require(try confirmed.json(MFAConfirmResponse.self).recoveryCodes)
        let raised = try await flow.api.refresh(account.session.refreshToken).json(SessionResponse.self).session
        return (enrolled.id, enrolled.totp.secret, codes, raised, account.user.id)
    }

    /// Finding 1: a passkey sign-up with the owner's address, then the owner's magic link: the
    /// passkey no longer signs in (before: it signed in to the owner's verified account).
    @Test(arguments: Backend.available)
    func aPasskeyMadeBeforeTheProofEndsWithIt(_ backend: Backend) async throws {
        try await Self.run(backend) { flow, config, client in
            let passkeys = PasskeyTests.Flow(api: flow.api, device: try SoftAuthenticator())
            let squatted = try await passkeys.signUp("squatter", email: "victim@example.com")
            #expect(!squatted.user.emailVerified)
            #expect(try await passkeys.signIn("squatter").status == .ok)
            let owner = try await Self.magicLink(flow.api, "victim@example.com", config)
            #expect(owner.user.id == squatted.user.id && owner.user.emailVerified)
            let after = try await passkeys.signIn("squatter")
            #expect(after.status == .unauthorized, "\(after.text)")
            #expect(try await flow.api.get("/v1/passkeys", token: owner.session.accessToken).json(PasskeysResponse.self).passkeys.isEmpty)
        }
    }

    /// Finding 2: a TOTP factor and recovery codes made before the proof: the owner's sign-in is
    /// not asked for them (before: the owner was locked out behind the squatter's factor), and
    /// neither completes anything afterwards.
    @Test(arguments: Backend.available)
    func aSecondFactorMadeBeforeTheProofEndsWithIt(_ backend: Backend) async throws {
        try await Self.run(backend) { flow, config, _ in
            let squatter = try await Self.protected(flow, "victim@example.com")
            flow.clock.advance(by: 61)
            let owner = try await Self.magicLink(flow.api, "victim@example.com", config)
            let claims = try jwtParts(owner.session.accessToken).claims
            #expect(claims["aal"] as? String == "aal1")
            #expect(try await flow.api.get("/v1/mfa/factors", token: owner.session.accessToken).json(MFAFactorsResponse.self).factors.isEmpty)
            let recovery = try await flow.api.post(
                "/v1/auth/mfa/verify", #"{"recovery_code": "\#(squatter.codes[0])"}"#, token: owner.session.accessToken)
            #expect(recovery.error?.code == .invalidCode, "\(recovery.text)")
            #expect(try await flow.api.refresh(squatter.session.refreshToken).status == .unauthorized)
        }
    }

    /// Finding 3: a factor planted by a session and left unconfirmed cannot lift that session
    /// later: confirming needs `aal2` once the owner has a factor, a recent sign-in, and a
    /// factor younger than ten minutes; and confirming never winds the recent-sign-in clock on.
    @Test(arguments: Backend.available)
    func aDormantFactorCannotLiftAStolenSession(_ backend: Backend) async throws {
        try await Self.run(backend) { flow, _, _ in
            let api = flow.api
            let account = try await api.account("dormant@example.com")
            let stolen = try await api.login("dormant@example.com").json(AuthResponse.self).session
            let dormant = try await flow.enroll(stolen.accessToken)
            // The owner adds and confirms a factor of their own.
            flow.clock.advance(by: 60)
            try await flow.confirm(try await flow.enroll(account.session.accessToken), token: account.session.accessToken)
            flow.clock.advance(by: 30)
            let code = try await flow.code(dormant.totp.secret)
            let confirm = try await api.post("/v1/mfa/factors/\(dormant.id)/confirm", #"{"code": "\#(code)"}"#, token: stolen.accessToken)
            #expect(confirm.status == .forbidden && confirm.error?.code == .mfaRequired, "\(confirm.text)")
            let goTrueChallenge = try await api.post(
                "/auth/v1/factors/\(dormant.id)/challenge", "{}", token: stolen.accessToken, headers: WaysInTests.apikey)
            let challengeID = try #require(
                (try JSONSerialization.jsonObject(with: Data(goTrueChallenge.body.readableBytesView)) as? [String: Any])?["id"] as? String,
                "\(goTrueChallenge.text)")
            let goTrue = try await api.post(
                "/auth/v1/factors/\(dormant.id)/verify", #"{"challenge_id": "\#(challengeID)", "code": "\#(code)"}"#,
                token: stolen.accessToken, headers: WaysInTests.apikey)
            #expect(goTrue.status == .forbidden, "\(goTrue.text)")
            #expect(try await api.get("/v1/mfa/factors", token: stolen.accessToken).error?.code == .mfaRequired)

            // No owner factor, but the stolen session is no longer recent.
            let second = try await api.account("dormant2@example.com")
            let planted = try await flow.enroll(second.session.accessToken)
            flow.clock.advance(by: 6 * 60)
            let late = try await api.post(
                "/v1/mfa/factors/\(planted.id)/confirm", #"{"code": "\#(try await flow.code(planted.totp.secret))"}"#,
                token: second.session.accessToken)
            #expect(late.status == .forbidden && late.error?.code == .reauthenticationRequired, "\(late.text)")
            // Past ten minutes the factor is gone, even for a fresh sign-in.
            flow.clock.advance(by: 5 * 60)
            let fresh = try await api.login("dormant2@example.com").json(AuthResponse.self).session
            let expired = try await api.post(
                "/v1/mfa/factors/\(planted.id)/confirm", #"{"code": "\#(try await flow.code(planted.totp.secret))"}"#, token: fresh.accessToken)
            #expect(expired.status == .notFound, "\(expired.text)")

            // Confirming four minutes after sign-in does not make the session recent two minutes later.
            let third = try await api.account("dormant3@example.com")
            flow.clock.advance(by: 4 * 60)
            try await flow.confirm(try await flow.enroll(third.session.accessToken), token: third.session.accessToken)
            flow.clock.advance(by: 2 * 60)
            let raised = try await api.refresh(third.session.refreshToken).json(SessionResponse.self).session
            #expect(try jwtParts(raised.accessToken).claims["aal"] as? String == "aal2")
            let passkey = try await api.post("/v1/passkeys/registration/options", "{}", token: raised.accessToken)
            #expect(passkey.status == .forbidden && passkey.error?.code == .reauthenticationRequired, "\(passkey.text)")
        }
    }

    /// Finding 4: five wrong codes after the password lock the password's challenges, but the
    /// owner's recovery code is never refused by that lock, and a challenge after the owner's
    /// magic link is counted apart (before: both answered 429).
    @Test(arguments: Backend.available)
    func theSecondFactorLockoutCannotShutTheOwnerOut(_ backend: Backend) async throws {
        try await Self.run(backend) { flow, config, _ in
            let owner = try await Self.protected(flow, "locked@example.com")
            // The owner's own address, proved long ago (a first proof would end the factor).
            try await TestApp.withStore(config) { store in
                _ = try await store.markEmailVerified(UserID(owner.user)!, normalizedEmail: "locked@example.com", at: Date())
            }
            flow.clock.advance(by: 31)
            var answers: [HTTPResponse.Status] = []
            for _ in 0..<6 {
                let challenge = try await flow.challenge("locked@example.com")
                answers.append(try await flow.verify(challenge, factor: owner.factor, code: flow.wrong(try await flow.code(owner.secret))).status)
            }
            #expect(answers == Array(repeating: .badRequest, count: 5) + [.tooManyRequests], "\(answers)")
            let locked = try await flow.verify(try await flow.challenge("locked@example.com"), factor: owner.factor, code: try await flow.code(owner.secret))
            #expect(locked.status == .tooManyRequests)
            // The recovery code passes the lock.
            let recovered = try await flow.verify(try await flow.challenge("locked@example.com"), recoveryCode: owner.codes[0])
            #expect(recovered.status == .ok, "\(recovered.text)")
            // The owner's magic link, then the right code: a lock of its own, not the password's.
            #expect(try await flow.api.post("/v1/auth/magic-link", #"{"email": "locked@example.com"}"#).status == .accepted)
            let mail = ReceivedMail(text: try await EmailFlowTests.outboxMail(config, kind: "magic_link").textBody ?? "")
            let linked = try await flow.api.post(
                "/v1/auth/magic-link/verify", #"{"email": "locked@example.com", "code": "\#(try EmailFlowTests.code(in: mail))"}"#)
            let challenge = try #require(try linked.json(SignInAnswer<SignInResponse>.self).challenge, "\(linked.text)")
            flow.clock.advance(by: 30)
            let verified = try await flow.verify(challenge.challengeID, factor: owner.factor, code: try await flow.code(owner.secret))
            #expect(verified.status == .ok, "\(verified.text)")
        }
    }

    /// Finding 5: an access token minted before a step-up is judged as it claims (`aal1`) by the
    /// server, as by the verifier, with the same refusal code; removing the last factor lowers
    /// the session (before: the server let the old token through, and the session kept `aal2`).
    @Test(arguments: Backend.available)
    func assuranceIsWhatTheTokenAndTheFactorsSay(_ backend: Backend) async throws {
        try await Self.run(backend, adjust: {
            $0.preset.entitlements.actions["account.export"] = ActionSettings(rules: [GateRule(kind: .mfa)])
        }) { flow, config, client in
            // A session's token from before the factor existed; the session steps up later.
            let fresh = try await flow.api.account("stale@example.com")
            let enrolled = try await flow.enroll(fresh.session.accessToken)
            try await flow.confirm(enrolled, token: fresh.session.accessToken)
            let oldToken = fresh.session.accessToken
            #expect(try jwtParts(oldToken).claims["aal"] as? String == "aal1")
            flow.clock.advance(by: 31)
            let stepUp = try await flow.api.post(
                "/v1/auth/mfa/verify", #"{"factor_id": "\#(enrolled.id)", "code": "\#(try await flow.code(enrolled.totp.secret))"}"#,
                token: oldToken)
            #expect(stepUp.status == .ok, "\(stepUp.text)")
            let raised = try stepUp.json(MFAVerifyResponse.self).session
            let refused = try await flow.api.get("/v1/me/export", token: oldToken)
            #expect(refused.status == .forbidden && refused.error?.code == .mfaRequired, "\(refused.text)")
            #expect(try await flow.api.get("/v1/me/export", token: raised.accessToken).status == .ok)
            // The verifier decides the same token the same way, with the same code.
            let port = try #require(client.port)
            let access = GatehouseAccess(baseURL: URL(string: "http://127.0.0.1:\(port)")!, audience: config.audience, issuer: config.issuer, clock: flow.clock)
            let decision = try await access.decide("account.export", for: try await access.tokens.verify(oldToken))
            #expect(!decision.allowed && decision.refusalCode == refused.error?.code)

            // The last factor removed: the session drops to aal1 (its next token says so).
            let removed = try await flow.api.client.execute(
                uri: "/v1/mfa/factors/\(enrolled.id)", method: .delete, headers: [.authorization: "Bearer \(raised.accessToken)"])
            #expect(removed.status == .noContent, "\(removed.text)")
            let lowered = try await flow.api.refresh(raised.refreshToken).json(SessionResponse.self).session
            let claims = try jwtParts(lowered.accessToken).claims
            #expect(claims["aal"] as? String == "aal1")
            #expect((claims["amr"] as? [[String: Any]])?.compactMap { $0["method"] as? String } == ["password"])
        }
    }

    /// Finding 6: imports take the one canonical form of an address: a fullwidth look-alike is
    /// refused by its row, and the real address's owner can sign up (before: stored as typed,
    /// and the owner's sign-up answered 409).
    @Test(arguments: Backend.available)
    func importsRefuseLookAlikeAddresses(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, _ in
            let api = AuthClient(client: client)
            let firebase = try await api.post(
                Endpoints.adminImportFirebase.path.template, #"{"users": [{"localId": "fw1", "email": "ｆｗ@example.com"}]}"#,
                token: TestApp.adminKey)
            let firebaseReport = try firebase.json(ImportReport.self)
            #expect(firebaseReport.imported == 0 && firebaseReport.refused.map(\.row) == [1], "\(firebase.text)")
            #expect(firebaseReport.refused.first?.reason.contains("canonical") == true)
            let supabase = try await api.post(
                Endpoints.adminImportSupabase.path.template,
                #"{"users": [{"id": "7b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f68", "email": "ｆｗ@example.com"}]}"#, token: TestApp.adminKey)
            let supabaseReport = try supabase.json(ImportReport.self)
            #expect(supabaseReport.imported == 0 && supabaseReport.refused.count == 1, "\(supabase.text)")
            #expect(try await api.signup("fw@example.com").status == .created)
        }
    }

    /// Finding 7: the decoy credential id for an address without passkeys is one id as long as a
    /// real one (before: 20 bytes against the authenticator's 32).
    @Test(arguments: Backend.available)
    func decoyCredentialIDsLookLikeRealOnes(_ backend: Backend) async throws {
        try await Self.run(backend) { flow, _, _ in
            let passkeys = PasskeyTests.Flow(api: flow.api, device: try SoftAuthenticator())
            _ = try await passkeys.signUp("phone", email: "real@example.com")
            let real = try await passkeys.signInOptions(email: "real@example.com").options.allowCredentials
            let decoy = try await passkeys.signInOptions(email: "nobody@example.com").options.allowCredentials
            #expect(real.count == 1 && decoy.count == 1)
            #expect(Data(base64URLEncoded: decoy[0].id)?.count == Data(base64URLEncoded: real[0].id)?.count)
            #expect(decoy[0].transports == real[0].transports)
        }
    }

    // MARK: Bursts

    /// Thirty confirmations of one factor with its right code, released together: one confirms.
    @Test(arguments: Backend.available)
    func thirtyConfirmationsOfOneFactorConfirmItOnce(_ backend: Backend) async throws {
        try await Self.run(backend) { flow, _, client in
            let account = try await flow.api.account("confirm.race@example.com")
            let enrolled = try await flow.enroll(account.session.accessToken)
            let request = LastByteRace.request(
                "POST", "/v1/mfa/factors/\(enrolled.id)/confirm", json: #"{"code": "\#(try await flow.code(enrolled.totp.secret))"}"#,
                headers: ["Authorization": "Bearer \(account.session.accessToken)"])
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(client.port), request, copies: 30) }
            #expect(answers.filter { $0.status == 200 }.count == 1, "\(answers.map(\.status))")
            // One that reads the factor after the winner confirmed it meets an account with a
            // confirmed factor: its aal1 session is asked to step up (403 `mfa_required`).
            #expect(
                answers.allSatisfy { [200, 400, 429].contains($0.status) || ($0.status == 403 && $0.error?.code == .mfaRequired) },
                "\(answers.map(\.status))")
        }
    }

    /// Thirty regenerations of the recovery codes released together: one set is made (the
    /// documented one a minute), the rest 429, and that set is the one that works.
    @Test(arguments: Backend.available)
    func regeneratingRecoveryCodesTogetherMakesOneSet(_ backend: Backend) async throws {
        try await Self.run(backend) { flow, _, client in
            let owner = try await Self.protected(flow, "codes.race@example.com")
            let request = LastByteRace.request(
                "POST", "/v1/mfa/recovery-codes", json: "", headers: ["Authorization": "Bearer \(owner.session.accessToken)"])
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(client.port), request, copies: 30) }
            let statuses = answers.map(\.status)
            #expect(statuses.count { $0 == 200 } == 1 && statuses.count { $0 == 429 } == 29, "\(statuses)")
            let made = answers.filter { $0.status == 200 }
            let codes = try #require(try made.first.map { try JSONDecoder().decode(RecoveryCodesResponse.self, from: $0.body) }).recoveryCodes
            flow.clock.advance(by: 31)
            #expect(try await flow.verify(try await flow.challenge("codes.race@example.com"), recoveryCode: codes[0]).status == .ok)
            let old = try await flow.verify(try await flow.challenge("codes.race@example.com"), recoveryCode: owner.codes[0])
            #expect(old.error?.code == .invalidCode)
        }
    }

    /// Thirty wrong codes released together against one account: exactly the lockout's five are
    /// checked, the other 25 answer 429 (`Retry-After`), and the owner's recovery code still works.
    @Test(arguments: Backend.available)
    func thirtyWrongCodesTogetherAreCountedExactly(_ backend: Backend) async throws {
        try await Self.run(backend) { flow, _, client in
            let owner = try await Self.protected(flow, "lock.race@example.com")
            let wrong = flow.wrong(try await flow.code(owner.secret))
            let request = LastByteRace.request(
                "POST", "/v1/auth/mfa/verify", json: #"{"factor_id": "\#(owner.factor)", "code": "\#(wrong)"}"#,
                headers: ["Authorization": "Bearer \(owner.session.accessToken)"])
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(client.port), request, copies: 30) }
            let threshold = ThrottlingSettings().loginFailuresBeforeLockout
            let statuses = answers.map(\.status)
            let codes = answers.map { $0.error?.code }
            #expect(statuses.count { $0 == 400 } == threshold && codes.count { $0 == .invalidCode } == threshold, "\(statuses)")
            #expect(statuses.count { $0 == 429 } == 30 - threshold && codes.count { $0 == .tooManyAttempts } == 30 - threshold, "\(statuses)")
            let waits = answers.map { $0.headers["retry-after"] }
            #expect(waits.count { $0 != nil } == 30 - threshold, "\(waits)")
            #expect(try await flow.verify(try await flow.challenge("lock.race@example.com"), recoveryCode: owner.codes[0]).status == .ok)
        }
    }
}
