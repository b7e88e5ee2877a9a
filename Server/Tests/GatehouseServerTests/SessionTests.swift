import Crypto
import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import Testing

@Suite struct RefreshTests {
    @Test(arguments: Backend.available)
    func everyRefreshRotatesAndARaceGetsTheSameSuccessor(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await TestApp.run(backend, clock: clock) { client, _ in
            let auth = AuthClient(client: client)
            let account = try await auth.account("rotate@example.com")
            let first = try await auth.refresh(account.session.refreshToken)
            #expect(first.status == .ok)
            let rotated = try first.json(SessionResponse.self).session
            #expect(rotated.refreshToken != account.session.refreshToken)
            #expect(rotated.sessionID == account.session.sessionID)
            // The old token again within the reuse interval: the same successor, no sign-out.
            clock.advance(by: 5)
            let again = try await auth.refresh(account.session.refreshToken)
            #expect(again.status == .ok)
            #expect(try again.json(SessionResponse.self).session.refreshToken == rotated.refreshToken)
            // The newest token keeps working.
            let next = try await auth.refresh(rotated.refreshToken)
            #expect(next.status == .ok)
            let me = try await auth.get("/v1/me", token: try next.json(SessionResponse.self).session.accessToken)
            #expect(me.status == .ok)
        }
    }

    @Test(arguments: Backend.available)
    func reuseAfterTheIntervalRevokesTheWholeSession(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await TestApp.run(backend, clock: clock) { client, config in
            let auth = AuthClient(client: client)
            let account = try await auth.account("reuse@example.com")
            let successor = try await auth.refresh(account.session.refreshToken).json(SessionResponse.self).session
            clock.advance(by: 11)
            let replay = try await auth.refresh(account.session.refreshToken)
            #expect(replay.status == .unauthorized && replay.error?.code == .sessionRevoked)
            // Why, for the SDK's sign-out reason (issue 64): the replay, then the owner, are told.
            #expect(replay.error?.details?["reason"] == .string("refresh_token_reuse"))
            // The thief's copy and the owner's newest token are both dead now.
            let owner = try await auth.refresh(successor.refreshToken)
            #expect(owner.status == .unauthorized && owner.error?.code == .sessionRevoked)
            #expect(owner.error?.details?["reason"] == .string("refresh_token_reuse"))
            let me = try await auth.get("/v1/me", token: successor.accessToken)
            #expect(me.status == .unauthorized)
            let audit = try await client.execute(uri: "/admin/v1/audit?user_id=\(account.user.id)", method: .get, headers: TestApp.adminHeaders)
            #expect(try audit.json(AuditList.self).events.contains { $0.event == "refresh_reuse_detected" })
            _ = config
        }
    }

    @Test(arguments: Backend.available)
    func twentyParallelRefreshesRotateOnce(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, config in
            let auth = AuthClient(client: client)
            let account = try await auth.account("parallel@example.com")
            let tokens = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        let response = try await auth.refresh(account.session.refreshToken)
                        return response.status == .ok ? try response.json(SessionResponse.self).session.refreshToken : nil
                    }
                }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(tokens.allSatisfy { $0 != nil })
            #expect(Set(tokens.compactMap { $0 }).count == 1)
            let stored = try await TestApp.withStore(config) { store in
                try await store.refreshToken(hash: Array(SHA256.hash(data: Data(tokens[0]!.utf8))))
            }
            #expect(stored != nil && stored?.rotatedAt == nil)
            // The client that kept the newest token stays signed in.
            #expect(try await auth.refresh(tokens[0]!).status == .ok)
        }
    }

    @Test func garbageAndExpiredRefreshTokensAre401() async throws {
        let clock = ManualClock()
        try await TestApp.run(.sqlite, clock: clock) { client, _ in
            let auth = AuthClient(client: client)
            let garbage = try await auth.refresh("not-a-token")
            #expect(garbage.status == .unauthorized && garbage.error?.code == .invalidRefreshToken)
            let account = try await auth.account("expire@example.com")
            clock.advance(by: 30 * 86_400 + 1)
            let expired = try await auth.refresh(account.session.refreshToken)
            #expect(expired.status == .unauthorized && expired.error?.code == .invalidRefreshToken)
        }
    }

    @Test func theRefreshLifetimeSlides() async throws {
        let clock = ManualClock()
        try await TestApp.run(.sqlite, clock: clock) { client, _ in
            let auth = AuthClient(client: client)
            var token = try await auth.account("slide@example.com").session.refreshToken
            // Used every 20 days for 100 days: still signed in (decision 1).
            for _ in 0..<5 {
                clock.advance(by: 20 * 86_400)
                let response = try await auth.refresh(token)
                #expect(response.status == .ok)
                token = try response.json(SessionResponse.self).session.refreshToken
            }
        }
    }
}

@Suite struct SessionManagementTests {
    @Test(arguments: Backend.available)
    func logoutScopes(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, _ in
            let auth = AuthClient(client: client)
            _ = try await auth.account("scopes@example.com")
            func signIn() async throws -> SessionPayload { try await auth.login("scopes@example.com").json(AuthResponse.self).session }
            let (a, b, c) = (try await signIn(), try await signIn(), try await signIn())

            let local = try await auth.post("/v1/auth/logout", "{}", token: a.accessToken)
            #expect(local.status == .noContent)
            #expect(try await auth.get("/v1/me", token: a.accessToken).status == .unauthorized)
            // Every signed-in call refuses a revoked session's token at once, not only /v1/me.
            #expect(try await auth.get("/v1/auth/sessions", token: a.accessToken).status == .unauthorized)
            #expect(try await auth.post("/v1/auth/logout", #"{"scope": "global"}"#, token: a.accessToken).status == .unauthorized)
            #expect(try await auth.refresh(a.refreshToken).error?.code == .sessionRevoked)
            #expect(try await auth.get("/v1/me", token: b.accessToken).status == .ok)

            #expect(try await auth.post("/v1/auth/logout", #"{"scope": "others"}"#, token: b.accessToken).status == .noContent)
            #expect(try await auth.get("/v1/me", token: b.accessToken).status == .ok)
            #expect(try await auth.get("/v1/me", token: c.accessToken).status == .unauthorized)

            let d = try await signIn()
            #expect(try await auth.post("/v1/auth/logout", #"{"scope": "global"}"#, token: d.accessToken).status == .noContent)
            #expect(try await auth.get("/v1/me", token: b.accessToken).status == .unauthorized)
            #expect(try await auth.get("/v1/me", token: d.accessToken).status == .unauthorized)

            let bad = try await auth.post("/v1/auth/logout", #"{"scope": "everything"}"#, token: (try await signIn()).accessToken)
            #expect(bad.status == .badRequest)
            #expect(try await auth.post("/v1/auth/logout", "{}").status == .unauthorized)
        }
    }

    @Test(arguments: Backend.available)
    func sessionsAreListedAndRevokedOneByOne(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, _ in
            let auth = AuthClient(client: client)
            let first = try await auth.account("devices@example.com").session
            let second = try await auth.post(
                "/v1/auth/login", AuthClient.credentials("devices@example.com", "correct horse battery"),
                headers: [.userAgent: "Handz/1.0 (iPhone)"]
            ).json(AuthResponse.self).session
            let listed = try await auth.get("/v1/auth/sessions", token: first.accessToken).json(SessionsResponse.self).sessions
            #expect(listed.count == 2)
            #expect(listed.first { $0.current }?.id == first.sessionID)
            #expect(listed.first { !$0.current }?.userAgent == "Handz/1.0 (iPhone)")
            #expect(listed.allSatisfy { $0.provider == "email" })

            let revoke = try await client.execute(
                uri: "/v1/auth/sessions/\(second.sessionID)", method: .delete, headers: [.authorization: "Bearer \(first.accessToken)"])
            #expect(revoke.status == .noContent)
            #expect(try await auth.get("/v1/me", token: second.accessToken).status == .unauthorized)
            let missing = try await client.execute(
                uri: "/v1/auth/sessions/\(UUID())", method: .delete, headers: [.authorization: "Bearer \(first.accessToken)"])
            #expect(missing.status == .notFound && missing.error?.code == .notFound)
            // Someone else's session is as good as missing.
            let stranger = try await auth.account("stranger@example.com").session
            let foreign = try await client.execute(
                uri: "/v1/auth/sessions/\(first.sessionID)", method: .delete, headers: [.authorization: "Bearer \(stranger.accessToken)"])
            #expect(foreign.status == .notFound)
        }
    }

    @Test(arguments: Backend.available)
    func changingThePassword(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, _ in
            let auth = AuthClient(client: client)
            let first = try await auth.account("change@example.com", "original passphrase").session
            let other = try await auth.login("change@example.com", "original passphrase").json(AuthResponse.self).session
            let wrong = try await auth.post(
                "/v1/auth/password/change", #"{"current_password": "nope", "new_password": "brand new passphrase"}"#, token: first.accessToken)
            #expect(wrong.status == .unauthorized && wrong.error?.code == .invalidCredentials)
            let weak = try await auth.post(
                "/v1/auth/password/change", #"{"current_password": "original passphrase", "new_password": "short"}"#, token: first.accessToken)
            #expect(weak.status == .unprocessableContent && weak.error?.code == .weakPassword)
            let changed = try await auth.post(
                "/v1/auth/password/change", #"{"current_password": "original passphrase", "new_password": "brand new passphrase"}"#,
                token: first.accessToken)
            #expect(changed.status == .ok)
            // By default other devices stay signed in (decision 5).
            #expect(try await auth.get("/v1/me", token: other.accessToken).status == .ok)
            #expect(try await auth.login("change@example.com", "original passphrase").status == .unauthorized)
            #expect(try await auth.login("change@example.com", "brand new passphrase").status == .ok)
            let everywhere = try await auth.post(
                "/v1/auth/password/change",
                #"{"current_password": "brand new passphrase", "new_password": "third passphrase here", "sign_out_other_sessions": true}"#,
                token: first.accessToken)
            #expect(everywhere.status == .ok)
            #expect(try await auth.get("/v1/me", token: other.accessToken).status == .unauthorized)
            #expect(try await auth.get("/v1/me", token: first.accessToken).status == .ok)
        }
    }

    @Test func theAuditTrailRecordsWithoutSecrets() async throws {
        try await TestApp.run(.sqlite) { client, _ in
            let auth = AuthClient(client: client)
            let account = try await auth.account("audit@example.com", "audit passphrase")
            _ = try await auth.login("audit@example.com", "wrong passphrase")
            let session = try await auth.login("audit@example.com", "audit passphrase").json(AuthResponse.self).session
            _ = try await auth.post("/v1/auth/logout", "{}", token: session.accessToken)
            let response = try await client.execute(
                uri: "/admin/v1/audit?user_id=\(account.user.id)", method: .get, headers: TestApp.adminHeaders)
            let events = try response.json(AuditList.self).events
            #expect(events.map(\.event) == ["logout", "login", "login", "signup"])
            #expect(events.map(\.outcome) == ["success", "success", "failure", "success"])
            for secret in ["audit passphrase", "wrong passphrase", session.refreshToken, session.accessToken, account.session.refreshToken] {
                #expect(!response.text.contains(secret))
            }
            let all = try await client.execute(uri: "/admin/v1/audit?limit=2", method: .get, headers: TestApp.adminHeaders)
            #expect(try all.json(AuditList.self).events.count == 2 && all.json(AuditList.self).nextCursor != nil)
        }
    }
}

/// Forged and misused access tokens, each refused with 401.
@Suite struct AccessTokenTests {
    /// The app's real signing key, read from its database, to forge tokens that differ from
    /// genuine ones in one claim only.
    func realKey(_ config: GatehouseConfig) async throws -> (ES256PrivateKey, String) {
        let record = try #require(try await TestApp.withStore(config) { try await $0.allSigningKeys().first })
        return (try ES256PrivateKey(backing: P256.Signing.PrivateKey(rawRepresentation: record.privateKey)), record.kid)
    }

    func sign(_ claims: [String: Any], header: [String: Any], key: ES256PrivateKey) throws -> String {
        func encode(_ object: [String: Any]) throws -> String {
            try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let input = try encode(header) + "." + encode(claims)
        let signature = try P256.Signing.PrivateKey(pemRepresentation: key.pemRepresentation)
            .signature(for: Data(input.utf8)).rawRepresentation.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return input + "." + signature
    }

    /// A well-formed access token for `account`'s session signed with the real key, its time
    /// claims as given.
    func accessToken(
        _ config: GatehouseConfig, _ account: AuthResponse, key: ES256PrivateKey, kid: String, iat: Int, nbf: Int, exp: Int
    ) throws -> String {
        try sign(
            [
                "iss": config.issuer, "aud": "default", "sub": account.user.id, "sid": account.session.sessionID, "iat": iat,
                "nbf": nbf, "exp": exp, "is_anonymous": false, "plan": "free", "email_verified": false,
            ], header: ["alg": "ES256", "typ": "at+jwt", "kid": kid], key: key)
    }

    /// The `Authorization` header as RFC 9110 allows it: the scheme in any case, spaces and tabs
    /// around the token; nothing but whitespace is no token.
    @Test func theBearerHeaderIsReadAsHTTPAllows() async throws {
        try await TestApp.run(.sqlite) { client, _ in
            let account = try await AuthClient(client: client).account("header@example.com")
            let token = account.session.accessToken
            func me(_ authorization: String) async throws -> HTTPResponse.Status {
                try await client.execute(uri: "/v1/me", method: .get, headers: [.authorization: authorization]).status
            }
            #expect(try await me("Bearer \(token)") == .ok)
            #expect(try await me("bearer \(token)") == .ok)
            #expect(try await me("BEARER  \t\(token) \t ") == .ok)
            #expect(try await me("Bearer \t ") == .unauthorized)
            #expect(try await me("Bearer \(token)x") == .unauthorized)
            #expect(try await me("Basic \(token)") == .unauthorized)
        }
    }

    @Test(arguments: Backend.available)
    func forgedAndMisusedTokensAreRefused(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, config in
            let auth = AuthClient(client: client)
            let account = try await auth.account("forge@example.com")
            let (key, kid) = try await realKey(config)
            let now = Int(Date().timeIntervalSince1970)
            let good: [String: Any] = [
                "iss": config.issuer, "aud": "default", "sub": account.user.id, "sid": account.session.sessionID,
                "iat": now, "nbf": now, "exp": now + 600, "is_anonymous": false, "plan": "free", "email_verified": false,
            ]
            let header: [String: Any] = ["alg": "ES256", "typ": "at+jwt", "kid": kid]
            // The control: a token forged with the real key and honest claims works, so every
            // refusal below is caused by the one thing changed.
            #expect(try await auth.get("/v1/me", token: try sign(good, header: header, key: key)).status == .ok)

            var cases: [(String, String)] = []
            func variant(_ name: String, claims change: (inout [String: Any]) -> Void = { _ in }, header headerChange: (inout [String: Any]) -> Void = { _ in }) throws {
                var c = good
                var h = header
                change(&c)
                headerChange(&h)
                cases.append((name, try sign(c, header: h, key: key)))
            }
            try variant("wrong aud", claims: { $0["aud"] = "another-app" })
            try variant("wrong iss", claims: { $0["iss"] = "https://evil.example" })
            try variant("expired", claims: { $0["exp"] = now - 31; $0["iat"] = now - 700; $0["nbf"] = now - 700 })
            try variant("not yet valid", claims: { $0["nbf"] = now + 120 })
            try variant("typ JWT", header: { $0["typ"] = "JWT" })
            try variant("unknown kid", header: { $0["kid"] = "unknown-key" })
            try variant("kid traversal", header: { $0["kid"] = "../../etc/passwd" })
            try variant("other session", claims: { $0["sid"] = UUID().uuidString.lowercased() })
            try variant("no plan claim", claims: { $0.removeValue(forKey: "plan") })
            try variant("sub not an id", claims: { $0["sub"] = "forge@example.com" })

            // alg none with no signature.
            let noneHeader = try JSONSerialization.data(withJSONObject: ["alg": "none", "typ": "at+jwt", "kid": kid]).base64URL
            let payload = try JSONSerialization.data(withJSONObject: good).base64URL
            cases.append(("alg none", noneHeader + "." + payload + "."))
            // HS256 keyed with the public key (the classic confusion attack).
            let hsHeader = try JSONSerialization.data(withJSONObject: ["alg": "HS256", "typ": "at+jwt", "kid": kid]).base64URL
            let publicKey = Data(key.publicKey.pemRepresentation.utf8)
            let mac = HMAC<SHA256>.authenticationCode(for: Data((hsHeader + "." + payload).utf8), using: SymmetricKey(data: publicKey))
            cases.append(("HS256 with the public key", hsHeader + "." + payload + "." + Data(mac).base64URL))
            // A key the server does not know, claiming the real kid.
            cases.append(("foreign key", try sign(good, header: header, key: ES256PrivateKey())))
            // A genuine token with its signature altered or its payload tampered with.
            let genuine = account.session.accessToken
            var altered = Array(genuine)
            altered[altered.count - 5] = altered[altered.count - 5] == "A" ? "B" : "A"
            cases.append(("altered signature", String(altered)))
            let segments = genuine.split(separator: ".")
            var tampered = good
            tampered["sub"] = UUID().uuidString.lowercased()
            cases.append(("tampered payload", segments[0] + "." + (try JSONSerialization.data(withJSONObject: tampered).base64URL) + "." + segments[2]))
            cases.append(("refresh token as access token", account.session.refreshToken))
            cases.append(("empty", ""))

            // Twice each: the second time, a token whose signature held is answered from the
            // verified-token cache, and must be refused the same way.
            for (name, token) in cases + cases {
                let response = try await auth.get("/v1/me", token: token)
                #expect(response.status == .unauthorized, "\(name)")
                #expect(response.error?.code == (name == "expired" ? .tokenExpired : .unauthorized), "\(name)")
            }
        }
    }

    @Test func thirdPartiesVerifyAccessTokensWithTheJWKS() async throws {
        try await TestApp.run(.sqlite) { client, config in
            let auth = AuthClient(client: client)
            let account = try await auth.account("offline@example.com")
            let jwks = try await client.execute(uri: "/.well-known/jwks.json", method: .get)
            let keys = JWTKeyCollection()
            try await keys.add(jwksJSON: jwks.text)
            struct Claims: JWTPayload {
                var sub: SubjectClaim
                var aud: AudienceClaim
                var exp: ExpirationClaim
                func verify(using algorithm: some JWTAlgorithm) throws {
                    try exp.verifyNotExpired()
                    try aud.verifyIntendedAudience(includes: "default")
                }
            }
            let claims = try await keys.verify(account.session.accessToken, as: Claims.self)
            #expect(claims.sub.value == account.user.id)
            _ = config
        }
    }
}

extension Data {
    var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
