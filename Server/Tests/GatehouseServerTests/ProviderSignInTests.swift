import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import Testing

/// Sign in with Apple and Google against local key servers, with tokens minted by the tests.
@Suite struct ProviderSignInTests {
    static let appleAudience = "com.example.handz"
    static let googleAudience = "1234-abc.apps.googleusercontent.com"
    static let failure = "Authentication with Google/Apple failed. Please try again."

    /// Runs `body` with live Apple and Google key servers and an app configured for them.
    static func run(
        _ backend: Backend, preset: String = "default", clock: any WallClock = SystemClock(), setup: TestingSetup = .router,
        adjust: @escaping @Sendable (inout GatehouseConfig) -> Void = { _ in },
        before: @Sendable (FakeProvider, FakeProvider) -> Void = { _, _ in },
        _ body: @escaping @Sendable (AuthClient, FakeProvider, FakeProvider, GatehouseConfig) async throws -> Void
    ) async throws {
        let apple = try FakeProvider(issuer: "https://appleid.apple.com", audience: appleAudience)
        let google = try FakeProvider(issuer: "https://accounts.google.com", audience: googleAudience)
        before(apple, google)
        try await apple.serve { appleURL in
            try await google.serve { googleURL in
                try await TestApp.run(backend, preset: preset, clock: clock, setup: setup, adjust: {
                    $0.appleAudiences = [appleAudience]
                    $0.googleAudiences = [googleAudience, "another-client"]
                    $0.appleJWKSURL = appleURL
                    $0.googleJWKSURL = googleURL
                    $0.appleTokenURL = appleURL.deletingLastPathComponent().appendingPathComponent("auth/token")
                    $0.appleRevokeURL = appleURL.deletingLastPathComponent().appendingPathComponent("auth/revoke")
                    adjust(&$0)
                }) { client, config in
                    try await body(AuthClient(client: client), apple, google, config)
                }
            }
        }
    }

    static func body(_ token: String, nonce: String? = nil, name: (String, String)? = nil) -> String {
        var object: [String: Any] = ["id_token": token]
        if let nonce { object["raw_nonce"] = nonce }
        if let name { object["full_name"] = ["given_name": name.0, "family_name": name.1] }
        return String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    @Test(arguments: Backend.available)
    func appleSignsUpThenSignsInWithoutTheEmail(_ backend: Backend) async throws {
        try await Self.run(backend) { api, apple, _, _ in
            let nonce = "n-0S6_WzA2Mj"
            let first = try apple.token(
                sub: "001.apple", email: "ann@example.com",
                extra: ["email_verified": "true", "is_private_email": "false", "nonce": FakeProvider.sha256Hex(nonce)])
            let created = try await api.post("/v1/auth/apple", Self.body(first, nonce: nonce, name: ("Ann", "Lee")))
            #expect(created.status == .ok, "\(created.text)")
            let signup = try created.json(SignInResponse.self)
            #expect(signup.created && signup.user.email == "ann@example.com" && signup.user.emailVerified)
            #expect(signup.user.displayName == "Ann Lee")
            #expect(signup.user.identities.map(\.provider) == ["apple"])

            // Later tokens carry no email and no name; the stored ones stay.
            let later = try apple.token(sub: "001.apple")
            let again = try await api.post("/v1/auth/apple", Self.body(later, name: ("Someone", "Else")))
            let signin = try again.json(SignInResponse.self)
            #expect(!signin.created && signin.user.id == signup.user.id)
            #expect(signin.user.email == "ann@example.com" && signin.user.displayName == "Ann Lee")
            #expect(signin.user.identities.first?.email == "ann@example.com")
        }
    }

    @Test(arguments: Backend.available)
    func googleFillsAnEmptyProfileAndAPrivateRelayIsNeverMerged(_ backend: Backend) async throws {
        try await Self.run(backend) { api, apple, google, config in
            let token = try google.token(
                sub: "g-1", email: "gina@example.com", extra: ["email_verified": true, "name": "Gina G", "picture": "https://example.com/g.png"])
            let gina = try await api.post("/v1/auth/google", Self.body(token)).json(SignInResponse.self)
            #expect(gina.created && gina.user.displayName == "Gina G" && gina.user.avatarURL == "https://example.com/g.png")

            // A relay address that happens to match a verified account is still not merged.
            let account = try await api.account("relay@privaterelay.appleid.com")
            _ = try await TestApp.withStore(config) { store in
                try await store.markEmailVerified(UserID(account.user.id)!, normalizedEmail: "relay@privaterelay.appleid.com", at: Date())
            }
            let relay = try apple.token(
                sub: "relay-sub", email: "relay@privaterelay.appleid.com", extra: ["email_verified": "true", "is_private_email": "true"])
            let refused = try await api.post("/v1/auth/apple", Self.body(relay))
            #expect(refused.status == .conflict && refused.error?.code == .linkConfirmationRequired)
        }
    }

    @Test(arguments: Backend.available)
    func aVerifiedEmailAccountIsLinkedAndAnUnverifiedOneIsNot(_ backend: Backend) async throws {
        try await Self.run(backend, preset: "handz") { api, _, google, config in
            let unverified = try await api.account("unverified@example.com")
            let token = try google.token(sub: "g-unverified", email: "unverified@example.com", extra: ["email_verified": true])
            let refused = try await api.post("/v1/auth/google", Self.body(token))
            #expect(refused.status == .conflict && refused.error?.code == .linkConfirmationRequired)
            #expect(refused.error?.message == "An account with this email already exists. Log in with your password to connect it.")
            _ = unverified

            let verified = try await api.account("verified@example.com")
            _ = try await TestApp.withStore(config) { store in
                try await store.markEmailVerified(UserID(verified.user.id)!, normalizedEmail: "verified@example.com", at: Date())
            }
            // Google unverified: no link either.
            let shaky = try google.token(sub: "g-shaky", email: "verified@example.com", extra: ["email_verified": false])
            #expect(try await api.post("/v1/auth/google", Self.body(shaky)).status == .conflict)
            let safe = try google.token(sub: "g-verified", email: "Verified@Example.com", extra: ["email_verified": true, "name": "V"])
            let linked = try await api.post("/v1/auth/google", Self.body(safe)).json(SignInResponse.self)
            #expect(!linked.created && linked.user.id == verified.user.id)
            #expect(Set(linked.user.identities.map(\.provider)) == ["email", "google"])
        }
    }

    @Test(arguments: Backend.available)
    func everyBadTokenIsRefusedWithTheSeedsMessage(_ backend: Backend) async throws {
        try await Self.run(backend) { api, apple, google, _ in
            let now = Date()
            let stranger = try google.newKey(kid: google.signing.kid)
            let unknown = try google.newKey()
            let bad: [(String, String)] = [
                ("wrong iss", try google.token(extra: ["iss": "https://evil.example"])),
                ("another app", try google.token(extra: ["aud": "someone-else"])),
                ("expired", try google.token(extra: ["exp": Int(now.timeIntervalSince1970) - 120])),
                ("future iat", try google.token(extra: ["iat": Int(now.timeIntervalSince1970) + 600])),
                ("bad signature", try google.token(key: stranger)),
                ("unknown kid", try google.token(key: unknown)),
                ("alg none", try google.token(alg: "none")),
                ("HS256", try google.token(alg: "HS256")),
                ("apple token at google", try apple.token()),
                ("garbage", "not.a.jwt"),
            ]
            for (name, token) in bad {
                let response = try await api.post("/v1/auth/google", Self.body(token))
                #expect(response.status == .unauthorized && response.error?.code == .invalidIDToken, "\(name)")
                #expect(response.error?.message == Self.failure, "\(name)")
            }
            // Nonces, both ways, and Apple's hashing.
            let withNonce = try google.token(extra: ["nonce": "abc"])
            #expect(try await api.post("/v1/auth/google", Self.body(withNonce)).status == .unauthorized)
            #expect(try await api.post("/v1/auth/google", Self.body(withNonce, nonce: "abd")).status == .unauthorized)
            #expect(try await api.post("/v1/auth/google", Self.body(try google.token(), nonce: "abc")).status == .unauthorized)
            #expect(try await api.post("/v1/auth/google", Self.body(withNonce, nonce: "abc")).status == .ok)
            let appleRaw = try apple.token(sub: "a-n", extra: ["nonce": "abc"])
            #expect(try await api.post("/v1/auth/apple", Self.body(appleRaw, nonce: "abc")).status == .unauthorized)
            let appleHashed = try apple.token(sub: "a-n", extra: ["nonce": FakeProvider.sha256Hex("abc")])
            #expect(try await api.post("/v1/auth/apple", Self.body(appleHashed, nonce: "abc")).status == .ok)
        }
    }

    @Test(arguments: Backend.available)
    func anUnknownKeyIsFetchedOnceAMinuteAtMost(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await Self.run(backend, clock: clock) { api, _, google, _ in
            // Tokens are minted on the server's clock: on a busy machine the app can take longer
            // to start than the leeway, and a token from the real clock would then look issued in
            // the future.
            #expect(try await api.post("/v1/auth/google", Self.body(try google.token(now: clock.now))).status == .ok)
            #expect(google.fetches == 1)
            // A key rotated in at the provider: within the minute, its tokens wait (no refetch)…
            let rotated = try google.newKey()
            google.publish(rotated)
            #expect(try await api.post("/v1/auth/google", Self.body(try google.token(key: rotated, now: clock.now))).status == .unauthorized)
            #expect(google.fetches == 1)
            // …after it, the first such token makes one refetch and succeeds.
            clock.advance(by: 61)
            #expect(try await api.post("/v1/auth/google", Self.body(try google.token(key: rotated, now: clock.now))).status == .ok)
            #expect(google.fetches == 2)
            // An unknown kid right after does not hammer the provider.
            let unknown = try google.newKey()
            #expect(try await api.post("/v1/auth/google", Self.body(try google.token(key: unknown, now: clock.now))).status == .unauthorized)
            #expect(google.fetches == 2)
        }
    }

    @Test(arguments: Backend.available)
    func theKeyServerDownGives503NotA500(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await Self.run(backend, clock: clock, before: { _, google in google.setDown(true) }) { api, _, google, _ in
            let response = try await api.post("/v1/auth/google", Self.body(try google.token()))
            #expect(response.status == .serviceUnavailable && response.error?.code == .providerUnavailable)
            google.setDown(false)
            // Failed fetches count against the one-a-minute limit too (issue 17, finding 15).
            clock.advance(by: 61)
            #expect(try await api.post("/v1/auth/google", Self.body(try google.token(now: clock.now))).status == .ok)
        }
    }

    @Test(arguments: Backend.available)
    func appleEventsEndSessionsAndDeleteAccounts(_ backend: Backend) async throws {
        try await Self.run(backend) { api, apple, _, config in
            let session = try await api.post("/v1/auth/apple", Self.body(try apple.token(sub: "s2s", email: "s2s@example.com")))
                .json(SignInResponse.self)
            func event(_ type: String, sub: String = "s2s") throws -> String {
                let events = try JSONSerialization.data(withJSONObject: ["type": type, "sub": sub, "event_time": 1_700_000_000])
                let token = try apple.sign(
                    ["iss": "https://appleid.apple.com", "aud": Self.appleAudience, "iat": Int(Date().timeIntervalSince1970),
                     "jti": UUID().uuidString, "events": String(decoding: events, as: UTF8.self)], key: apple.signing)
                return #"{"payload": "\#(token)"}"#
            }
            let revoked = try await api.post("/v1/webhooks/apple/sign-in", try event("consent-revoked"))
            #expect(revoked.status == .ok)
            let refresh = try await api.refresh(session.session.refreshToken)
            #expect(refresh.status == .unauthorized && refresh.error?.code == .sessionRevoked)
            // Duplicates are harmless.
            #expect(try await api.post("/v1/webhooks/apple/sign-in", try event("consent-revoked")).status == .ok)
            // Signing in again links a fresh identity to a new account (the old one has no Apple any more).
            let back = try await api.post("/v1/auth/apple", Self.body(try apple.token(sub: "s2s"))).json(SignInResponse.self)
            #expect(back.created)
            #expect(try await api.post("/v1/webhooks/apple/sign-in", try event("account-delete")).status == .ok)
            let gone = try await TestApp.withStore(config) { try await $0.user(id: UserID(back.user.id)!) }
            #expect(gone == nil)
            // A forged event is refused.
            let forged = try await api.post("/v1/webhooks/apple/sign-in", #"{"payload": "\#(try apple.token(alg: "HS256"))"}"#)
            #expect(forged.status == .badRequest)
        }
    }

    @Test(arguments: Backend.available)
    func identitiesAreLinkedAndUnlinkedButNeverTheLastOne(_ backend: Backend) async throws {
        try await Self.run(backend) { api, apple, google, config in
            let account = try await api.account("linker@example.com")
            let access = account.session.accessToken
            // Linking needs a verified address (issue 17, finding 13); BypassTests shows the refusal.
            try await TestApp.withStore(config) { store in
                _ = try await store.markEmailVerified(UserID(account.user.id)!, normalizedEmail: "linker@example.com", at: Date())
            }
            let token = try google.token(sub: "g-link", email: "other@example.com", extra: ["email_verified": true])
            let linked = try await api.post("/v1/auth/identities/google", Self.body(token), token: access)
            #expect(linked.status == .ok)
            #expect(Set(try linked.json(UserResponse.self).user.identities.map(\.provider)) == ["email", "google"])
            // The primary address stays the account's own.
            #expect(try linked.json(UserResponse.self).user.email == "linker@example.com")

            // Someone else's Apple identity cannot be taken.
            _ = try await api.post("/v1/auth/apple", Self.body(try apple.token(sub: "a-owned", email: "owner@example.com")))
            let taken = try await api.post("/v1/auth/identities/apple", Self.body(try apple.token(sub: "a-owned")), token: access)
            #expect(taken.status == .conflict && taken.error?.code == .identityInUse)

            let unlink = try await api.client.execute(uri: "/v1/auth/identities/email", method: .delete, headers: [.authorization: "Bearer \(access)"])
            #expect(unlink.status == .noContent, "\(unlink.text)")
            #expect(try await api.login("linker@example.com").status == .unauthorized)
            let last = try await api.client.execute(uri: "/v1/auth/identities/google", method: .delete, headers: [.authorization: "Bearer \(access)"])
            #expect(last.status == .conflict && last.error?.code == .lastIdentity)
            // And back: the Google account adds a password.
            let email = try await api.post("/v1/auth/identities/email", AuthClient.credentials("linker@example.com", "a new password here"), token: access)
            #expect(email.status == .ok)
            #expect(try await api.login("linker@example.com", "a new password here").status == .ok)
        }
    }

    /// With Apple credentials set, the authorization code is exchanged in the background (with an
    /// ES256 client secret) and the refresh token is revoked when Apple is unlinked.
    @Test(arguments: Backend.available)
    func appleTokensAreExchangedAndRevoked(_ backend: Backend) async throws {
        let teamKey = ES256PrivateKey()
        try await Self.run(backend, adjust: {
            $0.appleTeamID = "TEAM123456"
            $0.appleKeyID = "KEY1234567"
            $0.applePrivateKey = teamKey.pemRepresentation
        }) { api, apple, _, config in
            let body = #"{"id_token": "\#(try apple.token(sub: "ex-1", email: "ex@example.com"))", "authorization_code": "code-1"}"#
            let signedIn = try await api.post("/v1/auth/apple", body).json(SignInResponse.self)
            var stored: (value: [UInt8], encryption: String)?
            for _ in 0..<200 where stored == nil {
                stored = try await TestApp.withStore(config) { store in
                    try await store.providerToken(of: UserID(signedIn.user.id)!, provider: .apple).map { ($0.value, $0.encryption) }
                }
                if stored == nil { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(stored.map { String(decoding: $0.value, as: UTF8.self) } == "apple-refresh-code-1")
            let exchange = try #require(apple.tokenRequests.first)
            #expect(exchange["code"] == "code-1" && exchange["grant_type"] == "authorization_code")
            #expect(exchange["client_id"] == Self.appleAudience)
            // The client secret: an ES256 JWT from the team, for the app, signed with the team key.
            let secret = try #require(exchange["client_secret"])
            let keys = await JWTKeyCollection().add(ecdsa: teamKey.publicKey, kid: "KEY1234567")
            let claims = try await keys.verify(secret, as: AppleTokenClient.ClientSecret.self)
            #expect(claims.iss.value == "TEAM123456" && claims.sub.value == Self.appleAudience)
            #expect(claims.aud.value == ["https://appleid.apple.com"])
            #expect(try jwtParts(secret).header["kid"] as? String == "KEY1234567")

            // Apple cannot be unlinked while it is the only way in; with a password added, it can,
            // and Apple's token is revoked.
            let access = signedIn.session.accessToken
            let alone = try await api.client.execute(uri: "/v1/auth/identities/apple", method: .delete, headers: [.authorization: "Bearer \(access)"])
            #expect(alone.status == .conflict)
            #expect(try await api.post("/v1/auth/identities/email", AuthClient.credentials("ex@example.com", "a long enough secret"), token: access).status == .ok)
            let unlinked = try await api.client.execute(uri: "/v1/auth/identities/apple", method: .delete, headers: [.authorization: "Bearer \(access)"])
            #expect(unlinked.status == .noContent)
            for _ in 0..<200 where apple.revokeRequests.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
            let revoke = try #require(apple.revokeRequests.first)
            #expect(revoke["token"] == "apple-refresh-code-1" && revoke["token_type_hint"] == "refresh_token")
        }
    }

    /// Deleting an account that signed in with Apple revokes Apple's token, and the same Apple ID
    /// then signs up afresh.
    @Test(arguments: Backend.available)
    func deletingAnAppleAccountRevokesAppleTokenAndForgetsIt(_ backend: Backend) async throws {
        try await Self.run(backend, adjust: {
            $0.appleTeamID = "TEAM123456"
            $0.appleKeyID = "KEY1234567"
            $0.applePrivateKey = ES256PrivateKey().pemRepresentation
        }) { api, apple, _, config in
            let body = #"{"id_token": "\#(try apple.token(sub: "del-1", email: "del@example.com"))", "authorization_code": "code-del"}"#
            let signedIn = try await api.post("/v1/auth/apple", body).json(SignInResponse.self)
            let id = UserID(signedIn.user.id)!
            for _ in 0..<200 where try await TestApp.withStore(config, { try await $0.providerToken(of: id, provider: .apple) == nil }) {
                try await Task.sleep(for: .milliseconds(50))
            }
            // A young session is proof enough (decision 2).
            let deleted = try await api.client.execute(
                uri: "/v1/me", method: .delete, headers: [.authorization: "Bearer \(signedIn.session.accessToken)"])
            #expect(deleted.status == .noContent, "\(deleted.text)")
            for _ in 0..<200 where apple.revokeRequests.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
            #expect(apple.revokeRequests.first?["token"] == "apple-refresh-code-del")
            #expect(try await TestApp.withStore(config) { try await $0.user(id: id) } == nil)
            #expect(try await api.refresh(signedIn.session.refreshToken).status == .unauthorized)
            let again = try await api.post("/v1/auth/apple", Self.body(try apple.token(sub: "del-1"))).json(SignInResponse.self)
            #expect(again.created && again.user.id != signedIn.user.id)
        }
    }
}
