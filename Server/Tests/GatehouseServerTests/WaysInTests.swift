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

/// Issue 39: every way into an account is one kind of thing. The catalogue (`Credential`) is
/// walked case by case through the running server: each way in and each second factor is made
/// by someone who is not the owner before the address is proved, on `/v1` and on `/auth/v1`,
/// the inbox is proved by each proof path, and nothing made before the proof still signs in or
/// still asks to be satisfied.
@Suite(.requires(
    SoftAuthenticator.isAvailable && OneTimeCodeTools.available && MFAFlow.hasPyJWT,
    "GATEHOUSE_TEST_PYTHON with soft-webauthn, webauthn, pyotp and PyJWT; oathtool, zbarimg, rsvg-convert"))
struct WaysInTests {
    static let owner = "owner@example.com"
    static let squatterPassword = "the squatter knows this"
    static let ownerPassword = "the owner's own secret"

    /// Every way the inbox's owner proves the address.
    enum ProofPath: String, CaseIterable, Sendable {
        case magicCode, magicLink, resetLink, resetPage, goTrueRecovery, goTrueCode
    }

    /// Where the squatter made what it made.
    enum Surface: String, CaseIterable, Sendable {
        case native, goTrue
    }

    struct Walk: Sendable, CustomTestStringConvertible {
        var proof: ProofPath
        var surface: Surface
        var testDescription: String { "\(proof.rawValue) after \(surface.rawValue)" }
    }

    static let walks = ProofPath.allCases.flatMap { proof in Surface.allCases.map { Walk(proof: proof, surface: $0) } }

    static func configure(_ config: inout GatehouseConfig) {
        PasskeyTests.configure(&config)
        MFATests.configure(&config)
        SupabaseCompatTests.withBothKeys(&config)
    }

    static let apikey: HTTPFields = [HTTPField.Name("apikey")!: SupabaseCompatTests.anonKey]

    /// What the squatter made of one credential, to be tried again after the proof.
    enum Planted {
        case password
        case address(account: String)
        case identity(Provider, subject: String)
        case passkey(device: String)
        case anonymous(refreshToken: String)
        case totp(factor: String, secret: String)
        case recoveryCodes([String])
    }

    @Test(arguments: Backend.available, walks)
    func theOwnersProofEndsEverythingMadeBeforeIt(_ backend: Backend, _ walk: Walk) async throws {
        let clock = ManualClock(Date())
        try await ProviderSignInTests.run(backend, clock: clock, setup: .live, adjust: Self.configure) { api, apple, google, config in
            let passkeys = PasskeyTests.Flow(api: api, device: try SoftAuthenticator())
            let codes = MFAFlow(api: api, clock: clock)
            let squatter = try await Self.squat(api, walk.surface)
            var planted: [Credential: Planted] = [:]
            var access = squatter.access
            for credential in Credential.allCases {
                switch credential {
                case .password:
                    planted[credential] = .password
                case .emailLink:
                    planted[credential] = .address(account: squatter.account)
                case .apple, .google:
                    // Linking a provider to an unproved address is refused (finding 13 of the
                    // last round); one that got there before that rule is stored directly.
                    let provider = try #require(credential.provider)
                    let subject = "squatter-\(provider.rawValue)"
                    try await TestApp.withStore(config) { store in
                        try await store.insertIdentity(
                            Identity(userID: UserID(squatter.account)!, provider: provider, subject: subject, email: nil, createdAt: clock.now))
                    }
                    planted[credential] = .identity(provider, subject: subject)
                case .passkey:
                    let options = try await passkeys.registrationOptions(token: access)
                    let made = try await passkeys.device.create("squatter", options: options.options, origin: PasskeyTests.nativeOrigin)
                    let added = try await passkeys.verifyRegistration(options.challengeID, made, token: access)
                    #expect(added.status == .ok, "\(added.text)")
                    planted[credential] = .passkey(device: "squatter")
                case .anonymous:
                    planted[credential] = .anonymous(refreshToken: squatter.anonymousRefreshToken)
                case .phone:
                    // A number the squatter proved on the account (its SMS flow has tests of its own).
                    let number = "+14155550177"
                    try await TestApp.withStore(config) { store in
                        try await store.setPhone(UserID(squatter.account)!, phone: number, verifiedAt: clock.now, now: clock.now)
                        try await store.insertIdentity(
                            Identity(userID: UserID(squatter.account)!, provider: .phone, subject: number, email: nil, createdAt: clock.now))
                    }
                    planted[credential] = .identity(.phone, subject: number)
                case .totp:
                    let (factor, secret, raised) = try await Self.enrollTOTP(api, codes, walk.surface, token: access)
                    access = raised ?? access
                    planted[credential] = .totp(factor: factor, secret: secret)
                case .recoveryCodes:
                    // The first factor's confirmation answers them on /v1; /auth/v1 has no such
                    // answer, so the aal2 session asks for a set.
                    clock.advance(by: 1)
                    let made = try await api.post("/v1/mfa/recovery-codes", "", token: try await Self.aal2(api, codes, planted, access))
                    #expect(made.status == .ok, "\(made.text)")
                    planted[credential] = .recoveryCodes(try made.json(RecoveryCodesResponse.self).recoveryCodes)
                }
            }
            // Operators are shown every case of the catalogue, and what the squatter planted
            // (the anonymous start's identity went when the address was added; its session stays).
            let planted0 = try await Self.credentials(api, squatter.account)
            #expect(Set(planted0.keys) == Set(Credential.allCases.map(\.rawValue)), "\(planted0)")
            for credential in Credential.allCases where credential != .anonymous {
                #expect(planted0[credential.rawValue] ?? 0 > 0, "operators see the planted \(credential): \(planted0)")
            }
            // Before the proof each one works: the password sign-in asks for the squatter's factor.
            clock.advance(by: 31)
            let before = try await api.login(Self.owner, Self.squatterPassword).json(SignInAnswer<AuthResponse>.self)
            #expect(before.challenge != nil)

            clock.advance(by: 61)
            let ownerAccess = try await Self.prove(api, walk.proof, config: config)

            clock.advance(by: 31)
            for credential in Credential.allCases {
                let what = try #require(planted[credential], "nothing planted for \(credential)")
                switch (credential, what) {
                case (.password, .password):
                    let login = try await api.login(Self.owner, Self.squatterPassword)
                    #expect(login.status == .unauthorized, "the squatter's password: \(login.text)")
                case (.emailLink, .address(let account)):
                    // The address is what was proved: the owner holds the account it was on.
                    let me = try await api.get("/v1/me", token: ownerAccess).json(UserResponse.self)
                    #expect(me.user.id == account && me.user.emailVerified)
                case (.apple, .identity(let provider, let subject)), (.google, .identity(let provider, let subject)):
                    let fake = provider == .apple ? apple : google
                    let signIn = try await api.post(
                        "/v1/auth/\(provider.rawValue)", ProviderSignInTests.body(try fake.token(sub: subject, now: clock.now)))
                    let landed = try signIn.json(SignInAnswer<SignInResponse>.self).signedIn
                    #expect(landed != nil && landed?.user.id != squatter.account, "\(provider): \(signIn.text)")
                case (.phone, .identity(_, let number)):
                    // The number left the account: it is nobody's now, and the owner's account shows none.
                    let me = try await api.get("/v1/me", token: ownerAccess).json(UserResponse.self)
                    #expect(me.user.phone == nil && !me.user.phoneVerified, "\(me.user)")
                    let holder = try await TestApp.withStore(config) { store in try await store.user(phone: number) }
                    #expect(holder == nil, "the squatter's number")
                case (.passkey, .passkey(let device)):
                    let signIn = try await passkeys.signIn(device)
                    #expect(signIn.status == .unauthorized, "the squatter's passkey: \(signIn.text)")
                case (.anonymous, .anonymous(let refreshToken)):
                    #expect(try await api.refresh(refreshToken).status == .unauthorized, "the anonymous start's session")
                case (.totp, .totp(let factor, let secret)):
                    // The owner's sign-in was not asked for it, and it is gone.
                    let factors = try await api.get("/v1/mfa/factors", token: ownerAccess)
                    #expect(try factors.json(MFAFactorsResponse.self).factors.isEmpty, "\(factors.text)")
                    let stepUp = try await api.post(
                        "/v1/auth/mfa/verify", #"{"factor_id": "\#(factor)", "code": "\#(try await codes.code(secret))"}"#, token: ownerAccess)
                    #expect(stepUp.status == .badRequest && stepUp.error?.code == .invalidCode, "\(stepUp.text)")
                case (.recoveryCodes, .recoveryCodes(let list)):
                    let used = try await api.post("/v1/auth/mfa/verify", #"{"recovery_code": "\#(list[0])"}"#, token: ownerAccess)
                    #expect(used.status == .badRequest && used.error?.code == .invalidCode, "\(used.text)")
                default:
                    Issue.record("\(credential) planted as \(what)")
                }
            }
            #expect(try await api.refresh(squatter.refreshToken).status == .unauthorized, "the squatter's session")
            // What is left is the address, and the password only where the proof set one.
            let left = try await Self.credentials(api, squatter.account).filter { $0.value > 0 }
            let newPassword = [.resetLink, .resetPage].contains(walk.proof)
            #expect(left == (newPassword ? ["email_link": 1, "password": 1] : ["email_link": 1]), "\(left)")
        }
    }

    /// The admin API's count of each credential the account holds.
    static func credentials(_ api: AuthClient, _ account: String) async throws -> [String: Int] {
        let shown = try await api.client.execute(uri: "/admin/v1/users/\(account)", method: .get, headers: TestApp.adminHeaders)
        return try #require(try shown.json(AdminUser.self).credentials, "\(shown.text)")
    }

    // MARK: The squatter's side

    struct Squatter {
        var account: String
        var anonymousRefreshToken: String
        /// A fresh password sign-in's tokens.
        var access: String
        var refreshToken: String
    }

    /// An anonymous start that takes the owner's address with a password, then a fresh sign-in.
    static func squat(_ api: AuthClient, _ surface: Surface) async throws -> Squatter {
        switch surface {
        case .native:
            let anonymous = try await api.post("/v1/auth/anonymous", "").json(AnonymousResponse.self)
            let linked = try await api.post(
                "/v1/auth/identities/email", AuthClient.credentials(owner, squatterPassword), token: anonymous.session.accessToken)
            #expect(linked.status == .ok, "\(linked.text)")
            let session = try await api.login(owner, squatterPassword).json(AuthResponse.self)
            return Squatter(
                account: anonymous.user.id, anonymousRefreshToken: anonymous.session.refreshToken, access: session.session.accessToken,
                refreshToken: session.session.refreshToken)
        case .goTrue:
            let anonymous = try await api.post("/auth/v1/signup", "{}", headers: apikey)
            #expect(anonymous.status == .ok, "\(anonymous.text)")
            let start = try #require(try JSONSerialization.jsonObject(with: Data(anonymous.body.readableBytesView)) as? [String: Any])
            let token = try #require(start["access_token"] as? String)
            var headers = apikey
            headers[.authorization] = "Bearer \(token)"
            let linked = try await api.client.execute(
                uri: "/auth/v1/user", method: .put, headers: headers.merging([.contentType: "application/json"]),
                body: ByteBuffer(string: AuthClient.credentials(owner, squatterPassword)))
            #expect(linked.status == .ok, "\(linked.text)")
            let grant = try await api.post("/auth/v1/token?grant_type=password", AuthClient.credentials(owner, squatterPassword), headers: apikey)
            let session = try #require(try JSONSerialization.jsonObject(with: Data(grant.body.readableBytesView)) as? [String: Any])
            return Squatter(
                account: try #require((start["user"] as? [String: Any])?["id"] as? String),
                anonymousRefreshToken: try #require(start["refresh_token"] as? String),
                access: try #require(session["access_token"] as? String), refreshToken: try #require(session["refresh_token"] as? String))
        }
    }

    /// A confirmed TOTP factor: its id, its secret, and (on `/auth/v1`) the raised session's
    /// access token.
    static func enrollTOTP(
        _ api: AuthClient, _ codes: MFAFlow, _ surface: Surface, token: String
    ) async throws -> (String, String, String?) {
        switch surface {
        case .native:
            let enrolled = try await codes.enroll(token)
            try await codes.confirm(enrolled, token: token)
            return (enrolled.id, enrolled.totp.secret, nil)
        case .goTrue:
            let enrolled = try await api.post("/auth/v1/factors", #"{"factor_type": "totp"}"#, token: token, headers: apikey)
            #expect(enrolled.status == .ok, "\(enrolled.text)")
            let factor = try #require(try JSONSerialization.jsonObject(with: Data(enrolled.body.readableBytesView)) as? [String: Any])
            let id = try #require(factor["id"] as? String)
            let secret = try #require((factor["totp"] as? [String: Any])?["secret"] as? String)
            let challenge = try await api.post("/auth/v1/factors/\(id)/challenge", "{}", token: token, headers: apikey)
            let challengeID = try #require(
                (try JSONSerialization.jsonObject(with: Data(challenge.body.readableBytesView)) as? [String: Any])?["id"] as? String)
            let verified = try await api.post(
                "/auth/v1/factors/\(id)/verify", #"{"challenge_id": "\#(challengeID)", "code": "\#(try await codes.code(secret))"}"#,
                token: token, headers: apikey)
            #expect(verified.status == .ok, "\(verified.text)")
            let session = try #require(try JSONSerialization.jsonObject(with: Data(verified.body.readableBytesView)) as? [String: Any])
            return (id, secret, try #require(session["access_token"] as? String))
        }
    }

    /// An `aal2` access token of the squatter's session: stepped up with the planted factor when
    /// the token in hand is not.
    static func aal2(_ api: AuthClient, _ codes: MFAFlow, _ planted: [Credential: Planted], _ token: String) async throws -> String {
        guard try jwtParts(token).claims["aal"] as? String != "aal2", case .totp(let factor, let secret)? = planted[.totp] else { return token }
        codes.clock.advance(by: 30)
        let stepUp = try await api.post(
            "/v1/auth/mfa/verify", #"{"factor_id": "\#(factor)", "code": "\#(try await codes.code(secret))"}"#, token: token)
        #expect(stepUp.status == .ok, "\(stepUp.text)")
        return try stepUp.json(MFAVerifyResponse.self).session.accessToken
    }

    // MARK: The owner's side

    /// The owner proves the inbox by `path`; the access token of the session it ends with (a
    /// reset signs in with the new password afterwards). Never a second-factor challenge.
    static func prove(_ api: AuthClient, _ path: ProofPath, config: GatehouseConfig) async throws -> String {
        switch path {
        case .magicCode, .magicLink:
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "\#(owner)"}"#).status == .accepted)
            let mail = ReceivedMail(text: try await EmailFlowTests.outboxMail(config, kind: "magic_link").textBody ?? "")
            let body = path == .magicCode
                ? #"{"email": "\#(owner)", "code": "\#(try EmailFlowTests.code(in: mail))"}"#
                : #"{"token": "\#(try EmailFlowTests.token(in: mail, path: "/auth/magic-link"))"}"#
            let verified = try await api.post("/v1/auth/magic-link/verify", body)
            let signedIn = try #require(try verified.json(SignInAnswer<SignInResponse>.self).signedIn, "\(verified.text)")
            return signedIn.session.accessToken
        case .resetLink, .resetPage:
            #expect(try await api.post("/v1/auth/password/forgot", #"{"email": "\#(owner)"}"#).status == .accepted)
            let mail = ReceivedMail(text: try await EmailFlowTests.outboxMail(config, kind: "password_reset").textBody ?? "")
            let token = try EmailFlowTests.token(in: mail, path: "/auth/reset-password")
            if path == .resetLink {
                let reset = try await api.post("/v1/auth/password/reset", AuthClient.json(["token": token, "password": ownerPassword]))
                #expect(reset.status == .ok, "\(reset.text)")
            } else {
                let page = try await api.client.execute(uri: "/auth/reset-password?token=\(token)", method: .get)
                let cookie = try #require(page.headers[.setCookie])
                let csrf = try #require(cookie.split(separator: ";").first?.split(separator: "=").last.map(String.init))
                let password = ownerPassword.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                let done = try await api.client.execute(
                    uri: "/auth/reset-password", method: .post,
                    headers: [.contentType: "application/x-www-form-urlencoded", .cookie: "gatehouse_csrf=\(csrf)"],
                    body: ByteBuffer(string: "token=\(token)&password=\(password)&password_confirm=\(password)&csrf_token=\(csrf)"))
                #expect(done.text.contains(#"data-state="success""#), "\(done.text)")
            }
            let login = try await api.login(owner, ownerPassword)
            return try #require(try login.json(SignInAnswer<AuthResponse>.self).signedIn, "\(login.text)").session.accessToken
        case .goTrueRecovery, .goTrueCode:
            let recovery = path == .goTrueRecovery
            let asked = try await api.post(recovery ? "/auth/v1/recover" : "/auth/v1/otp", #"{"email": "\#(owner)"}"#, headers: apikey)
            #expect(asked.status == .ok, "\(asked.text)")
            let mail = ReceivedMail(
                text: try await EmailFlowTests.outboxMail(config, kind: recovery ? "password_reset" : "magic_link").textBody ?? "")
            let body = recovery
                ? #"{"type": "recovery", "token_hash": "\#(try EmailFlowTests.token(in: mail, path: "/auth/reset-password"))"}"#
                : #"{"type": "email", "email": "\#(owner)", "token": "\#(try EmailFlowTests.code(in: mail))"}"#
            let verified = try await api.post("/auth/v1/verify", body, headers: apikey)
            #expect(verified.status == .ok, "\(verified.text)")
            let session = try #require(try JSONSerialization.jsonObject(with: Data(verified.body.readableBytesView)) as? [String: Any])
            return try #require(session["access_token"] as? String)
        }
    }
}

extension AuthClient {
    static func json(_ object: [String: Any]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }
}

extension HTTPFields {
    func merging(_ other: HTTPFields) -> HTTPFields {
        var merged = self
        for field in other { merged[field.name] = field.value }
        return merged
    }
}
