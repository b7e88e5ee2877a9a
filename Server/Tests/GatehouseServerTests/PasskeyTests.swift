import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Passkeys end to end over HTTP: a software authenticator (soft-webauthn's keys, the bytes a
/// platform authenticator sends) registers and signs in against a live server on both
/// databases, py_webauthn checks the same payloads as an independent relying party, and every
/// refusal the issue lists is asked for by tampering with exactly one thing.
@Suite(.requires(SoftAuthenticator.isAvailable, "GATEHOUSE_TEST_PYTHON with soft-webauthn and webauthn"))
struct PasskeyTests {
    static let rpID = "gatehouse.test"
    /// What an iOS app's `ASAuthorizationPlatformPublicKeyCredentialProvider` reports.
    static let nativeOrigin = "https://gatehouse.test"
    static let webOrigin = "https://app.gatehouse.test"

    static func configure(_ config: inout GatehouseConfig) {
        config.relyingParty = RelyingParty(id: rpID, webOrigins: [webOrigin], appleAppIDs: ["ABCDE12345.test.gatehouse.app"])
        config.ipLimits = false
    }

    /// The calls an app makes, with the authenticator playing the device.
    struct Flow {
        let api: AuthClient
        let device: SoftAuthenticator

        func registrationOptions(token: String? = nil, email: String? = nil) async throws -> PasskeyCreationChallenge {
            let body = try SoftAuthenticator.json(email.map { ["email": $0] } ?? [:])
            let response = try await api.post("/v1/passkeys/registration/options", body, token: token)
            #expect(response.status == .ok, "\(response.text)")
            return try response.json(PasskeyCreationChallenge.self)
        }

        func verifyRegistration(_ challengeID: String, _ credential: [String: Any], token: String? = nil, name: String? = nil) async throws
            -> TestResponse
        {
            var body: [String: Any] = ["challenge_id": challengeID, "credential": credential]
            if let name { body["name"] = name }
            return try await api.post("/v1/passkeys/registration/verify", try SoftAuthenticator.json(body), token: token)
        }

        func signInOptions(email: String? = nil) async throws -> PasskeyRequestChallenge {
            let response = try await api.post("/v1/passkeys/authentication/options", try SoftAuthenticator.json(email.map { ["email": $0] } ?? [:]))
            #expect(response.status == .ok, "\(response.text)")
            return try response.json(PasskeyRequestChallenge.self)
        }

        func verifySignIn(_ challengeID: String, _ credential: [String: Any]) async throws -> TestResponse {
            try await api.post(
                "/v1/passkeys/authentication/verify", try SoftAuthenticator.json(["challenge_id": challengeID, "credential": credential]))
        }

        /// A passkey sign-up on `device`: 201 with the account and its session.
        func signUp(_ name: String, email: String? = nil, synced: Bool = false) async throws -> AuthResponse {
            let options = try await registrationOptions(email: email)
            let credential = try await device.create(name, options: options.options, origin: nativeOrigin, synced: synced)
            let response = try await verifyRegistration(options.challengeID, credential)
            #expect(response.status == .created, "\(response.text)")
            return try response.json(AuthResponse.self)
        }

        /// A discoverable sign-in with `device`'s newest passkey.
        func signIn(_ name: String, tamper: [String: Any] = [:], origin: String = nativeOrigin) async throws -> TestResponse {
            let options = try await signInOptions()
            return try await verifySignIn(options.challengeID, try await device.get(name, options: options.options, origin: origin, tamper: tamper))
        }
    }

    static func flow(_ client: any TestClientProtocol) throws -> Flow {
        Flow(api: AuthClient(client: client), device: try SoftAuthenticator())
    }

    @Test(arguments: Backend.available)
    func signUpAndSignInWithAPasskeyOnly(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live, adjust: Self.configure) { client, config in
            let flow = try Self.flow(client)
            let options = try await flow.registrationOptions()
            #expect(options.options.rp.id == Self.rpID)
            #expect(options.options.pubKeyCredParams.map(\.alg) == [-7])
            #expect(options.options.authenticatorSelection.userVerification == "required")
            #expect(options.options.authenticatorSelection.residentKey == "required")
            #expect(try #require(Data(base64URLEncoded: options.options.challenge)).count >= 16)
            let credential = try await flow.device.create("phone", options: options.options, origin: Self.nativeOrigin)
            // py_webauthn, a relying party of its own, accepts the very payload the server will get.
            let independent = try await flow.device.call([
                "cmd": "verify_registration", "credential": credential, "expected_challenge": options.options.challenge,
                "expected_origin": Self.nativeOrigin, "expected_rp_id": Self.rpID, "require_user_verification": true,
            ])
            #expect(independent["ok"] as? Bool == true, "\(independent)")
            let response = try await flow.verifyRegistration(options.challengeID, credential, name: "My iPhone")
            #expect(response.status == .created, "\(response.text)")
            let account = try response.json(AuthResponse.self)
            #expect(account.user.email == nil)
            #expect(account.user.identities.isEmpty)
            #expect(!account.user.isAnonymous)
            // The user handle the device holds is the account's id.
            let held = try await flow.device.credential("phone")
            #expect(held["user_handle"] as? String == Data(account.user.id.utf8).base64URLEncoded)
            let claims = try jwtParts(account.session.accessToken).claims
            let amr = try #require(claims["amr"] as? [[String: Any]])
            #expect(amr.map { $0["method"] as? String } == ["passkey"])

            // A discoverable sign-in: no address, the device picks its passkey.
            let signIn = try await flow.signIn("phone")
            #expect(signIn.status == .ok, "\(signIn.text)")
            let session = try signIn.json(AuthResponse.self)
            #expect(session.user.id == account.user.id)
            #expect(try jwtParts(session.session.accessToken).claims["sub"] as? String == account.user.id)
            #expect((try jwtParts(session.session.accessToken).claims["amr"] as? [[String: Any]])?.first?["method"] as? String == "passkey")
            // A second sign-in: the counter grew, and the same tokens work like any session's.
            #expect(try await flow.signIn("phone").status == .ok)
            let me = try await flow.api.get("/v1/me", token: session.session.accessToken)
            #expect(me.status == .ok)

            let listed = try await flow.api.get("/v1/passkeys", token: session.session.accessToken)
            let passkeys = try listed.json(PasskeysResponse.self).passkeys
            #expect(passkeys.count == 1)
            #expect(passkeys.first?.name == "My iPhone")
            #expect(passkeys.first?.backedUp == false)
            #expect(passkeys.first?.lastUsedAt != nil)
            #expect(listed.text.contains(#""last_used_at""#))
            // The admin view lists it; the audit trail has its creation and its use.
            let admin = try await client.execute(uri: "/admin/v1/users/\(account.user.id)", method: .get, headers: TestApp.adminHeaders)
            #expect(try admin.json(AdminUser.self).passkeys.map(\.name) == ["My iPhone"])
            let audit = try await TestApp.withStore(config) { store in
                try await store.auditEvents(userID: UserID(account.user.id), before: nil, limit: 50).map {
                    "\($0.event.rawValue) \($0.outcome.rawValue) \($0.details.sorted { $0.key < $1.key })"
                }
            }
            #expect(audit.contains { $0.hasPrefix("passkey_added success") })
            #expect(audit.filter { $0.hasPrefix("login success") && $0.contains("passkey") }.count == 2, "\(audit)")
        }
    }

    @Test(arguments: Backend.available)
    func signInByEmailListsTheAccountsPasskeys(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live, adjust: Self.configure) { client, config in
            let flow = try Self.flow(client)
            let account = try await flow.signUp("laptop", email: "pia@example.com", synced: true)
            #expect(account.user.email == "pia@example.com")
            #expect(account.user.emailVerified == false)
            let options = try await flow.signInOptions(email: "pia@example.com")
            let held = try await flow.device.credential("laptop")
            #expect(options.options.allowCredentials.map(\.id) == [held["credential_id"] as? String])
            // An unknown address, and an account without passkeys, get one id no device holds:
            // the same each time for the address, another for another address, shaped like a
            // platform passkey's. Signing with it finds no credential.
            let unknown = try await flow.signInOptions(email: "nobody@example.com")
            let decoy = try #require(unknown.options.allowCredentials.first)
            #expect(unknown.options.allowCredentials.count == 1 && decoy.transports == ["internal", "hybrid"])
            // Finding 7 (issue 39): as long as a real one (it was 20 bytes against 32).
            let heldID = try #require(held["credential_id"] as? String)
            let realLength = try #require(Data(base64URLEncoded: heldID)).count
            #expect(Data(base64URLEncoded: decoy.id)?.count == realLength)
            #expect(try await flow.signInOptions(email: "NoBody@example.com").options.allowCredentials == [decoy])
            let passwordOnly = try await flow.api.signup("pw.only@example.com", "correct horse battery staple")
            #expect(passwordOnly.status == .created, "\(passwordOnly.text)")
            let other = try await flow.signInOptions(email: "pw.only@example.com").options.allowCredentials
            #expect(other.count == 1 && other != [decoy] && other.first?.transports == decoy.transports)
            var anyPasskey = unknown.options
            anyPasskey.allowCredentials = []
            let guessed = try await flow.verifySignIn(
                unknown.challengeID, try await flow.device.get("laptop", options: anyPasskey, origin: Self.webOrigin, tamper: ["credential_id": decoy.id]))
            #expect(guessed.status == .unauthorized && guessed.error?.reasons == ["unknown_credential"], "\(guessed.text)")
            // A synced passkey (BE and BS set) sends 0 every time; that is allowed.
            for _ in 0..<2 {
                let again = try await flow.signInOptions(email: "pia@example.com")
                let response = try await flow.verifySignIn(
                    again.challengeID, try await flow.device.get("laptop", options: again.options, origin: Self.webOrigin))
                #expect(response.status == .ok, "\(response.text)")
            }
            let token = try await flow.signIn("laptop").json(AuthResponse.self).session.accessToken
            let listed = try await flow.api.get("/v1/passkeys", token: token).json(PasskeysResponse.self).passkeys
            #expect(listed.first?.backedUp == true)
            // Ceremonies never finished are purged once expired, and not before.
            let open = try await flow.signInOptions()
            let purged = try await TestApp.withStore(config) { store in
                (try await store.purgePasskeyChallenges(before: Date()), try await store.purgePasskeyChallenges(before: Date().addingTimeInterval(301)))
            }
            #expect(purged.0 == 0 && purged.1 >= 1, "\(purged)")
            #expect(try await flow.verifySignIn(open.challengeID, try await flow.device.get("laptop", options: open.options, origin: Self.webOrigin)).error?.code == .challengeInvalid)
            // Sign-up with an address someone has is refused before any ceremony.
            let taken = try await flow.api.post("/v1/passkeys/registration/options", #"{"email": "pia@example.com"}"#)
            #expect(taken.status == .conflict && taken.error?.code == .emailInUse)
        }
    }

    @Test(arguments: Backend.available)
    func anAnonymousAccountUpgradesToAPasskeyKeepingItsID(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live, adjust: Self.configure) { client, config in
            let flow = try Self.flow(client)
            let anonymous = try await flow.api.post("/v1/auth/anonymous", "")
            #expect(anonymous.status == .created)
            let guest = try anonymous.json(AnonymousResponse.self)
            let token = guest.session.accessToken
            let options = try await flow.registrationOptions(token: token)
            #expect(options.options.user.id == Data(guest.user.id.utf8).base64URLEncoded)
            let credential = try await flow.device.create("phone", options: options.options, origin: Self.nativeOrigin)
            let added = try await flow.verifyRegistration(options.challengeID, credential, token: token)
            #expect(added.status == .ok, "\(added.text)")
            #expect(try added.json(PasskeyRegistrationResponse.self).passkey?.name == "Passkey")
            let me = try await flow.api.get("/v1/me", token: token).json(MeResponse.self)
            #expect(me.user.id == guest.user.id)
            #expect(me.user.isAnonymous == false)
            let signIn = try await flow.signIn("phone")
            #expect(try signIn.json(AuthResponse.self).user.id == guest.user.id)
            let events = try await TestApp.withStore(config) { store in try await store.events(after: nil, userID: nil, limit: 100).map(\.type.rawValue) }
            #expect(events.contains("user.upgraded"))
            #expect(events.contains("passkey.added"))
        }
    }

    @Test(arguments: Backend.available)
    func managingPasskeysNeverRemovesTheLastWayIn(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, clock: clock, setup: .live, adjust: Self.configure) { client, config in
            let flow = try Self.flow(client)
            let account = try await flow.signUp("phone")
            let token = account.session.accessToken
            let first = try #require(try await flow.api.get("/v1/passkeys", token: token).json(PasskeysResponse.self).passkeys.first)
            let lone = try await client.execute(uri: "/v1/passkeys/\(first.id)", method: .delete, headers: [.authorization: "Bearer \(token)"])
            #expect(lone.status == .conflict && lone.error?.code == .lastIdentity)
            // A second passkey needs a recent sign-in: 403 once the session is six minutes old.
            clock.advance(by: 360)
            let fresh = try await flow.signIn("phone").json(AuthResponse.self).session.accessToken
            let stale = try await flow.api.post("/v1/passkeys/registration/options", "{}", token: try await Self.refreshed(flow, account))
            #expect(stale.status == .forbidden && stale.error?.code == .reauthenticationRequired)
            let options = try await flow.registrationOptions(token: fresh)
            let held = try await flow.device.credential("phone")
            #expect(options.options.excludeCredentials.map(\.id) == [held["credential_id"] as? String])
            let second = try await flow.device.create("tablet", options: options.options, origin: Self.nativeOrigin)
            #expect(try await flow.verifyRegistration(options.challengeID, second, token: fresh, name: "iPad").status == .ok)
            let renamed = try await client.execute(
                uri: "/v1/passkeys/\(first.id)", method: .patch,
                headers: [.authorization: "Bearer \(fresh)", .contentType: "application/json"], body: ByteBuffer(string: #"{"name": "Old phone"}"#))
            #expect(try renamed.json(PasskeyResponse.self).passkey.name == "Old phone")
            let removed = try await client.execute(uri: "/v1/passkeys/\(first.id)", method: .delete, headers: [.authorization: "Bearer \(fresh)"])
            #expect(removed.status == .noContent)
            let gone = try await client.execute(uri: "/v1/passkeys/\(first.id)", method: .delete, headers: [.authorization: "Bearer \(fresh)"])
            #expect(gone.status == .notFound)
            // The removed passkey no longer signs in.
            let options2 = try await flow.signInOptions()
            let oldAssertion = try await flow.device.get("phone", options: options2.options, origin: Self.nativeOrigin)
            let refused = try await flow.verifySignIn(options2.challengeID, oldAssertion)
            #expect(refused.status == .unauthorized && refused.error?.code == .invalidCredential)
            #expect(refused.error?.reasons == ["unknown_credential"])
            let events = try await TestApp.withStore(config) { store in try await store.events(after: nil, userID: nil, limit: 100).map(\.type.rawValue) }
            #expect(events.filter { $0 == "passkey.added" }.count == 2)
            #expect(events.contains("passkey.removed"))
        }
    }

    @Test(arguments: Backend.available)
    func aPasskeyProvesItsOwnerBeforeDeletion(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, clock: clock, setup: .live, adjust: Self.configure) { client, _ in
            let flow = try Self.flow(client)
            let account = try await flow.signUp("phone")
            clock.advance(by: 600)
            let token = try await Self.refreshed(flow, account)
            let withoutProof = try await client.execute(uri: "/v1/me", method: .delete, headers: [.authorization: "Bearer \(token)", .contentType: "application/json"], body: ByteBuffer(string: "{}"))
            #expect(withoutProof.status == .forbidden && withoutProof.error?.code == .reauthenticationRequired)
            let options = try await flow.signInOptions()
            let assertion = try await flow.device.get("phone", options: options.options, origin: Self.nativeOrigin)
            let body = try SoftAuthenticator.json(["passkey": ["challenge_id": options.challengeID, "credential": assertion]])
            let deleted = try await client.execute(
                uri: "/v1/me", method: .delete, headers: [.authorization: "Bearer \(token)", .contentType: "application/json"], body: ByteBuffer(string: body))
            #expect(deleted.status == .noContent, "\(deleted.text)")
            #expect(try await flow.signIn("phone").status == .unauthorized)
        }
    }

    /// Each refusal the issue lists, with its code and reason; the account still signs in after.
    @Test(arguments: Backend.available)
    func everyTamperedAnswerIsRefusedWithItsReason(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live, adjust: Self.configure) { client, config in
            let flow = try Self.flow(client)
            let registrations: [(tamper: [String: Any], origin: String, reason: String)] = [
                ([:], "https://evil.test", "origin_mismatch"),
                (["rp_id": "evil.test"], Self.nativeOrigin, "rp_id_mismatch"),
                (["up": false], Self.nativeOrigin, "user_presence_missing"),
                (["uv": false], Self.nativeOrigin, "user_verification_missing"),
                (["bs": true, "be": false], Self.nativeOrigin, "backup_state_invalid"),
                (["type": "webauthn.get"], Self.nativeOrigin, "type_mismatch"),
                (["attestation": "packed-rs256"], Self.nativeOrigin, "unsupported_attestation"),
                (["attestation": "fido-u2f"], Self.nativeOrigin, "unsupported_attestation"),
                (["cose_alg": -8], Self.nativeOrigin, "unsupported_algorithm"),
                (["cbor": "truncated"], Self.nativeOrigin, "malformed"),
                (["cbor": "indefinite"], Self.nativeOrigin, "malformed"),
                (["cbor": "deep"], Self.nativeOrigin, "malformed"),
                (["cbor": "tag"], Self.nativeOrigin, "malformed"),
                (["cbor": "float"], Self.nativeOrigin, "malformed"),
            ]
            for (index, case_) in registrations.enumerated() {
                let options = try await flow.registrationOptions()
                let credential = try await flow.device.create("bad\(index)", options: options.options, origin: case_.origin, tamper: case_.tamper)
                let response = try await flow.verifyRegistration(options.challengeID, credential)
                #expect(response.status == .badRequest, "\(case_.tamper): \(response.text)")
                #expect(response.error?.code == .invalidCredential && response.error?.reasons == [case_.reason], "\(case_.tamper): \(response.text)")
            }
            // Packed self-attestation (ES256) is accepted.
            let packedOptions = try await flow.registrationOptions()
            let packed = try await flow.device.create("packed", options: packedOptions.options, origin: Self.webOrigin, tamper: ["attestation": "packed"])
            #expect(try await flow.verifyRegistration(packedOptions.challengeID, packed).status == .created)

            // A replayed challenge, and a challenge of the other ceremony.
            let options = try await flow.registrationOptions()
            let credential = try await flow.device.create("phone", options: options.options, origin: Self.nativeOrigin)
            #expect(try await flow.verifyRegistration(options.challengeID, credential).status == .created)
            let replay = try await flow.verifyRegistration(options.challengeID, credential)
            #expect(replay.status == .badRequest && replay.error?.code == .challengeInvalid)
            let other = try await flow.signInOptions()
            let crossed = try await flow.verifyRegistration(other.challengeID, credential)
            #expect(crossed.status == .badRequest && crossed.error?.code == .challengeInvalid)

            // A credential id registered already, to another account (a unique key across accounts).
            let twiceOptions = try await flow.registrationOptions()
            let twice = try await flow.device.create("twice", options: twiceOptions.options, origin: Self.nativeOrigin)
            let twiceRawID = try #require(twice["rawId"] as? String)
            let twiceID = try #require(Data(base64URLEncoded: twiceRawID))
            let owner = try await flow.signUp("owner")
            try await TestApp.withStore(config) { store in
                try await store.insertPasskey(
                    Passkey(userID: try #require(UserID(owner.user.id)), credentialID: Array(twiceID), publicKey: [0xa0], signCount: 0,
                            backupEligible: false, backedUp: false, transports: [], aaguid: [], name: "planted", createdAt: Date()))
            }
            let inUse = try await flow.verifyRegistration(twiceOptions.challengeID, twice)
            #expect(inUse.status == .conflict && inUse.error?.code == .credentialInUse, "\(inUse.text)")

            // Sign-in refusals: 401 with the reason.
            let assertions: [(tamper: [String: Any], origin: String, reason: String)] = [
                ([:], "https://evil.test", "origin_mismatch"),
                (["rp_id": "evil.test"], Self.nativeOrigin, "rp_id_mismatch"),
                (["up": false], Self.nativeOrigin, "user_presence_missing"),
                (["uv": false], Self.nativeOrigin, "user_verification_missing"),
                (["signature": "flip"], Self.nativeOrigin, "signature_invalid"),
                (["be": true, "bs": true], Self.nativeOrigin, "backup_eligibility_changed"),
                (["type": "webauthn.create"], Self.nativeOrigin, "type_mismatch"),
                (["credential_id": Data(repeating: 7, count: 32).base64URLEncoded], Self.nativeOrigin, "unknown_credential"),
                (["user_handle": Data("someone-else".utf8).base64URLEncoded], Self.nativeOrigin, "user_handle_mismatch"),
            ]
            for case_ in assertions {
                let response = try await flow.signIn("phone", tamper: case_.tamper, origin: case_.origin)
                #expect(response.status == .unauthorized, "\(case_.tamper): \(response.text)")
                #expect(response.error?.code == .invalidCredential && response.error?.reasons == [case_.reason], "\(case_.tamper): \(response.text)")
            }
            // The counter: it stands at the highest value the device sent; one going back is a clone.
            #expect(try await flow.signIn("phone", tamper: ["sign_count": 50]).status == .ok)
            let backwards = try await flow.signIn("phone", tamper: ["sign_count": 49])
            #expect(backwards.status == .unauthorized && backwards.error?.reasons == ["sign_count_regressed"])
            #expect(try await flow.signIn("phone", tamper: ["sign_count": 51]).status == .ok)
            // A replayed assertion: its challenge is gone.
            let replayOptions = try await flow.signInOptions()
            let assertion = try await flow.device.get("phone", options: replayOptions.options, origin: Self.nativeOrigin)
            #expect(try await flow.verifySignIn(replayOptions.challengeID, assertion).status == .ok)
            let replayed = try await flow.verifySignIn(replayOptions.challengeID, assertion)
            #expect(replayed.status == .badRequest && replayed.error?.code == .challengeInvalid)
            // Garbage is a 400 or 401 with a code, never a 500.
            let garbage = try await flow.verifySignIn(
                replayOptions.challengeID,
                ["id": "x", "rawId": "!!", "type": "public-key", "response": ["clientDataJSON": "", "authenticatorData": "", "signature": ""]])
            #expect(garbage.status == .unauthorized && garbage.error?.reasons == ["malformed"])
        }
    }

    /// 20 verifications of one assertion released together sign in once.
    @Test(arguments: Backend.available)
    func twentyParallelVerificationsOfOneAssertionSignInOnce(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live, adjust: Self.configure) { client, _ in
            let flow = try Self.flow(client)
            _ = try await flow.signUp("phone")
            let options = try await flow.signInOptions()
            let assertion = try await flow.device.get("phone", options: options.options, origin: Self.nativeOrigin)
            let body = try SoftAuthenticator.json(["challenge_id": options.challengeID, "credential": assertion])
            let port = try #require(client.port)
            let answers = try await BurstGate.exclusive {
                try await LastByteRace.send(port: port, LastByteRace.request("POST", "/v1/passkeys/authentication/verify", json: body), copies: 20)
            }
            #expect(answers.filter { $0.status == 200 }.count == 1, "\(answers.map(\.status))")
            #expect(answers.filter { $0.status == 400 && $0.error?.code == .challengeInvalid }.count == 19)
        }
    }

    @Test func presetsWithoutPasskeysRefuseThem() async throws {
        try await TestApp.run(.sqlite, preset: "syncwell", adjust: Self.configure) { client, _ in
            let api = AuthClient(client: client)
            for path in ["/v1/passkeys/registration/options", "/v1/passkeys/authentication/options"] {
                let response = try await api.post(path, "{}")
                #expect(response.status == .forbidden && response.error?.code == .methodDisabled)
            }
        }
    }

    @Test func theAssociationFilesNameTheAppsAndLinks() async throws {
        try await TestApp.run(.sqlite, preset: "handz", adjust: Self.configure) { client, _ in
            let association = try await client.execute(uri: "/.well-known/apple-app-site-association", method: .get)
            #expect(association.status == .ok)
            #expect(association.headers[.contentType]?.hasPrefix("application/json") == true)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(association.text.utf8)) as? [String: Any])
            #expect((json["webcredentials"] as? [String: Any])?["apps"] as? [String] == ["ABCDE12345.test.gatehouse.app"])
            let details = try #require(((json["applinks"] as? [String: Any])?["details"] as? [[String: Any]])?.first)
            #expect(details["appIDs"] as? [String] == ["ABCDE12345.test.gatehouse.app"])
            #expect((details["components"] as? [[String: String]])?.contains { $0["/"] == "/auth/magic-link" } == true)
            // Handz opens its app by a custom scheme, which a password manager cannot follow.
            let endpoints = try await client.execute(uri: "/.well-known/passkey-endpoints", method: .get)
            #expect(endpoints.status == .ok && endpoints.text == "{}", "\(endpoints.text)")
        }
        try await TestApp.run(.sqlite, adjust: { config in
            Self.configure(&config)
            config.preset.app.openAppURL = "https://app.gatehouse.test/open"
        }) { client, _ in
            let endpoints = try await client.execute(uri: "/.well-known/passkey-endpoints", method: .get)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(endpoints.text.utf8)) as? [String: String])
            #expect(json == ["enroll": "https://app.gatehouse.test/open", "manage": "https://app.gatehouse.test/open"])
        }
    }

    @Test func relyingPartySettingsAreCheckedAtStart() async throws {
        let good = try await GatehouseConfig.load(environment: [
            "GATEHOUSE_PUBLIC_URL": "https://auth.example.com", "GATEHOUSE_PASSKEY_RP_ID": "example.com",
            "GATEHOUSE_PASSKEY_ORIGINS": "https://example.com,https://app.example.com", "GATEHOUSE_APPLE_APP_IDS": "ABCDE12345.com.example.app",
        ])
        #expect(good.relyingParty.allowedOrigins == ["https://example.com", "https://app.example.com"])
        let derived = try await GatehouseConfig.load(environment: ["GATEHOUSE_PUBLIC_URL": "https://auth.example.com"])
        #expect(derived.relyingParty.id == "auth.example.com")
        do {
            _ = try await GatehouseConfig.load(environment: [
                "GATEHOUSE_PASSKEY_RP_ID": "example.com", "GATEHOUSE_PASSKEY_ORIGINS": "https://evil.test,http://example.com",
                "GATEHOUSE_APPLE_APP_IDS": "com.example.app",
            ])
            Issue.record("a bad relying party was accepted")
        } catch {
            let text = error.description
            #expect(text.contains("'https://evil.test' is not on the rp id 'example.com'"))
            #expect(text.contains("'http://example.com' must be https://"))
            #expect(text.contains("'com.example.app' is not an app id"))
        }
    }

    /// Issue 22: a passkey sign-in of an account with an authenticator app is asked for its code
    /// like any other, unless the preset's `mfa.passkey_counts_as_two_factors` says a passkey
    /// with user verification (which the server requires) is two factors in one: then it opens
    /// an `aal2` session at once, and a gate that wants a second factor lets it through.
    @Test(.requires(OneTimeCodeTools.available && MFAFlow.hasPyJWT, "pyotp, oathtool, PyJWT"), arguments: [false, true])
    func aPasskeyCountsAsTwoFactorsOnlyWhenThePresetSaysSo(_ twoInOne: Bool) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(
            .sqlite, clock: clock, setup: .live,
            adjust: {
                Self.configure(&$0)
                $0.preset.mfa.passkeyCountsAsTwoFactors = twoInOne
                $0.preset.entitlements.actions["view_records"] = ActionSettings(rules: [GateRule(kind: .account), GateRule(kind: .mfa)])
            }
        ) { client, _ in
            let flow = try Self.flow(client)
            let codes = MFAFlow(api: flow.api, clock: clock)
            let account = try await flow.signUp("phone")
            let enrolled = try await codes.enroll(account.session.accessToken)
            try await codes.confirm(enrolled, token: account.session.accessToken)
            clock.advance(by: 60)

            let answer = try await flow.signIn("phone")
            #expect(answer.status == .ok, "\(answer.text)")
            let signedIn: AuthResponse
            if twoInOne {
                signedIn = try #require(try answer.json(SignInAnswer<AuthResponse>.self).signedIn, "\(answer.text)")
                let claims = try await codes.claims(signedIn.session.accessToken)
                #expect(claims["aal"] as? String == "aal2")
                #expect((claims["amr"] as? [[String: Any]])?.compactMap { $0["method"] as? String } == ["passkey"])
            } else {
                let challenge = try #require(try answer.json(SignInAnswer<AuthResponse>.self).challenge, "\(answer.text)")
                #expect(challenge.factors.map(\.id) == [enrolled.id])
                let completed = try await codes.verify(challenge.challengeID, factor: enrolled.id, code: try await codes.code(enrolled.totp.secret))
                #expect(completed.status == .ok, "\(completed.text)")
                signedIn = try completed.json(AuthResponse.self)
                let claims = try await codes.claims(signedIn.session.accessToken)
                #expect(claims["aal"] as? String == "aal2")
                #expect((claims["amr"] as? [[String: Any]])?.compactMap { $0["method"] as? String } == ["passkey", "totp"])
            }
            let check = try await flow.api.post("/v1/entitlements/check", #"{"action": "view_records"}"#, token: signedIn.session.accessToken)
            #expect(try check.json(GateDecision.self).allowed)
        }
    }

    /// A new access token for `account`'s session (same session, so no fresh sign-in).
    static func refreshed(_ flow: Flow, _ account: AuthResponse) async throws -> String {
        let response = try await flow.api.refresh(account.session.refreshToken)
        #expect(response.status == .ok, "\(response.text)")
        return try response.json(SessionResponse.self).session.accessToken
    }
}

/// The SDK's passkey calls against a live server, the authenticator standing in for
/// `ASAuthorizationPlatformPublicKeyCredentialProvider`: the SDK hands over what the request
/// takes and gets back the raw fields the credential gives.
@Suite(.requires(SoftAuthenticator.isAvailable, "GATEHOUSE_TEST_PYTHON with soft-webauthn and webauthn"))
struct SDKPasskeyTests {
    /// What iOS does with the SDK's options: builds the request and returns the raw fields.
    static func register(_ device: SoftAuthenticator, _ options: PasskeyRegistrationOptions) async throws -> PasskeyRegistration {
        let request = PasskeyCreationOptions(
            rp: .init(id: options.relyingPartyID, name: "App"),
            user: .init(id: options.userID.base64URLEncoded, name: options.userName, displayName: options.userName),
            challenge: options.challenge.base64URLEncoded, pubKeyCredParams: [.init(type: "public-key", alg: -7)], timeout: 60_000,
            excludeCredentials: options.excludedCredentialIDs.map { PasskeyDescriptor(id: $0.base64URLEncoded) },
            authenticatorSelection: .init(residentKey: "required", requireResidentKey: true, userVerification: options.userVerification),
            attestation: "none")
        let made = try await device.create("phone", options: request, origin: PasskeyTests.nativeOrigin)
        let response = try #require(made["response"] as? [String: Any])
        return PasskeyRegistration(
            credentialID: try Self.bytes(made["rawId"]), clientDataJSON: try Self.bytes(response["clientDataJSON"]),
            attestationObject: try Self.bytes(response["attestationObject"]))
    }

    static func assert(_ device: SoftAuthenticator, _ options: PasskeySignInOptions) async throws -> PasskeyAssertion {
        let request = PasskeyRequestOptions(
            challenge: options.challenge.base64URLEncoded, timeout: 60_000, rpId: options.relyingPartyID,
            allowCredentials: options.allowedCredentialIDs.map { PasskeyDescriptor(id: $0.base64URLEncoded) },
            userVerification: options.userVerification)
        let signed = try await device.get("phone", options: request, origin: PasskeyTests.nativeOrigin)
        let response = try #require(signed["response"] as? [String: Any])
        return PasskeyAssertion(
            credentialID: try Self.bytes(signed["rawId"]), clientDataJSON: try Self.bytes(response["clientDataJSON"]),
            authenticatorData: try Self.bytes(response["authenticatorData"]), signature: try Self.bytes(response["signature"]),
            userID: (response["userHandle"] as? String).flatMap { Data(base64URLEncoded: $0) })
    }

    static func bytes(_ value: Any?) throws -> Data {
        let text = try #require(value as? String)
        return try #require(Data(base64URLEncoded: text))
    }

    @Test(arguments: Backend.available)
    func theSDKSignsUpUpgradesAndSignsInWithAPasskey(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live, adjust: PasskeyTests.configure) { server, _ in
            let phone = try TestDevice()
            defer { phone.remove() }
            let authenticator = try SoftAuthenticator()
            let app = try phone.launch(port: try #require(server.port))
            // An anonymous start, then a passkey: the same account, no longer anonymous.
            let guest = try await app.signInAnonymously()
            let options = try await app.passkeyRegistrationOptions()
            #expect(options.relyingPartyID == PasskeyTests.rpID)
            #expect(options.userID == Data(guest.user.id.utf8))
            let outcome = try await app.registerPasskey(options, credential: try await Self.register(authenticator, options), name: "iPhone")
            guard case .added(let passkey) = outcome else {
                Issue.record("expected the passkey to be added, got \(outcome)")
                return
            }
            #expect(passkey.name == "iPhone")
            guard case .signedIn(let upgraded, _) = await app.state else {
                Issue.record("expected to stay signed in")
                return
            }
            #expect(upgraded.id == guest.user.id && !upgraded.isAnonymous)
            try await app.signOut()
            // A discoverable sign-in on a fresh launch.
            let signInOptions = try await app.passkeySignInOptions()
            #expect(signInOptions.allowedCredentialIDs.isEmpty)
            let signedIn = try await app.signInWithPasskey(signInOptions, assertion: try await Self.assert(authenticator, signInOptions))
            #expect(signedIn.user.id == guest.user.id)
            #expect(try await app.passkeys().map(\.name) == ["iPhone"])
            #expect(await app.lastProvider == .passkey)
            // The only passkey of an account with nothing else cannot go.
            do {
                try await app.deletePasskey(id: passkey.id)
                Issue.record("the last way in was removed")
            } catch {
                #expect((error as? GatehouseClientError)?.code == .lastIdentity, "\(error)")
            }
        }
    }
}
