import Foundation
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// `/auth/v1` driven by Supabase's own Python clients, unchanged (issue 24): sign-up, password
/// sign-in, refresh, the user, anonymous sign-in and its upgrade, each sign-out scope, a
/// recovery from a real mail, a one-time code, and the admin calls. The script asserts each
/// answer and prints one line a step; the test needs every step and the final line.
@Suite struct SupabaseCompatTests {
    static let anonKey = "sb_publishable_test_key_0123456789"
    static let serviceRoleKey = "sb_secret_test_service_role_key_0123456789"

    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("support/supabase_client_check.py")
    }

    static func configure(_ sink: SMTPSink) -> (inout GatehouseConfig) -> Void {
        { config in
            config.smtpURL = "smtp://127.0.0.1:\(sink.port)"
            config.supabaseAnonKey = anonKey
            config.supabaseServiceRoleKey = serviceRoleKey
            config.redirectAllowlist = [appURL]
        }
    }

    /// Both keys set: `/auth/v1` served, its admin routes too.
    static func withBothKeys(_ config: inout GatehouseConfig) {
        config.supabaseAnonKey = anonKey
        config.supabaseServiceRoleKey = serviceRoleKey
    }

    /// Where `GET /auth/v1/verify` may send the browser in these tests.
    static let appURL = "https://app.example.com/welcome"

    static let steps = [
        "api key, settings and keys", "sign up, refusals, sign in", "refresh, read and update the user",
        "tokens from one surface work on the other", "anonymous sign-in and its upgrade", "sign out: others, local, global",
        "recover a password from the mail", "one-time code", "admin: create, list, get, update, ban, bcrypt hash, delete",
        "second factor: enroll, challenge, verify, step up, unenroll", "a magic link followed in a browser (implicit flow)",
        "a magic link in the PKCE flow", "reauthenticate with a mailed code", "resend", "a refresh raced within the reuse interval",
    ]

    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"), arguments: Backend.available, ["supabase_auth", "gotrue"])
    func supabasesOwnClientWorksUnchanged(_ backend: Backend, _ library: String) async throws {
        let sink = try await SMTPSink()
        defer { sink.stop() }
        try await TestApp.run(backend, preset: "default", setup: .live, adjust: Self.configure(sink)) { client, _ in
            let output = try await Command.run(
                try #require(SMTPSink.python),
                [Self.script.path, "--url", "http://127.0.0.1:\(try #require(client.port))", "--anon", Self.anonKey,
                 "--service", Self.serviceRoleKey, "--maildir", sink.maildir.path,
                 "--reset-path", Endpoints.resetPasswordPage.path.template, "--magic-path", Endpoints.magicLinkPage.path.template,
                 "--app-url", Self.appURL, "--library", library])
            for step in Self.steps { #expect(output.contains("ok: \(step)\n"), "missing step: \(step)\n\(output)") }
            #expect(output.contains("ALL OK"), "\(output)")
        }
    }

    @Test func withoutTheAnonKeyNothingIsServedAtAuthV1() async throws {
        try await TestApp.run(.sqlite, preset: "default") { client, _ in
            let response = try await client.execute(uri: "/auth/v1/settings", method: .get, headers: [HTTPField.Name("apikey")!: "x"])
            #expect(response.status == .notFound)
        }
    }

    @Test func errorsComeInGoTruesTwoShapes() async throws {
        try await TestApp.run(.sqlite, preset: "default", adjust: { $0.supabaseAnonKey = Self.anonKey }) { client, _ in
            let apikey = HTTPField.Name("apikey")!
            let body = ByteBuffer(string: #"{"email": "nobody@example.com", "password": "Wrong-password-1"}"#)
            let json: HTTPFields = [apikey: Self.anonKey, .contentType: "application/json"]
            let legacy = try await client.execute(uri: "/auth/v1/token?grant_type=password", method: .post, headers: json, body: body)
            #expect(legacy.status == .badRequest)
            let legacyBody = try JSONSerialization.jsonObject(with: Data(buffer: legacy.body)) as? [String: Any]
            #expect(legacyBody?["code"] as? Int == 400)
            #expect(legacyBody?["error_code"] as? String == "invalid_credentials")
            #expect(legacyBody?["msg"] as? String != nil)
            #expect(legacy.headers[HTTPField.Name("x-sb-error-code")!] == "invalid_credentials")
            var versionedHeaders = json
            versionedHeaders[HTTPField.Name("X-Supabase-Api-Version")!] = "2024-01-01"
            let versioned = try await client.execute(
                uri: "/auth/v1/token?grant_type=password", method: .post, headers: versionedHeaders, body: body)
            let versionedBody = try JSONSerialization.jsonObject(with: Data(buffer: versioned.body)) as? [String: Any]
            #expect(versioned.status == .badRequest && versionedBody?["code"] as? String == "invalid_credentials")
            #expect(versioned.headers[HTTPField.Name("X-Supabase-Api-Version")!] == "2024-01-01")
            // No service role key configured: no admin routes.
            let admin = try await client.execute(
                uri: "/auth/v1/admin/users", method: .get, headers: [apikey: Self.anonKey, .authorization: "Bearer \(Self.anonKey)"])
            #expect(admin.status == .notFound)
        }
    }

    /// A sign-up whose `data` the profile would refuse creates no account, with an address or
    /// anonymous: before, the account was made and then the profile refused, so the answer was an
    /// error and the retry met `user_already_exists`.
    @Test(arguments: Backend.available)
    func aSignUpWithARefusedProfileCreatesNoAccount(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "default", adjust: Self.withBothKeys) { client, _ in
            let apikey = HTTPField.Name("apikey")!
            let json: HTTPFields = [apikey: Self.anonKey, .contentType: "application/json"]
            func signup(_ body: String) async throws -> (status: HTTPResponse.Status, body: [String: Any]) {
                let response = try await client.execute(uri: "/auth/v1/signup", method: .post, headers: json, body: ByteBuffer(string: body))
                return (response.status, (try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]) ?? [:])
            }
            let address = #""email": "pat.profile@example.com", "password": "correct horse battery""#
            let tooLong = try await signup(#"{\#(address), "data": {"display_name": "\#(String(repeating: "n", count: 51))"}}"#)
            #expect(tooLong.status == .unprocessableContent && tooLong.body["error_code"] as? String == "validation_failed", "\(tooLong)")
            let plainAvatar = try await signup(#"{"data": {"avatar_url": "http://example.com/pat.png"}}"#)
            #expect(plainAvatar.status == .unprocessableContent && plainAvatar.body["error_code"] as? String == "validation_failed")

            let list = try await client.execute(
                uri: "/auth/v1/admin/users", method: .get, headers: [apikey: Self.anonKey, .authorization: "Bearer \(Self.serviceRoleKey)"])
            let users = (try JSONSerialization.jsonObject(with: Data(buffer: list.body)) as? [String: Any])?["users"] as? [Any]
            #expect(list.status == .ok && users?.count == 0, "\(String(buffer: list.body))")

            let accepted = try await signup(#"{\#(address), "data": {"display_name": "Pat"}}"#)
            #expect(accepted.status == .ok, "\(accepted)")
            let metadata = (accepted.body["user"] as? [String: Any])?["user_metadata"] as? [String: Any]
            #expect(metadata?["display_name"] as? String == "Pat")
        }
    }

    /// `POST /otp` with `create_user: false` (supabase-swift's `shouldCreateUser: false`): an
    /// address with an account is mailed its link; one without gets none (the request is
    /// dropped in the mail worker), so no account can come of it, and both answers are the same.
    /// Without the flag an unknown address is mailed a link, which would make its account.
    @Test(arguments: Backend.available)
    func anOTPThatMayNotCreateAUserMailsOnlyExistingAccounts(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "default", adjust: { $0.supabaseAnonKey = Self.anonKey }) { client, config in
            _ = try await AuthClient(client: client).account("kim.known@example.com")
            let json: HTTPFields = [HTTPField.Name("apikey")!: Self.anonKey, .contentType: "application/json"]
            func otp(_ email: String, _ extra: String) async throws -> (status: HTTPResponse.Status, body: String) {
                let response = try await client.execute(
                    uri: "/auth/v1/otp", method: .post, headers: json, body: ByteBuffer(string: #"{"email": "\#(email)"\#(extra)}"#))
                return (response.status, String(buffer: response.body))
            }
            let unknown = try await otp("una.unknown@example.com", #", "create_user": false"#)
            let known = try await otp("kim.known@example.com", #", "create_user": false"#)
            #expect(unknown.status == .ok && known.status == .ok && unknown.body == known.body, "\(unknown) \(known)")
            let settled = try await EmailFlowTests.outbox(config) { mails in
                mails.filter { $0.kind == "magic_link" && $0.status != "pending" }.count == 2
            }
            let links = settled.filter { $0.kind == "magic_link" }
            #expect(links.contains { $0.recipient == "kim.known@example.com" && $0.textBody != nil })
            #expect(links.contains { $0.status == "dropped" && $0.lastError == "no account" })
            #expect(!links.contains { $0.recipient == "una.unknown@example.com" })

            // Another new address (one address may ask again only after a while).
            #expect(try await otp("uma.unmade@example.com", "").status == .ok)
            let mailed = try await EmailFlowTests.outboxMail(config, kind: "magic_link") { $0.recipient == "uma.unmade@example.com" }
            #expect(mailed.textBody?.isEmpty == false)
        }
    }

    /// `GET /admin/users` pages as GoTrue does: `X-Total-Count` and a `Link` header with the
    /// next page while there is one and the last, `page` first in each (supabase-swift reads
    /// the number after the first `=`).
    @Test(arguments: Backend.available)
    func theAdminListSaysHowManyUsersAndWhereTheNextPageIs(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "default", adjust: Self.withBothKeys) { client, _ in
            let api = AuthClient(client: client)
            for name in ["ana", "ben", "cy"] { _ = try await api.account("\(name)@example.com") }
            let headers: HTTPFields = [HTTPField.Name("apikey")!: Self.anonKey, .authorization: "Bearer \(Self.serviceRoleKey)"]
            func page(_ number: Int) async throws -> (count: Int?, total: String?, link: String?) {
                let response = try await client.execute(uri: "/auth/v1/admin/users?per_page=2&page=\(number)", method: .get, headers: headers)
                #expect(response.status == .ok)
                let users = (try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])?["users"] as? [Any]
                return (users?.count, response.headers[HTTPField.Name("X-Total-Count")!], response.headers[HTTPField.Name("Link")!])
            }
            let first = try await page(1)
            #expect(first.count == 2 && first.total == "3")
            #expect(
                first.link == #"</auth/v1/admin/users?page=2&per_page=2>; rel="next", </auth/v1/admin/users?page=2&per_page=2>; rel="last""#)
            let second = try await page(2)
            #expect(second.count == 1 && second.total == "3")
            #expect(second.link == #"</auth/v1/admin/users?page=2&per_page=2>; rel="last""#)
            // A parameter given twice is refused, whatever its first copy says (Schemathesis found
            // `?per_page=&per_page=<garbage>` answered 200 from the empty first copy).
            for query in ["per_page=&per_page=x", "page=1&page=2", "per_page=2&per_page=2"] {
                let twice = try await client.execute(uri: "/auth/v1/admin/users?\(query)", method: .get, headers: headers)
                #expect(twice.status == .badRequest, "\(query): \(twice.status)")
            }
        }
    }

    /// A client that hangs up before its body has arrived gets a 400 at `/auth/v1` as on the
    /// native routes, and neither counts as a failure of the server: before, the GoTrue error
    /// middleware answered it 500 and logged it as an error.
    @Test func aClientGoneBeforeItsBodyIsNoFailureOnEitherSurface() async throws {
        let adjust: (inout GatehouseConfig) -> Void = {
            $0.metrics = true
            $0.supabaseAnonKey = Self.anonKey
        }
        try await TestApp.run(.sqlite, setup: .live, adjust: adjust) { client, _ in
            let port = try #require(client.port)
            let body = #"{"email": "gone@example.com", "password": "correct horse battery"}"#
            for path in ["/v1/auth/signup", "/auth/v1/signup"] {
                let request = LastByteRace.request("POST", path, json: body, headers: ["apikey": Self.anonKey])
                try await LastByteRace.hangUp(port: port, after: Array(request.dropLast(20)))
            }
            let native = #"gatehouse_http_requests_total{method="POST",route="/v1/auth/signup",status="400"}"#
            let goTrue = #"gatehouse_http_requests_total{method="POST",route="/auth/v1/signup",status="400"}"#
            var samples: [String: Double] = [:]
            for _ in 0..<50 {
                samples = MetricsTests.samples(try await AuthClient(client: client).get("/metrics", token: nil).text)
                if samples[native] != nil && samples[goTrue] != nil { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(samples[native] == 1 && samples[goTrue] == 1, "\(samples.keys.sorted())")
            #expect(!samples.keys.contains { $0.contains(#"status="500""#) }, "\(samples.keys.sorted())")
        }
    }

    /// A reset link redeemed as a recovery session is single use under a race: twelve
    /// `POST /auth/v1/verify` released together (the last-byte technique) give exactly one session.
    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"), arguments: Backend.available)
    func aRecoveryLinkRacedTwelveTimesOpensOneSession(_ backend: Backend) async throws {
        let sink = try await SMTPSink()
        defer { sink.stop() }
        try await TestApp.run(backend, preset: "default", setup: .live, adjust: Self.configure(sink)) { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("Rae.Race@Example.com")
            let apikey: HTTPFields = [HTTPField.Name("apikey")!: Self.anonKey]
            #expect(try await api.post("/auth/v1/recover", #"{"email": "rae.race@example.com"}"#, headers: apikey).status == .ok)
            let mail = try await sink.waitForMail { $0.parts["text/plain"]?.contains(Endpoints.resetPasswordPage.path.template) == true }
            let token = try EmailFlowTests.token(in: mail, path: Endpoints.resetPasswordPage.path.template)
            let request = LastByteRace.request(
                "POST", "/auth/v1/verify", json: #"{"type": "recovery", "token_hash": "\#(token)"}"#, headers: ["apikey": Self.anonKey])
            let answers = try await BurstGate.exclusive {
                try await LastByteRace.send(port: try #require(client.port), request, copies: 12)
            }
            let opened = answers.filter { $0.status == 200 }
            #expect(opened.count == 1, "\(answers.map(\.status))")
            #expect(opened.first?.json?["user"].flatMap { ($0 as? [String: Any])?["id"] as? String } == account.user.id)
            #expect(answers.filter { $0.status == 403 && $0.json?["error_code"] as? String == "otp_expired" }.count == 11)
        }
    }

    static var goTrueScript: URL {
        script.deletingLastPathComponent().appendingPathComponent("supabase_gotrue_check.py")
    }

    static let goTrueSteps = [
        "list_users with and without page arguments", "get_claims verified with the JWKS",
        "admin create and update with user_metadata and app_metadata", "update_user with data",
        "admin email change and email_confirm", "invite_user_by_email", "generate_link for every type, each link used",
        "admin factors: list and delete", "an unknown path answers GoTrue's error shape",
        "identity_data.email_verified follows the address", "a password change without proof answers GoTrue's code",
        "oauth clients map onto the provider's clients",
    ]
    static let rowLevelSecurityStep = "row-level security reads Gatehouse's claims"

    /// The answers GoTrue gives that apps and operators rely on (issue 46), read by Supabase's
    /// own Python client: the admin list with empty page arguments, claims it verifies with the
    /// JWKS, free `user_metadata` and operator-only `app_metadata`, the admin's address changes,
    /// invitations, every `generate_link` type used, the admin factor calls, GoTrue's error shape
    /// on unknown paths, OAuth clients, and a row-level security policy written as Supabase apps
    /// write them reading the claims in PostgreSQL (with `psql`; in CI it must run).
    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"), arguments: Backend.available)
    func supabasesOwnClientSeesGoTruesAnswers(_ backend: Backend) async throws {
        let postgresURL = TestDatabase.postgresAdminURL
        let bindir = PrivatePostgres.binaries
        if TestEnvironment.isCI {
            try #require(
                postgresURL != nil && bindir != nil,
                "CI runs the row-level security step: set GATEHOUSE_TEST_POSTGRES_URL and GATEHOUSE_TEST_PG_BINDIR")
        }
        let database: [String] = if let postgresURL, let bindir { ["--pg-url", postgresURL, "--psql", bindir + "/psql"] } else { [] }
        let sink = try await SMTPSink()
        defer { sink.stop() }
        try await TestApp.run(backend, preset: "default", setup: .live, adjust: Self.configure(sink)) { client, _ in
            let output = try await Command.run(
                try #require(SMTPSink.python),
                [Self.goTrueScript.path, "--url", "http://127.0.0.1:\(try #require(client.port))", "--anon", Self.anonKey,
                 "--service", Self.serviceRoleKey, "--maildir", sink.maildir.path, "--app-url", Self.appURL] + database)
            for step in Self.goTrueSteps { #expect(output.contains("ok: \(step)\n"), "missing step: \(step)\n\(output)") }
            if database.isEmpty {
                #expect(output.contains("skip: row-level security\n"), "\(output)")
            } else {
                let step = Self.rowLevelSecurityStep
                #expect(output.contains("ok: \(step)\n"), "missing step: \(step)\n\(output)")
            }
            #expect(output.contains("ALL OK"), "\(output)")
        }
    }
}
