import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Issue 60: one issuer for every session. Every door of `SessionDoor` is walked through the
/// running server, and the session it opened must carry that door, which only `SessionIssuer`
/// records: a door that wrote its session row beside the issuer leaves it without one and
/// fails here (and `structure-check.py one-issuer` names the line). A new case does not compile
/// until the walk has a step for it. The walk runs with `BEFORE_SIGN_IN` and
/// `CUSTOM_ACCESS_TOKEN` set (issue 63): every door's session must have been asked about, with
/// its door and account, and every door that gives the app tokens must have asked for their
/// claims, which only the issuer's admission check (`SignInAdmission`) makes sure of.
@Suite(.requires(
    SoftAuthenticator.isAvailable && OneTimeCodeTools.available && MFAFlow.hasPyJWT && SMSReceiver.python != nil,
    "GATEHOUSE_TEST_PYTHON with soft-webauthn, webauthn, pyotp, PyJWT and standardwebhooks; oathtool, zbarimg, rsvg-convert"))
struct SessionDoorTests {
    static func configure(_ config: inout GatehouseConfig) {
        PasskeyTests.configure(&config)
        MFATests.configure(&config)
        PhoneTests.roomy(&config)
        SupabaseCompatTests.withBothKeys(&config)
        config.preset.signInMethods.emailPassword = true
        config.preset.signInMethods.magicLink = true
        config.preset.signInMethods.anonymous = true
        config.preset.signInMethods.apple = true
        config.preset.signInMethods.passkey = true
        config.preset.signInMethods.phone = true
        config.preset.verification.sendOnSignup = true
    }

    @Test(arguments: Backend.available)
    func everyDoorOpensItsSessionThroughTheIssuer(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        let receiver = try await HookReceiver()
        defer { receiver.stop() }
        try receiver.plan(["by_path": ["/claims": ["body": ["claims": ["walked": true]]]]])
        let hooked: @Sendable (inout GatehouseConfig) -> Void = { config in
            Self.configure(&config)
            config.hooks[.beforeSignIn] = HookEndpoint(url: URL(string: receiver.url("/sign-in"))!, secret: receiver.secret, failOpen: false, format: .gatehouse)
            config.hooks[.customAccessToken] = HookEndpoint(
                url: URL(string: receiver.url("/claims"))!, secret: receiver.secret, failOpen: false, format: .gatehouse)
        }
        try await ProviderSignInTests.run(backend, preset: "hannah", clock: clock, setup: .live, adjust: hooked) { api, apple, _, config in
            let client = api.client
            var walked: Set<SessionDoor> = []
            for door in SessionDoor.allCases {
                // The account the door signed in, and the session it opened.
                let account: String
                switch door {
                case .signUp:
                    account = try await api.account("door-signup@example.com").user.id
                case .password:
                    account = try await api.account("door-password@example.com").user.id
                    #expect(try await api.login("door-password@example.com").status == .ok)
                case .magicLink:
                    account = try Self.subject(try await PhoneTests.magicSignIn(api, config, "door-magic@example.com"))
                case .emailVerification:
                    let made = try await api.account("door-verify@example.com")
                    account = made.user.id
                    let mail = try await EmailFlowTests.outboxMail(config, kind: "verification") { $0.recipient == "door-verify@example.com" }
                    let token = try EmailFlowTests.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/verify-email")
                    // `/auth/v1/verify` signs the link's owner in (GoTrue's `signup` link).
                    let verified = try await api.post("/auth/v1/verify", #"{"type": "signup", "token_hash": "\#(token)"}"#, headers: WaysInTests.apikey)
                    #expect(verified.status == .ok, "\(verified.text)")
                case .passwordReset:
                    account = try await api.account("door-reset@example.com").user.id
                    #expect(try await api.post("/v1/auth/password/forgot", #"{"email": "door-reset@example.com"}"#).status == .accepted)
                    let mail = try await EmailFlowTests.outboxMail(config, kind: "password_reset") { $0.recipient == "door-reset@example.com" }
                    let token = try EmailFlowTests.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/reset-password")
                    // `/auth/v1/verify` with `recovery` signs the link's owner in (GoTrue's flow).
                    let redeemed = try await api.post("/auth/v1/verify", #"{"type": "recovery", "token_hash": "\#(token)"}"#, headers: WaysInTests.apikey)
                    #expect(redeemed.status == .ok, "\(redeemed.text)")
                case .provider:
                    let signIn = try await api.post("/v1/auth/apple", ProviderSignInTests.body(try apple.token(sub: "door-apple", now: clock.now)))
                    account = try #require(try signIn.json(SignInAnswer<SignInResponse>.self).signedIn, "\(signIn.text)").user.id
                case .passkey:
                    let made = try await api.account("door-passkey@example.com")
                    account = made.user.id
                    let passkeys = PasskeyTests.Flow(api: api, device: try SoftAuthenticator())
                    let options = try await passkeys.registrationOptions(token: made.session.accessToken)
                    let credential = try await passkeys.device.create("door", options: options.options, origin: PasskeyTests.nativeOrigin)
                    #expect(try await passkeys.verifyRegistration(options.challengeID, credential, token: made.session.accessToken).status == .ok)
                    #expect(try await passkeys.signIn("door").status == .ok)
                case .anonymous:
                    account = try await api.post("/v1/auth/anonymous", "").json(AnonymousResponse.self).user.id
                case .phone:
                    let signIn = try await PhoneTests.signIn(api, config, PhoneTests.number, e164: PhoneTests.number)
                    account = try #require(try signIn.json(SignInAnswer<SignInResponse>.self).signedIn, "\(signIn.text)").user.id
                case .secondFactor:
                    let codes = MFAFlow(api: api, clock: clock)
                    let enrolled = try await codes.enrolledAccount("door-mfa@example.com")
                    account = enrolled.user
                    clock.advance(by: 31)
                    let challenge = try await codes.challenge("door-mfa@example.com")
                    let verified = try await codes.verify(challenge, factor: enrolled.factor, code: try await codes.code(enrolled.secret))
                    #expect(verified.status == .ok, "\(verified.text)")
                case .oauthCode:
                    let registered = try await OpenID.register(client)
                    let (code, verifier) = try await OpenID.code(client, for: registered, email: "door-oauth@example.com")
                    let tokens = try await OpenID.exchange(client, code: code, verifier: verifier, as: registered)
                    account = try Self.subject(try #require(tokens.object["access_token"] as? String))
                case .handover:
                    let target = try await OpenID.register(client, firstParty: true, initiateLoginURI: "http://127.0.0.1:9999/login")
                    let made = try await api.account("door-handover@example.com")
                    account = made.user.id
                    let link = try await api.post("/v1/oauth/handover", #"{"client_id": "\#(target.clientID)"}"#, token: made.session.accessToken)
                    let url = try #require(URLComponents(string: try link.json(HandoverResponse.self).url))
                    let opened = try await ProviderBrowser(client).confirmHandover("/oauth/handover?" + (url.percentEncodedQuery ?? ""))
                    #expect(opened.status == .seeOther, "\(opened.text)")
                }
                let sessions = try await TestApp.withStore(config) { store in try await store.sessions(of: UserID(account)!) }
                #expect(sessions.contains { $0.door == door }, "\(door): \(sessions.map { $0.door?.rawValue ?? "none" })")
                // Every session of the account came through the issuer.
                #expect(sessions.allSatisfy { $0.door != nil }, "\(door): a session without a door")
                // Its id begins with the time it was opened (the end of the sessions' id index; the
                // row keeps whole seconds); the account's stays random.
                for session in sessions where session.door == door {
                    #expect(
                        TimeOrderedIDs.milliseconds(session.id.rawValue).map { $0 / 1000 } == UInt64(session.createdAt.timeIntervalSince1970),
                        "\(door): session \(session.id) opened at \(session.createdAt.timeIntervalSince1970)")
                }
                #expect(TimeOrderedIDs.milliseconds(UserID(account)!.rawValue) == nil && Array(account)[14] == "4", "\(door): account \(account)")
                // `BEFORE_SIGN_IN` was asked about this door's session, for this account.
                let asked = receiver.calls.filter { $0.body["type"] as? String == "before_sign_in" && $0.data["door"] as? String == door.rawValue }
                #expect(
                    asked.contains { ($0.data["user"] as? [String: Any])?["id"] as? String == account && $0.data["preset"] as? String == "hannah" },
                    "\(door): BEFORE_SIGN_IN was not asked")
                // `CUSTOM_ACCESS_TOKEN` was asked for the claims of the app's tokens it opened (the
                // OpenID provider's doors give a client's tokens, which carry none).
                let claimed = receiver.calls.contains {
                    $0.body["type"] as? String == "custom_access_token" && $0.data["door"] as? String == door.rawValue
                        && ($0.data["user"] as? [String: Any])?["id"] as? String == account
                }
                switch door {
                case .oauthCode, .handover:
                    #expect(!claimed, "\(door): a client's tokens asked for the app's claims")
                case .signUp, .password, .magicLink, .emailVerification, .passwordReset, .provider, .passkey, .anonymous, .phone, .secondFactor:
                    #expect(claimed, "\(door): CUSTOM_ACCESS_TOKEN was not asked")
                }
                if sessions.contains(where: { $0.door == door }), !asked.isEmpty { walked.insert(door) }
            }
            #expect(walked == Set(SessionDoor.allCases))
            #expect(receiver.rejections.isEmpty, "\(receiver.rejections)")
        }
    }

    /// The `sub` of an access token (the app's or a client's).
    static func subject(_ token: String) throws -> String {
        try #require(try jwtParts(token).claims["sub"] as? String)
    }
}
