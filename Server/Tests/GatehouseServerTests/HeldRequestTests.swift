import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryTracing
import NIOCore
import Testing

/// Issue 40, finding 1 and 2: a check holds until the write it guards. A request's headers sent
/// with its body held back, the session revoked, then the body completed: refused. A session
/// that ends while the request is being worked on (after its body, before its write): the write
/// is refused inside its transaction. Password changes racing the owner's: the owner's stands.
/// Each test failed on the code before the fix (the held requests answered 200 and wrote).
@Suite struct HeldRequestTests {
    static let password = "correct horse battery"
    static let supabaseKey = "sb_publishable_test_key_0123456789"

    /// The `/auth/v1` routes that read a session (GoTrue's, beside `Endpoints`).
    static let supabaseSessionRoutes: [(method: String, path: String)] = [
        ("PUT", "/auth/v1/user"), ("POST", "/auth/v1/logout"), ("POST", "/auth/v1/reauthenticate"),
        ("POST", "/auth/v1/factors"), ("POST", "/auth/v1/factors/{factor_id}/challenge"),
        ("POST", "/auth/v1/factors/{factor_id}/verify"), ("DELETE", "/auth/v1/factors/{factor_id}"),
    ]

    /// A body each route would take from the attacker (what the findings sent); `{}` elsewhere.
    static func body(for endpoint: AnyEndpoint) -> String {
        switch endpoint {
        case Endpoints.changePassword.erased:
            #"{"current_password": "\#(password)", "new_password": "attacker picked this one 9"}"#
        case Endpoints.updateProfile.erased: #"{"display_name": "Attacker"}"#
        case Endpoints.linkGoogle.erased, Endpoints.linkApple.erased: #"{"id_token": "x"}"#
        case Endpoints.linkEmail.erased: #"{"email": "attacker@example.com", "password": "attacker picked this one 9"}"#
        case Endpoints.verifyMFA.erased: #"{"factor_id": "\#(UUID())", "code": "123456"}"#
        case Endpoints.sendMagicLink.erased: #"{"email": "attacker@example.com"}"#
        case Endpoints.checkEntitlement.erased: #"{"action": "practice"}"#
        case Endpoints.events.erased: #"{"events": []}"#
        case Endpoints.applePurchase.erased: #"{"signed_transaction": "x"}"#
        default: "{}"
        }
    }

    static func path(_ template: PathTemplate) -> String {
        template.expand(template.parameters.map { $0 == "provider" ? "google" : $0 == "name" ? "practice" : UUID().uuidString })
    }

    /// Every state-changing route of the route table that reads a session, and the `/auth/v1`
    /// ones: held with the attacker's token, the owner signs out everywhere from another
    /// session, the bodies complete: every one answers 401 and nothing was written.
    @Test(arguments: Backend.available)
    func everyStateChangingRouteHeldPastALogoutAnswers401(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live, adjust: { $0.supabaseAnonKey = Self.supabaseKey }) { client, _ in
            let api = AuthClient(client: client)
            let port = try #require(client.port)
            let stolen = try await api.account("held@example.com", Self.password).session.accessToken
            let owner = try await api.login("held@example.com", Self.password).json(SignInAnswer<AuthResponse>.self)
            let ownerToken = try #require(owner.signedIn).session.accessToken

            let routes = Endpoints.all.filter { $0.method != .get && $0.caller.readsSession }
            #expect(routes.count >= 30, "the route table lost its session routes: \(routes)")
            var requests = routes.map { route in
                LastByteRace.request(
                    route.method.rawValue, Self.path(route.path), json: Self.body(for: route),
                    headers: ["Authorization": "Bearer \(stolen)"])
            }
            let names = routes.map(\.description) + Self.supabaseSessionRoutes.map { "\($0.method) \($0.path)" }
            for route in Self.supabaseSessionRoutes {
                let path = PathTemplate(route.path)
                requests.append(
                    LastByteRace.request(
                        route.method, Self.path(path), json: route.path == "/auth/v1/user" ? #"{"password": "attacker picked this one 9"}"# : "{}",
                        headers: ["Authorization": "Bearer \(stolen)", "apikey": Self.supabaseKey]))
            }
            let held = try await LastByteRace.hold(port: port, requests)
            let logout = try await api.post("/v1/auth/logout", #"{"scope": "global"}"#, token: ownerToken)
            #expect(logout.status == .noContent, "\(logout.text)")
            let answers = try await held.release()
            for (name, answer) in zip(names, answers) {
                #expect(answer.status == 401, "\(name) answered \(answer.status): \(String(decoding: answer.body, as: UTF8.self))")
            }
            // Nothing the attacker sent was written: the owner's password still signs in, the
            // attacker's does not, and the profile is as it was.
            let again = try await api.login("held@example.com", Self.password)
            #expect(again.status == .ok, "\(again.text)")
            #expect(try await api.login("held@example.com", "attacker picked this one 9").status == .unauthorized)
            let me = try await api.get("/v1/me", token: try again.json(SignInAnswer<AuthResponse>.self).signedIn?.session.accessToken)
            #expect(try me.json(MeResponse.self).user.displayName != "Attacker")
        }
    }

    /// The route table's word is the router's: every `session` route refuses a call without a
    /// token, and every state-changing `anyone` route ignores one (a session it reads would be
    /// a `session` or `optionalSession` route, walked above).
    @Test func theRouteTableSaysWhichRoutesReadASession() async throws {
        try await TestApp.run(.sqlite, setup: .live) { client, _ in
            let api = AuthClient(client: client)
            let revoked = try await api.account("table@example.com", Self.password).session.accessToken
            #expect(try await api.post("/v1/auth/logout", "{}", token: revoked).status == .noContent)
            for route in Endpoints.all where route.caller == .session {
                let answer = try await client.execute(
                    uri: Self.path(route.path), method: .init(rawValue: route.method.rawValue)!, headers: [.contentType: "application/json"],
                    body: ByteBuffer(string: Self.body(for: route)))
                #expect(answer.status == .unauthorized, "\(route) without a token answered \(answer.status)")
            }
            for route in Endpoints.all where route.caller == .anyone && route.method != .get {
                let answer = try await client.execute(
                    uri: Self.path(route.path), method: .init(rawValue: route.method.rawValue)!,
                    headers: [.contentType: "application/json", .authorization: "Bearer \(revoked)"], body: ByteBuffer(string: "{}"))
                #expect(answer.status != .unauthorized || answer.error?.code != .unauthorized, "\(route) read the session: \(answer.text)")
            }
        }
    }

    /// A request whose body arrives after its token expired: refused (the token is checked after
    /// the body, and again inside the write).
    @Test(arguments: Backend.available)
    func aHeldRequestFinishedAfterItsTokenExpiredIsRefused(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, clock: clock, setup: .live) { client, config in
            let api = AuthClient(client: client)
            let token = try await api.account("expiry@example.com", Self.password).session.accessToken
            let held = try await LastByteRace.hold(
                port: try #require(client.port),
                [LastByteRace.request("PATCH", "/v1/me", json: #"{"display_name": "Late"}"#, headers: ["Authorization": "Bearer \(token)"])])
            clock.advance(by: TimeInterval(config.preset.tokens.accessTokenTTLSeconds + config.preset.tokens.leewaySeconds + 15))
            let answer = try #require(try await held.release().first)
            #expect(answer.status == 401 && answer.error?.code == .tokenExpired, "\(String(decoding: answer.body, as: UTF8.self))")
        }
    }

    /// A body trickled in past `GATEHOUSE_HTTP_BODY_TIMEOUT_SECONDS`: 408 `request_timeout`,
    /// whatever the idle timeout allows between bytes.
    @Test func aBodyThatDoesNotArriveInTimeIs408() async throws {
        try await TestApp.run(.sqlite, setup: .live, adjust: { $0.httpBodyTimeoutSeconds = 1 }) { client, _ in
            let held = try await LastByteRace.hold(
                port: try #require(client.port), [LastByteRace.request("POST", "/v1/auth/login", json: #"{"email": "a@example.com", "password": "x"}"#)])
            try await Task.sleep(for: .milliseconds(1_500))
            let answer = try #require(try await held.release().first)
            #expect(answer.status == 408 && answer.error?.code == .requestTimeout, "\(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
    }

    /// A body that arrived in time leaves nothing behind: its time-out ends with its last byte, so
    /// the kept-alive connection it came on still serves requests long after that time-out's
    /// moment, a body among them.
    @Test func aBodyThatArrivedLeavesItsConnectionOpenPastItsTimeout() async throws {
        try await TestApp.run(.sqlite, setup: .live, adjust: { $0.httpBodyTimeoutSeconds = 1 }) { client, _ in
            let api = AuthClient(client: client)
            let login = #"{"email": "nobody@example.com", "password": "not the one"}"#
            #expect(try await api.post("/v1/auth/login", login).status == .unauthorized)
            // Past the first body's moment, and a tick of the time-outs (a quarter of a second) after it.
            try await Task.sleep(for: .milliseconds(1_600))
            let health = try await client.execute(uri: "/health", method: .get)
            #expect(health.status == .ok, "\(health.status)")
            #expect(try await api.post("/v1/auth/login", login).status == .unauthorized)

            // A body that came in two reads, its time-out kept between them, then ended in time:
            // answered, and the connection still serves past that time-out's moment.
            let request = LastByteRace.request("POST", "/v1/auth/login", json: login, keepAlive: true)
            let answers = try await LastByteRace.keptAlive(
                port: try #require(client.port),
                [
                    (Array(request.dropLast(10)), .milliseconds(300), false), (Array(request.suffix(10)), .milliseconds(1_600), true),
                    (LastByteRace.request("GET", "/health", keepAlive: true), .zero, true),
                ])
            #expect(answers.map(\.status) == [401, 200], "\(answers.map(\.status))")
        }
    }

    /// The window after the body and before the write: a password change waits on the
    /// breached-password service (a local range server that answers when told), the owner signs
    /// out everywhere meanwhile, then the range server answers: the change is refused inside its
    /// transaction and the owner's password still signs in.
    @Test(arguments: Backend.available)
    func aSessionEndedWhileTheRequestIsWorkedOnRefusesTheWrite(_ backend: Backend) async throws {
        let gate = HeldRangeServer.Gate()
        try await HeldRangeServer.run(gate: gate) { url in
            try await TestApp.run(backend, setup: .live, adjust: {
                $0.preset.passwordPolicy.breachedCheck = true
                $0.breachedPasswordsURL = url
            }) { client, _ in
                let api = AuthClient(client: client)
                // Signing up asks the range server too: let it through.
                await gate.open()
                let stolen = try await api.account("window@example.com", Self.password).session.accessToken
                let owner = try #require(try await api.login("window@example.com", Self.password).json(SignInAnswer<AuthResponse>.self).signedIn)
                await gate.close()
                // On a connection of its own: the test client sends one request at a time.
                async let change = LastByteRace.send(
                    port: try #require(client.port),
                    [LastByteRace.request(
                        "POST", "/v1/auth/password/change",
                        json: #"{"current_password": "\#(Self.password)", "new_password": "attacker picked this one 9"}"#,
                        headers: ["Authorization": "Bearer \(stolen)"])])
                await gate.waitForCaller()
                #expect(try await api.post("/v1/auth/logout", #"{"scope": "global"}"#, token: owner.session.accessToken).status == .noContent)
                await gate.open()
                let answer = try #require(try await change.first)
                #expect(answer.status == 401, "\(String(decoding: answer.body, as: UTF8.self))")
                #expect(try await api.login("window@example.com", Self.password).status == .ok)
                #expect(try await api.login("window@example.com", "attacker picked this one 9").status == .unauthorized)
            }
        }
    }

    /// Finding 2: someone with two sessions and the old password changes it "old → old" from
    /// both while the owner changes it with `sign_out_other_sessions`, all released on their
    /// last byte: the owner's change answers 200 and stands (the old password no longer signs
    /// in); each other change answers 200 (it landed first) or 401. Five rounds (7 of 7 trials
    /// failed before the fix).
    @Test(arguments: Backend.available)
    func passwordChangesRacingTheOwnersDoNotUndoIt(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live) { client, _ in
            let api = AuthClient(client: client)
            let port = try #require(client.port)
            var current = Self.password
            _ = try await api.account("race@example.com", current)
            for round in 1...5 {
                let sessions = try await (0..<3).asyncMap { _ in
                    try #require(try await api.login("race@example.com", current).json(SignInAnswer<AuthResponse>.self).signedIn).session.accessToken
                }
                let next = "owner's round \(round) password"
                let owners = LastByteRace.request(
                    "POST", "/v1/auth/password/change",
                    json: #"{"current_password": "\#(current)", "new_password": "\#(next)", "sign_out_other_sessions": true}"#,
                    headers: ["Authorization": "Bearer \(sessions[0])"])
                let others = (0..<2).map { index in
                    LastByteRace.request(
                        "POST", "/v1/auth/password/change", json: #"{"current_password": "\#(current)", "new_password": "\#(current)"}"#,
                        headers: ["Authorization": "Bearer \(sessions[1 + index])"])
                }
                let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: port, [owners] + others) }
                let statuses = answers.map(\.status)
                #expect(statuses[0] == 200, "round \(round): the owner's change answered \(statuses[0]): \(String(decoding: answers[0].body, as: UTF8.self))")
                #expect(statuses.dropFirst().allSatisfy { $0 == 200 || $0 == 401 }, "round \(round): \(statuses)")
                #expect(try await api.login("race@example.com", current).status == .unauthorized, "round \(round): the old password came back")
                #expect(try await api.login("race@example.com", next).status == .ok, "round \(round)")
                current = next
            }
        }
    }
}

/// Issue 40, finding 4: one App Store transaction is one account's, by the original
/// transaction id as a unique key.
@Suite struct PurchaseOwnershipTests {
    /// Twelve accounts post one new transaction (no `appAccountToken`), released on their last
    /// byte: one answers 200 with `pro` and one `purchase.succeeded` is recorded; the other
    /// eleven answer 409 `subscription_in_use`, and the purchase stays with the first (before:
    /// 2, 10 and 12 of 12 answered 200, the row went to whoever committed last).
    @Test(arguments: Backend.available)
    func twelveAccountsClaimingOneTransactionTogetherGetOne200(_ backend: Backend) async throws {
        let apple = try FakeAppStore()
        try await TestApp.run(backend, preset: "handz", setup: .live, adjust: { TestApp.trusting(apple)(&$0); ConcurrentLimitTests.patient(&$0) }) { client, config in
            let api = AuthClient(client: client)
            var tokens: [String] = []
            for index in 0..<12 { tokens.append(try await api.account("claim\(index)@example.com").session.accessToken) }
            let now = Date()
            let jws = try apple.sign(
                FakeAppStore.transaction(
                    id: "4001", original: "4000", product: AppStoreTests.product, user: nil, purchased: now, expires: now + 30 * 86_400, signed: now))
            let requests = tokens.map { token in
                LastByteRace.request("POST", "/v1/purchases/apple", json: #"{"signed_transaction": "\#(jws)"}"#, headers: ["Authorization": "Bearer \(token)"])
            }
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(client.port), requests) }
            let statuses = answers.map(\.status)
            #expect(statuses.count { $0 == 200 } == 1, "\(statuses)")
            #expect(answers.filter { $0.status != 200 }.allSatisfy { $0.status == 409 && $0.error?.code == .subscriptionInUse }, "\(statuses)")
            let winner = try #require(statuses.firstIndex(of: 200))
            // The purchase is the winner's, and only the winner's plan is pro.
            for (index, token) in tokens.enumerated() {
                let plan = try await AppStoreTests.snapshot(api, token).planState
                #expect((plan == "pro") == (index == winner), "claim\(index): \(plan)")
            }
            let succeeded = try await TestApp.withStore(config) { store in
                try await store.events(after: nil, userID: nil, limit: 1_000).filter { $0.type == .purchaseSucceeded }.count
            }
            #expect(succeeded == 1)
        }
    }
}

/// Issue 40, finding 5: a hash made elsewhere is accepted only within `PasswordHashBounds`,
/// wherever it comes in, and a stored one over them is never run.
@Suite struct HashBoundsTests {
    static let hostileBcrypt = "$2a$31$3THsdJmT/ZC1desV8NpqueGXbSLyQlvN9iKV5wH68bY004l/eTKPS"
    static let hostileArgon2 = "$argon2id$v=19$m=4194304,t=4294967295,p=1$c29tZXNhbHRzb21lc2FsdA$c29tZWhhc2hzb21laGFzaHNvbWVoYXNoc29tZWhhc2g"

    @Test func hostileHashParametersAreRefusedWhereverAHashComesIn() async throws {
        try await TestApp.run(.sqlite, preset: "default", adjust: SupabaseCompatTests.withBothKeys) { client, config in
            let api = AuthClient(client: client)
            // The Supabase import: each row refused with its reason, the sane one imported.
            let rows = """
                {"users": [{"id": "7b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f61", "email": "cost@example.com", "encrypted_password": "\(Self.hostileBcrypt)"},
                           {"id": "7b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f62", "email": "sane@example.com",
                            "encrypted_password": "$2a$04$3THsdJmT/ZC1desV8NpqueGXbSLyQlvN9iKV5wH68bY004l/eTKPS"}],
                 "identities": []}
                """
            let imported = try await api.post(Endpoints.adminImportSupabase.path.template, rows, token: TestApp.adminKey)
            let report = try imported.json(ImportReport.self)
            #expect(report.imported == 1)
            #expect(report.refused == [ImportRefusal(row: 1, sourceID: "7b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f61", reason: "encrypted_password: the bcrypt cost (31) is over 14")], "\(imported.text)")
            // `POST /auth/v1/admin/users`: 400 for either hash.
            let headers: HTTPFields = [
                HTTPField.Name("apikey")!: SupabaseCompatTests.anonKey, .authorization: "Bearer \(SupabaseCompatTests.serviceRoleKey)",
                .contentType: "application/json",
            ]
            for (email, hash) in [("argon@example.com", Self.hostileArgon2), ("bcrypt@example.com", Self.hostileBcrypt)] {
                let created = try await client.execute(
                    uri: "/auth/v1/admin/users", method: .post, headers: headers,
                    body: ByteBuffer(string: #"{"email": "\#(email)", "password_hash": "\#(hash)"}"#))
                #expect(created.status == .badRequest, "\(email): \(created.text)")
            }
            // A hostile hash already stored (imported before the bounds) is never run: the
            // guess is refused at the decoy's cost (run, t = 2³²−1 passes would not answer).
            try await TestApp.withStore(config) { store in
                try await store.insertUser(
                    User(id: .random(), email: "stored@example.com", normalizedEmail: "stored@example.com", passwordHash: Self.hostileArgon2, createdAt: Date()))
            }
            #expect(try await api.login("stored@example.com", "any guess").status == .unauthorized)
        }
    }
}

/// Issue 40, finding 5: guesses at one account take turns for the hashing threads.
@Suite struct HashLaneTests {
    /// Four wrong guesses at an imported account with a bcrypt cost-12 hash, released together
    /// on a server with two hashing threads: their `password.verify` spans never overlap (before:
    /// two ran at once, one per thread, and a flood at one account took every thread).
    @Test func guessesAtOneAccountTakeTurns() async throws {
        let tracer = InMemoryTracer()
        try await TestApp.run(.sqlite, setup: .live, tracer: tracer) { client, config in
            try await TestApp.withStore(config) { store in
                try await store.insertUser(
                    User(
                        id: .random(), email: "lane@example.com", normalizedEmail: "lane@example.com",
                        passwordHash: "$2a$12$abcdefghijklmnopqrstuuMWJ0qCa6cqJ2bHnQfXqJ0nJ1qV7.Zsy", createdAt: Date()))
            }
            let guess = LastByteRace.request("POST", "/v1/auth/login", json: #"{"email": "lane@example.com", "password": "a guess"}"#)
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(client.port), guess, copies: 4) }
            #expect(answers.allSatisfy { $0.status == 401 }, "\(answers.map(\.status))")
            let spans = tracer.finishedSpans.filter { $0.operationName == "password.verify" }
                .map { (start: $0.startInstant.nanosecondsSinceEpoch, end: $0.endInstant.nanosecondsSinceEpoch) }
                .sorted { $0.start < $1.start }
            #expect(spans.count == 4)
            for (earlier, later) in zip(spans, spans.dropFirst()) {
                #expect(later.start >= earlier.end, "two hashes of one account ran at once")
            }
        }
    }
}

/// Issue 40, finding 5: a check costs the same whichever account, or none, is behind it.
@Suite struct SchemeDecoyTests {
    /// After a Supabase import brings bcrypt (cost 4) accounts, a guess at an unknown address
    /// runs the Argon2id decoy and a bcrypt decoy, and a guess at the imported account runs its
    /// bcrypt hash and the Argon2id decoy: one of each scheme in use either way, two checks each
    /// by the hashing metrics (before: Argon2id alone for the unknown address, bcrypt alone for
    /// the imported one).
    @Test func everyCheckRunsOneHashOfEachSchemeInUse() async throws {
        let tracer = InMemoryTracer()
        try await TestApp.run(.sqlite, tracer: tracer, adjust: { $0.metrics = true }) { client, _ in
            let api = AuthClient(client: client)
            func checks() async throws -> Double {
                let page = try await client.execute(uri: "/metrics", method: .get)
                return MetricsTests.samples(page.text)[#"gatehouse_password_hash_duration_seconds_count{operation="verify"}"#] ?? 0
            }
            let alone = try await checks()
            #expect(try await api.login("before@example.com", "a guess").status == .unauthorized)
            #expect(try await checks() - alone == 1, "one scheme in use: one check")
            let rows = """
                {"users": [{"id": "7b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f63", "email": "imported@example.com",
                            "encrypted_password": "$2a$04$3THsdJmT/ZC1desV8NpqueGXbSLyQlvN9iKV5wH68bY004l/eTKPS"}],
                 "identities": []}
                """
            #expect(try await api.post(Endpoints.adminImportSupabase.path.template, rows, token: TestApp.adminKey).status == .ok)
            func checked(_ email: String) async throws -> (algorithm: String, decoys: String) {
                let before = tracer.finishedSpans.count
                #expect(try await api.login(email, "a wrong guess").status == .unauthorized)
                let span = try #require(tracer.finishedSpans.dropFirst(before).first { $0.operationName == "password.verify" })
                func text(_ name: String) -> String {
                    if case .string(let value) = span.attributes[name]?.toSpanAttribute() { return value }
                    return ""
                }
                return (text("gatehouse.hash.algorithm"), text("gatehouse.hash.decoys"))
            }
            let before = try await checks()
            let unknown = try await checked("nobody@example.com")
            let imported = try await checked("imported@example.com")
            #expect(try await checks() - before == 4, "two schemes in use: two checks per guess")
            #expect(unknown.algorithm == "argon2id" && unknown.decoys == "$2$04$", "\(unknown)")
            #expect(imported.algorithm == "bcrypt" && imported.decoys == "$argon2id$", "\(imported)")
        }
    }
}

/// Issue 40, finding 7: operator sessions end when they end, and wrong operator keys are
/// throttled per client address.
@Suite struct OperatorKeyTests {
    /// A console cookie copied before "Sign out" is refused after it (before: an account was
    /// disabled with it after the sign-out).
    @Test(arguments: Backend.available)
    func aConsoleCookieCopiedBeforeSignOutIsRefusedAfterIt(_ backend: Backend) async throws {
        try await TestApp.run(backend, clock: ManualClock(Date())) { client, _ in
            let user = try await AuthClient(client: client).account("operated@example.com").user.id
            let (_, signedIn) = try await ConsoleTests.Console.signIn(client)
            let console = try #require(signedIn)
            let copy = console
            #expect(try await console.post("/admin/sign-out", [:]).status == .seeOther)
            let page = try await copy.get("/admin")
            #expect(page.text.contains(#"data-page="sign-in""#))
            let disable = try await copy.post("/admin/users/\(user)/disable", ["reason": "after sign-out"])
            #expect(disable.status == .unauthorized, "\(disable.status)")
            let admin = try await client.execute(uri: "/admin/v1/users/\(user)", method: .get, headers: TestApp.adminHeaders)
            #expect(try admin.json(AdminUser.self).disabled == false)
        }
    }

    /// Forty wrong admin keys at `/admin/v1` and forty wrong service-role keys at
    /// `/auth/v1/admin/users` from one address: the first ten answer 401, then 429 with
    /// `Retry-After`, the right key too while the address is locked out (before: forty 401s).
    @Test(arguments: Backend.available)
    func wrongOperatorKeysAreThrottledPerAddress(_ backend: Backend) async throws {
        try await TestApp.run(backend, clock: ManualClock(Date()), adjust: SupabaseCompatTests.withBothKeys) { client, _ in
            let apikey = HTTPField.Name("apikey")!
            let routes: [(uri: String, right: String, extra: HTTPFields)] = [
                ("/admin/v1/users", TestApp.adminKey, [:]),
                ("/auth/v1/admin/users", SupabaseCompatTests.serviceRoleKey, [apikey: SupabaseCompatTests.anonKey]),
            ]
            for route in routes {
                var statuses: [Int] = []
                var retryAfter: String?
                for index in 0..<40 {
                    var headers = route.extra
                    headers[.authorization] = "Bearer wrong-key-\(index)-0123456789abcdef"
                    let answer = try await client.execute(uri: route.uri, method: .get, headers: headers)
                    statuses.append(Int(answer.status.code))
                    retryAfter = retryAfter ?? answer.headers[.retryAfter]
                }
                #expect(statuses.prefix(10).allSatisfy { $0 == 401 } && statuses.dropFirst(10).allSatisfy { $0 == 429 }, "\(route.uri): \(statuses)")
                #expect(retryAfter.flatMap(Int.init).map { $0 > 0 } == true)
                var headers = route.extra
                headers[.authorization] = "Bearer \(route.right)"
                #expect(try await client.execute(uri: route.uri, method: .get, headers: headers).status == .tooManyRequests)
            }
        }
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var mapped: [T] = []
        for element in self { mapped.append(try await transform(element)) }
        return mapped
    }
}

/// A Pwned Passwords range server that answers only while its gate is open: the request it
/// holds is a password change stopped between its body and its write.
enum HeldRangeServer {
    actor Gate {
        private var isOpen = false
        private var waiting: [CheckedContinuation<Void, Never>] = []
        private var callers: [CheckedContinuation<Void, Never>] = []
        private var called = false

        func open() {
            isOpen = true
            waiting.forEach { $0.resume() }
            waiting = []
        }

        func close() {
            isOpen = false
            called = false
        }

        /// Called by the server's handler: waits while the gate is closed.
        func pass() async {
            called = true
            callers.forEach { $0.resume() }
            callers = []
            if isOpen { return }
            await withCheckedContinuation { waiting.append($0) }
        }

        /// Returns once a request has reached the closed gate.
        func waitForCaller() async {
            if called { return }
            await withCheckedContinuation { callers.append($0) }
        }
    }

    static func run(gate: Gate, _ body: @escaping @Sendable (String) async throws -> Void) async throws {
        let router = Router()
        router.get("/range/:prefix") { _, _ -> String in
            await gate.pass()
            return "0000000000000000000000000000000000A:0"
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            try await body("http://127.0.0.1:\(client.port!)/range/")
        }
    }
}
