import Crypto
import Foundation
@testable import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import Testing

/// Issue 62: a database made by every earlier schema version comes through an upgrade with its
/// accounts, credentials, sessions and rights, proven through HTTP, not by reading tables.
///
/// Each fixture (`Tests/support/schema-fixtures/NNNN.json`, written by
/// `scripts/schema-fixtures.py`) holds the rows a database at version NNNN stored. The test loads
/// one at its version on each database, starts the current server on it (which migrates to the
/// head) with the fixture's secret key and a clock at the fixture's moment, and then signs in,
/// refreshes and reads rights as an app would. What a version did not have yet is not asked of
/// it: each proof runs from the version that brought its rows.
@Suite struct SchemaFixtureTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("support/schema-fixtures")
    static let head = Migrations.all(for: .sqlite).count

    struct Fixture: Sendable {
        let version: Int
        let now: Date
        let known: [String: any Sendable]
        /// Table name and rows, parents before children.
        let tables: [(String, [[String: SQLValue]])]

        init(version: Int) throws {
            let url = SchemaFixtureTests.directory.appendingPathComponent(String(format: "%04d.json", version))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
            self.version = try #require(object["version"] as? Int)
            now = Date(timeIntervalSince1970: TimeInterval(try #require(object["now"] as? Int)))
            known = try #require(object["known"] as? [String: Any]).mapValues { Self.sendable($0) }
            tables = try #require(object["tables"] as? [[String: Any]]).map { table in
                let rows = (table["rows"] as? [[String: Any]] ?? []).map { row in row.mapValues(Self.value) }
                return (table["table"] as? String ?? "", rows)
            }
        }

        static func value(_ json: Any) -> SQLValue {
            switch json {
            case let number as NSNumber: .integer(number.int64Value)
            case let text as String: .text(text)
            // Bad hex is NULL, which every blob column refuses.
            case let object as [String: String]: StripeSignature.hexBytes(object["hex"] ?? "").map(SQLValue.blob) ?? .null
            default: .null
            }
        }

        static func sendable(_ json: Any) -> any Sendable {
            switch json {
            case let text as String: text
            case let object as [String: String]: object
            default: "\(json)"
            }
        }

        func has(_ table: String) -> Bool { tables.contains { $0.0 == table } }
        func rows(_ table: String) -> [[String: SQLValue]] { tables.first { $0.0 == table }?.1 ?? [] }
        func string(_ name: String) throws -> String { try #require(known[name] as? String) }
        func user(_ name: String) throws -> String { try #require((known["users"] as? [String: String])?[name]) }
        var signingKey: [String: String] { known["signing_key"] as? [String: String] ?? [:] }
    }

    /// Every migration has the fixture of its version, so a new migration without one fails here
    /// (and the version before each migration has one to upgrade from).
    @Test func everyMigrationHasItsFixture() throws {
        #expect(Migrations.all(for: .postgres).count == Self.head)
        for version in 1...Self.head {
            let path = Self.directory.appendingPathComponent(String(format: "%04d.json", version)).path
            #expect(FileManager.default.fileExists(atPath: path), "no fixture for schema version \(version): run scripts/schema-fixtures.py")
        }
    }

    static let cases: [(Backend, Int)] = Backend.available.flatMap { backend in (1...head).map { (backend, $0) } }

    /// At most this many fixtures are upgraded and proven at once. Each starts a server and two key
    /// servers and verifies production-cost password hashes (on threads at `nice` 10), and all 66
    /// beside the rest of the parallel run once held requests past the test client's 20-second
    /// read timeout (CI of stop 75: two PostgreSQL cases at the same moment). With four at once,
    /// a local CI run of `e488249` saw it again (version 31 on PostgreSQL, its password sign-ins,
    /// at 436 s into the run): the hashing threads' `nice` 10 leaves them a tenth of a core's share
    /// while the rest of the run keeps both cores busy.
    static let slots = Slots(2)

    @Test(arguments: cases)
    func aDatabaseOfThisVersionComesThroughWithEverything(_ backend: Backend, _ version: Int) async throws {
        await Self.slots.take()
        do {
            try await comesThrough(backend, version)
        } catch {
            await Self.slots.give()
            throw error
        }
        await Self.slots.give()
    }

    func comesThrough(_ backend: Backend, _ version: Int) async throws {
        let fixture = try Fixture(version: version)
        #expect(fixture.version == version)
        let (url, cleanup) = try await Self.load(fixture, on: backend)
        defer { Task { await cleanup() } }
        let clock = ManualClock(fixture.now)
        let google = try FakeProvider(issuer: "https://accounts.google.com", audience: "fixture.apps.googleusercontent.com")
        let apple = try FakeProvider(issuer: "https://appleid.apple.com", audience: "test.fixture.handz")
        try await google.serve { googleKeys in
            try await apple.serve { appleKeys in
                try await TestApp.serve(url, preset: "handz", clock: clock, setup: .live, adjust: {
                    $0.secretKey = try? fixture.string("secret_key")
                    $0.ipLimits = false
                    $0.googleAudiences = [google.audience]
                    $0.googleJWKSURL = googleKeys
                    $0.appleAudiences = [apple.audience]
                    $0.appleJWKSURL = appleKeys
                    PasskeyTests.configure(&$0)
                }) { client, config in
                    try await Proofs(api: AuthClient(client: client), fixture: fixture, clock: clock, config: config, google: google, apple: apple)
                        .all()
                }
            }
        }
    }

    /// A new database of `backend` at the fixture's version holding its rows.
    static func load(_ fixture: Fixture, on backend: Backend) async throws -> (DatabaseURL, @Sendable () async -> Void) {
        let (url, cleanup) = try await TestDatabase.make(backend)
        try await UpgradeSafetyTests.withDatabase(url) { database in
            let shipped = Migrations.all(for: backend == .sqlite ? .sqlite : .postgres)
            try await Migrator(database: database, migrations: Array(shipped.prefix(fixture.version)))
                .migrate(now: Int64(fixture.now.timeIntervalSince1970))
            for (table, rows) in fixture.tables {
                for row in rows {
                    let columns = row.keys.sorted()
                    let marks = Array(repeating: "?", count: columns.count).joined(separator: ", ")
                    try await database.query(
                        "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(marks))", columns.map { row[$0]! })
                }
            }
        }
        return (url, cleanup)
    }

    /// Without the secret key the fixture's secrets were sealed with, or with another one, the
    /// server does not start (it never makes new keys over sealed ones); with it, it does.
    @Test(arguments: Backend.available)
    func sealedSecretsNeedTheirSecretKey(_ backend: Backend) async throws {
        let fixture = try Fixture(version: Self.head)
        let (url, cleanup) = try await Self.load(fixture, on: backend)
        defer { Task { await cleanup() } }
        for secret in [nil, "another-secret-key-of-enough-length-0123456789"] {
            let error = await #expect(throws: (any Error).self, "secret \(secret ?? "none")") {
                try await TestApp.serve(url, preset: "handz", clock: ManualClock(fixture.now), adjust: { $0.secretKey = secret }) { _, _ in }
            }
            // Refused for the sealed material, not for anything else.
            #expect("\(error.map { "\($0)" } ?? "")".contains(secret == nil ? "set GATEHOUSE_SECRET_KEY" : "is not the secret it was encrypted with"))
        }
        let right = try fixture.string("secret_key")
        try await TestApp.serve(url, preset: "handz", clock: ManualClock(fixture.now), adjust: { $0.secretKey = right }) { client, _ in
            let health = try await client.execute(uri: "/health", method: .get)
            #expect(health.status == .ok)
        }
    }

    struct Proofs {
        let api: AuthClient
        let fixture: Fixture
        let clock: ManualClock
        let config: GatehouseConfig
        let google: FakeProvider
        let apple: FakeProvider

        /// Each proof runs whatever the others found, so one lost kind does not hide another.
        func all() async throws {
            var proofs: [(String, () async throws -> Void)] = []
            // First, before the other proofs add to the trail.
            if fixture.has("audit_log") { proofs.append(("audit trail", auditTrailIsKept)) }
            proofs += [("passwords", passwords), ("providers", providers), ("plans and credits", plansAndCredits)]
            if fixture.has("signing_keys") { proofs.append(("signing key", keptSigningKey)) }
            if fixture.has("refresh_tokens") { proofs.append(("refresh", refreshOnceThenReuseIsCaught)) }
            if fixture.has("passkeys") { proofs.append(("passkey", passkeySignsIn)) }
            if fixture.has("mfa_factors") { proofs.append(("second factor", secondFactorIsAsked)) }
            if fixture.has("mfa_recovery_codes") { proofs.append(("recovery code", recoveryCodeSignsIn)) }
            if fixture.has("oauth_clients") { proofs.append(("OpenID client", openIDClientExchanges)) }
            if fixture.has("events") { proofs.append(("events", eventsAreKept)) }
            if fixture.has("usage_records") { proofs.append(("usage and Stripe", usageAndStripeAreExported)) }
            // Last: it changes the password the others sign in with.
            if fixture.has("email_tokens") { proofs.append(("reset link", resetLinkWorksOnce)) }
            for (name, proof) in proofs {
                do { try await proof() } catch { Issue.record("v\(fixture.version), \(name): \(error)") }
            }
        }

        /// Signs in with the password, answering the account's id.
        func signIn(_ email: String, _ password: String) async throws -> AuthResponse {
            let response = try await api.login(email, password)
            #expect(response.status == .ok, "v\(fixture.version) \(email): \(response.text)")
            return try #require(try response.json(SignInAnswer<AuthResponse>.self).signedIn, "v\(fixture.version) \(email): \(response.text)")
        }

        /// Argon2id at the production cost, an imported bcrypt hash and a Firebase scrypt hash
        /// sign in as they did.
        func passwords() async throws {
            let argon = try await signIn("password@fixture.test", try fixture.string("password"))
            #expect(argon.user.id == (try fixture.user("password")))
            let bcrypt = try await signIn("bcrypt@fixture.test", try fixture.string("bcrypt_password"))
            #expect(bcrypt.user.id == (try fixture.user("bcrypt")))
            let wrong = try await api.login("password@fixture.test", "not the password at all")
            #expect(wrong.status == .unauthorized)
            // Imported from Firebase (version 17 on): the hash names its project's parameters,
            // kept sealed in server_secrets.
            if fixture.rows("users").contains(where: { $0["email"] == .text("firebase@fixture.test") }) {
                let firebase = try await signIn("firebase@fixture.test", try fixture.string("firebase_password"))
                #expect(firebase.user.id == (try fixture.user("firebase")))
            }
        }

        /// Google and Apple sign the same accounts in by their subjects (the identities kept), and the Google
        /// account's verified phone number (version 22 on) is still its own.
        func providers() async throws {
            // No address in the token: only the kept identity can name the account.
            let token = try google.token(sub: "fixture-google-subject", now: clock.now)
            let signedIn = try await api.post("/v1/auth/google", #"{"id_token": "\#(token)"}"#)
            #expect(signedIn.status == .ok, "v\(fixture.version): \(signedIn.text)")
            let answer = try signedIn.json(AuthResponse.self)
            #expect(answer.user.id == (try fixture.user("google")))
            #expect(signedIn.text.contains(#""created":false"#), "v\(fixture.version): \(signedIn.text)")
            if fixture.version >= 22 {
                let me = try await api.get("/v1/me", token: answer.session.accessToken)
                let user = try #require(try JSONSerialization.jsonObject(with: Data(me.body.readableBytesView)) as? [String: Any])["user"] as? [String: Any]
                #expect(user?["phone"] as? String == "+447700900123", "v\(fixture.version): \(me.text)")
            }
            let nonce = "fixture-nonce"
            let appleToken = try apple.token(
                sub: "000123.fixture.apple", extra: ["nonce": FakeProvider.sha256Hex(nonce)], now: clock.now)
            let appleAnswer = try await api.post("/v1/auth/apple", #"{"id_token": "\#(appleToken)", "raw_nonce": "\#(nonce)"}"#)
            #expect(appleAnswer.status == .ok, "v\(fixture.version): \(appleAnswer.text)")
            #expect(try appleAnswer.json(AuthResponse.self).user.id == (try fixture.user("apple")))
        }

        /// An access token signed by the fixture's key before the upgrade still verifies: the
        /// sealed key was opened with the same secret and is still published.
        func keptSigningKey() async throws {
            let kid = try #require(fixture.signingKey["kid"])
            let jwks = try await api.get("/.well-known/jwks.json", token: nil)
            #expect(jwks.text.contains(kid), "v\(fixture.version): \(jwks.text)")
            guard fixture.has("sessions") else { return }
            let encoded = try #require(fixture.signingKey["d"])
            let d = try #require(Data(base64URLEncoded: encoded))
            let key = try ES256PrivateKey(backing: P256.Signing.PrivateKey(rawRepresentation: d))
            let now = Int64(clock.now.timeIntervalSince1970)
            let claims: [String: Any] = [
                "iss": config.issuer, "aud": config.audience, "sub": try fixture.user("password"), "sid": try fixture.string("session"),
                "iat": now - 60, "nbf": now - 60, "exp": now + 600, "is_anonymous": false, "plan": "free", "email_verified": true,
            ]
            let token = try AccessTokenTests().sign(claims, header: ["alg": "ES256", "typ": "at+jwt", "kid": kid], key: key)
            let me = try await api.get("/v1/me", token: token)
            #expect(me.status == .ok, "v\(fixture.version): \(me.text)")
            #expect(me.text.contains(try fixture.user("password")))
        }

        /// The stored refresh token rotates once to the successor the kept chain key gives;
        /// presented again after the reuse interval it ends its session.
        func refreshOnceThenReuseIsCaught() async throws {
            let token = try fixture.string("refresh_token")
            let first = try await api.refresh(token)
            #expect(first.status == .ok, "v\(fixture.version): \(first.text)")
            let successor = try first.json(SessionResponse.self).session.refreshToken
            if let key = fixture.known["refresh_chain_key"] as? String, fixture.has("server_secrets") {
                let chainKey = try #require(StripeSignature.hexBytes(key))
                let expected = Data(HMAC<SHA256>.authenticationCode(for: Data(token.utf8), using: SymmetricKey(data: chainKey)))
                #expect(successor == expected.base64URLEncoded, "v\(fixture.version): the chain key was not kept")
            }
            clock.advance(by: 11)
            let reused = try await api.refresh(token)
            #expect(reused.status == .unauthorized, "v\(fixture.version): \(reused.text)")
            let after = try await api.refresh(successor)
            #expect(after.status == .unauthorized && after.error?.code == .sessionRevoked, "v\(fixture.version): \(after.text)")
            // The anonymous account's session is untouched by the other family's end.
            let anonymous = try await api.refresh(try fixture.string("anonymous_refresh_token"))
            #expect(anonymous.status == .ok, "v\(fixture.version): \(anonymous.text)")
        }

        /// The free account's spent credit (version 8 on), the App Store subscription (10 on) and
        /// the operator's grant (23 on) are what they were.
        func plansAndCredits() async throws {
            let free = try await signIn("password@fixture.test", try fixture.string("password"))
            let rights = try await api.get("/v1/entitlements", token: free.session.accessToken).json(EntitlementsPayload.self)
            #expect(rights.plan == .free && rights.credits["practice"]?.remaining == (fixture.has("credit_ledger") ? 2 : 3), "v\(fixture.version)")
            let pro = try await signIn("pro@fixture.test", try fixture.string("password"))
            let proRights = try await api.get("/v1/entitlements", token: pro.session.accessToken).json(EntitlementsPayload.self)
            #expect(proRights.plan == (fixture.has("subscriptions") ? .pro : .free), "v\(fixture.version)")
            let granted = try await signIn("bcrypt@fixture.test", try fixture.string("bcrypt_password"))
            let grantedRights = try await api.get("/v1/entitlements", token: granted.session.accessToken).json(EntitlementsPayload.self)
            #expect(grantedRights.plan == (fixture.has("plan_grants") ? .pro : .free), "v\(fixture.version)")
        }

        /// The confirmed TOTP factor is asked for at sign-in and its code, from the kept
        /// secret, completes it.
        func secondFactorIsAsked() async throws {
            let login = try await api.login("totp@fixture.test", try fixture.string("totp_password"))
            let challenge = try #require(try login.json(SignInAnswer<AuthResponse>.self).challenge, "v\(fixture.version): \(login.text)")
            let factor = try #require(challenge.factors.first)
            let encodedSecret = try fixture.string("totp_secret")
            let secret = try #require(Base32.decode(encodedSecret))
            let totp = TOTP(secret: secret) { key, message in
                Array(HMAC<Crypto.Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: key)))
            }
            let verified = try await api.post(
                "/v1/auth/mfa/verify", #"{"challenge_id": "\#(challenge.challengeID)", "factor_id": "\#(factor.id)", "code": "\#(totp.code(at: clock.now))"}"#)
            #expect(verified.status == .ok, "v\(fixture.version): \(verified.text)")
            #expect(try verified.json(MFAVerifyResponse.self).user?.id == (try fixture.user("totp")))
        }

        /// The stored passkey signs in with the tests' authenticator holding its key: the
        /// credential id, public key and counter were kept.
        func passkeySignsIn() async throws {
            try #require(SoftAuthenticator.isAvailable, "GATEHOUSE_TEST_PYTHON with soft-webauthn")
            let stored = try #require(fixture.known["passkey"] as? [String: String])
            let flow = PasskeyTests.Flow(api: api, device: try SoftAuthenticator())
            _ = try await flow.device.call([
                "cmd": "import", "device": "phone", "rp_id": stored["rp_id"] ?? "", "user_handle": stored["user_handle"] ?? "",
                "credential_id": stored["credential_id"] ?? "", "private_key": stored["private_key"] ?? "",
                "sign_count": Int(stored["sign_count"] ?? "") ?? 0,
            ])
            let signedIn = try await flow.signIn("phone")
            #expect(signedIn.status == .ok, "v\(fixture.version): \(signedIn.text)")
            #expect(try signedIn.json(AuthResponse.self).user.id == (try fixture.user("passkey")))
        }

        /// A recovery code stored before the upgrade (keyed by the kept chain key) completes a
        /// sign-in in place of the authenticator.
        func recoveryCodeSignsIn() async throws {
            let login = try await api.login("totp@fixture.test", try fixture.string("totp_password"))
            let challenge = try #require(try login.json(SignInAnswer<AuthResponse>.self).challenge, "v\(fixture.version): \(login.text)")
            let verified = try await api.post(
                "/v1/auth/mfa/verify", #"{"challenge_id": "\#(challenge.challengeID)", "recovery_code": "\#(try fixture.string("recovery_code"))"}"#)
            #expect(verified.status == .ok, "v\(fixture.version): \(verified.text)")
        }

        /// The operator's audit trail still holds the sign-in recorded before the upgrade.
        func auditTrailIsKept() async throws {
            let trail = try await api.client.execute(uri: "/admin/v1/audit?limit=200", method: .get, headers: TestApp.adminHeaders)
            let auditID = try fixture.string("audit_id")
            #expect(trail.status == .ok && String(buffer: trail.body).contains(auditID), "v\(fixture.version): \(String(buffer: trail.body))")
        }

        /// The event feed still lists what happened before the upgrade.
        func eventsAreKept() async throws {
            let feed = try await api.client.execute(uri: "/admin/v1/events", method: .get, headers: TestApp.adminHeaders)
            let eventID = try fixture.string("event_id")
            #expect(feed.status == .ok && String(buffer: feed.body).contains(eventID), "v\(fixture.version): \(String(buffer: feed.body))")
        }

        /// The pro account's metered use (version 13 on) and its Stripe customer and
        /// subscription (23 on) are in its export as they were.
        func usageAndStripeAreExported() async throws {
            let pro = try await signIn("pro@fixture.test", try fixture.string("password"))
            let export = try await api.get("/v1/me/export", token: pro.session.accessToken)
            #expect(export.status == .ok, "v\(fixture.version): \(export.text)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(export.body.readableBytesView)) as? [String: Any])
            func list(_ key: String) -> [[String: Any]] { object[key] as? [[String: Any]] ?? [] }
            #expect(list("usage_records").map { $0["meter"] as? String } == ["share_links"], "v\(fixture.version): \(export.text)")
            #expect(list("usage_meters").map { $0["used"] as? Int } == [1], "v\(fixture.version): \(export.text)")
            let stripe = fixture.has("stripe_customers")
            let customers = object["stripe_customers"] as? [Any] ?? []
            #expect(customers.count == (stripe ? 1 : 0) && export.text.contains("cus_FixtureCustomer") == stripe, "v\(fixture.version): \(customers)")
            #expect(list("stripe_subscriptions").map { $0["subscription_id"] as? String } == (stripe ? ["sub_FixtureSubscription"] : []),
                "v\(fixture.version): \(export.text)")
        }

        /// The reset link mailed before the upgrade sets a new password once.
        func resetLinkWorksOnce() async throws {
            let body = #"{"token": "\#(try fixture.string("reset_token"))", "password": "a new passphrase for the fixture"}"#
            let reset = try await api.post("/v1/auth/password/reset", body)
            #expect(reset.status == .ok, "v\(fixture.version): \(reset.text)")
            let again = try await api.post("/v1/auth/password/reset", body)
            #expect(again.error?.code == .tokenInvalid, "v\(fixture.version): \(again.text)")
            _ = try await signIn("password@fixture.test", "a new passphrase for the fixture")
        }

        /// The registered OpenID client still authenticates with its secret and gets a token.
        func openIDClientExchanges() async throws {
            let basic = Data("\(try fixture.string("client_id")):\(try fixture.string("client_secret"))".utf8).base64EncodedString()
            let response = try await api.client.execute(
                uri: "/oauth/token", method: .post,
                headers: [.authorization: "Basic \(basic)", .contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: "grant_type=client_credentials&scope=api%3Aread"))
            #expect(response.status == .ok, "v\(fixture.version): \(String(buffer: response.body))")
        }
    }
}

/// A count of places: ``take()`` waits for one, ``give()`` hands it to the next waiter.
actor Slots {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(_ count: Int) { free = count }

    func take() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func give() {
        if waiting.isEmpty { free += 1 } else { waiting.removeFirst().resume() }
    }
}
