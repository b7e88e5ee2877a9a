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

/// Issue 63: the app's auth hooks, called through the one `HookCaller` and answered by a real
/// endpoint (`Tests/support/hook_receiver.py`) that checks every call's Standard Webhooks
/// signature with the `standardwebhooks` package from PyPI.
@Suite(.requires(SMSReceiver.python != nil, "GATEHOUSE_TEST_PYTHON with standardwebhooks"))
struct HookTests {
    static let message = "Sign-ups from this domain are closed. Write to hello@example.com."

    /// `BEFORE_USER_CREATED` at `receiver` (`path`), the timeout short so a slow hook is quick to see.
    static func hook(
        _ receiver: HookReceiver, path: String = "/created", failOpen: Bool = false, format: HookFormat = .gatehouse
    ) -> @Sendable (inout GatehouseConfig) -> Void {
        { config in
            config.hooks[.beforeUserCreated] = HookEndpoint(url: URL(string: receiver.url(path))!, secret: receiver.secret, failOpen: failOpen, format: format)
            config.hooks.timeout = .milliseconds(800)
            config.preset.verification.sendOnSignup = true
        }
    }

    /// Every answer a hook may give to a password sign-up, through HTTP: allow makes the account
    /// (the call names the way in, the address, the client and the preset); reject answers 403
    /// `hook_rejected` with the hook's own sentence and stores nothing, mails nothing; a hook
    /// that is slow, erring, redirecting, oversized or says something else answers 503
    /// `hook_unavailable` (the redirect's target never called); fail-open lets the same failure
    /// through. Each reject and failure is in the audit trail.
    @Test(arguments: Backend.available)
    func eachAnswerOfTheHookDecidesASignUp(_ backend: Backend) async throws {
        let receiver = try await HookReceiver()
        defer { receiver.stop() }
        try await TestApp.run(backend, preset: "handz", setup: .live, adjust: Self.hook(receiver)) { client, config in
            let api = AuthClient(client: client)
            try receiver.allow()
            let made = try await api.signup("allowed@example.com")
            #expect(made.status == .created || made.status == .ok, "\(made.text)")
            let call = try #require(receiver.calls.last)
            #expect(call.path == "/created" && call.body["type"] as? String == "before_user_created")
            #expect(call.data["way_in"] as? String == "password" && call.data["email"] as? String == "allowed@example.com")
            #expect(call.data["preset"] as? String == "handz")
            #expect((call.data["client"] as? [String: Any])?["ip"] is String)
            #expect(call.webhookID.hasPrefix("msg_"))

            try receiver.reject(Self.message)
            let refused = try await api.signup("refused@example.com")
            #expect(refused.status == .forbidden && refused.error?.code == .hookRejected && refused.error?.message == Self.message, "\(refused.text)")
            try await Self.expectNothingStored(config, "refused@example.com")

            let failures: [(String, [String: Any])] = [
                ("timeout", ["delay_ms": 2_000]),
                ("status", ["status": 500, "body": ["decision": "allow"]]),
                ("status", ["redirect": receiver.url("/elsewhere")]),
                ("oversized", ["pad": 20_000]),
                ("malformed", ["body": ["decision": "maybe"]]),
                ("malformed", ["body": ["decision": "allow", "claims": [:] as [String: Any]]]),
                ("malformed", ["body": ["decision": "reject"]]),
                ("malformed", ["raw": "allow"]),
            ]
            for (index, (reason, plan)) in failures.enumerated() {
                try receiver.plan(plan)
                let email = "failure\(index)@example.com"
                let answer = try await api.signup(email)
                #expect(answer.status == .serviceUnavailable && answer.error?.code == .hookUnavailable, "\(reason) \(plan): \(answer.text)")
                #expect(answer.error?.message == "We can't finish this right now. Please try again in a moment.")
                try await Self.expectNothingStored(config, email)
            }
            #expect(receiver.calls.allSatisfy { $0.path != "/elsewhere" }, "a redirect was followed")
            #expect(receiver.rejections.isEmpty, "\(receiver.rejections)")

            let trail = try await TestApp.withStore(config) { store in try await store.auditEvents(userID: nil, event: "hook_call", before: nil, limit: 50) }
            #expect(trail.filter { $0.details["decision"] == "rejected" }.count == 1)
            #expect(trail.filter { $0.details["decision"] == "failed" }.map { $0.details["reason"] ?? "" }.sorted() == failures.map(\.0).sorted())
            #expect(trail.allSatisfy { $0.details["hook"] == "BEFORE_USER_CREATED" })
            // The console's overview shows the hook's health on this node: 2 decisions and 8 failures.
            let (_, console) = try await ConsoleTests.Console.signIn(client)
            let overview = try await #require(console).get("/admin").text
            let row = try #require(overview.firstRange(of: #"<tr data-hook="before_user_created">"#).map { overview[$0.lowerBound...].prefix { $0 != "\n" } })
            #expect(row.hasPrefix(#"<tr data-hook="before_user_created"><td>before_user_created</td><td>10</td><td>8</td><td>"#) && row.contains(" ms</td>"), "\(row)")
        }
        // Fail-open: the same timeout lets the sign-up through, and says so in the trail.
        try await TestApp.run(backend, preset: "handz", adjust: Self.hook(receiver, failOpen: true)) { client, config in
            try receiver.plan(["delay_ms": 2_000])
            let made = try await AuthClient(client: client).signup("open@example.com")
            #expect(made.status == .created || made.status == .ok, "\(made.text)")
            let trail = try await TestApp.withStore(config) { store in try await store.auditEvents(userID: nil, event: "hook_call", before: nil, limit: 5) }
            #expect(trail.first?.details["decision"] == "failed_open" && trail.first?.details["reason"] == "timeout")
        }
        // A hook nobody listens at, with the preset's own words for the failure.
        let closed = try SMTPSink.freePort()
        try await TestApp.run(backend, preset: "handz", adjust: {
            Self.hook(receiver)(&$0)
            $0.hooks[.beforeUserCreated]?.url = URL(string: "http://127.0.0.1:\(closed)/created")!
            $0.preset.copy["error.hook_unavailable"] = "Handz can't open new accounts this minute."
        }) { client, config in
            let answer = try await AuthClient(client: client).signup("closed@example.com")
            #expect(answer.status == .serviceUnavailable && answer.error?.message == "Handz can't open new accounts this minute.", "\(answer.text)")
            let trail = try await TestApp.withStore(config) { store in try await store.auditEvents(userID: nil, event: "hook_call", before: nil, limit: 5) }
            // The HTTP client may try a refused connection again until the deadline: then it
            // reads as a timeout.
            #expect(["unreachable", "timeout"].contains(trail.first?.details["reason"] ?? ""), "\(trail.first?.details ?? [:])")
            try await Self.expectNothingStored(config, "closed@example.com")
        }
    }

    /// A walk over the catalogue: every way in (`Credential.waysIn`) and the operator's doors on
    /// `/auth/v1` ask `BEFORE_USER_CREATED` before an account is made. With the hook saying no,
    /// each answers 403 `hook_rejected` with its message and the number of accounts does not
    /// move; then with the hook saying yes, the same attempt (the same code or link where it
    /// has one) makes the account, and the call named its way in. A new way in does not compile
    /// until the walk has a step for it.
    @Test(arguments: Backend.available)
    func everyWayInAsksBeforeAnAccountIsMade(_ backend: Backend) async throws {
        let receiver = try await HookReceiver()
        defer { receiver.stop() }
        let clock = ManualClock(Date())
        try await ProviderSignInTests.run(backend, preset: "hannah", clock: clock, setup: .live, adjust: {
            SessionDoorTests.configure(&$0)
            $0.preset.signInMethods.google = true
            Self.hook(receiver)(&$0)
        }) { api, apple, google, config in
            let count = { try await TestApp.withStore(config) { store in try await store.userCount() } }
            /// Tries `attempt` refused, then allowed: the refusal stores nothing, the allowed one
            /// makes one account and the hook was told `wayIn`.
            func walk(_ wayIn: String, _ attempt: () async throws -> TestResponse) async throws {
                try receiver.reject(Self.message)
                let before = try await count()
                let refused = try await attempt()
                // Gatehouse's shape on `/v1`, GoTrue's (`error_code`, `msg`) on `/auth/v1`.
                let body = try JSONSerialization.jsonObject(with: Data(refused.body.readableBytesView)) as? [String: Any] ?? [:]
                let error = body["error"] as? [String: Any] ?? [:]
                let (code, message) = (error["code"] ?? body["error_code"], error["message"] ?? body["msg"])
                #expect(refused.status == .forbidden && code as? String == "hook_rejected" && message as? String == Self.message, "\(wayIn): \(refused.text)")
                #expect(try await count() == before, "\(wayIn) stored an account the hook refused")
                try receiver.allow()
                let allowed = try await attempt()
                #expect([.ok, .created].contains(allowed.status), "\(wayIn): \(allowed.text)")
                #expect(try await count() == before + 1, "\(wayIn) made no account")
                #expect(receiver.calls.last?.data["way_in"] as? String == wayIn, "\(wayIn): \(receiver.calls.last?.data ?? [:])")
            }
            var walked: Set<Credential> = []
            for credential in Credential.waysIn {
                switch credential {
                case .password:
                    try await walk("password") { try await api.signup("hook-password@example.com") }
                case .emailLink:
                    #expect(try await api.post("/v1/auth/magic-link", PhoneTests.json(["email": "hook-magic@example.com"])).status == .accepted)
                    let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link") { $0.recipient == "hook-magic@example.com" }
                    let code = try EmailFlowTests.code(in: ReceivedMail(text: mail.textBody ?? ""))
                    try await walk("email_link") {
                        try await api.post("/v1/auth/magic-link/verify", PhoneTests.json(["email": "hook-magic@example.com", "code": code]))
                    }
                case .apple:
                    let token = try apple.token(sub: "hook-apple", email: "hook-apple@example.com", extra: ["email_verified": true], now: clock.now)
                    try await walk("apple") { try await api.post("/v1/auth/apple", ProviderSignInTests.body(token)) }
                case .google:
                    let token = try google.token(sub: "hook-google", email: "hook-google@example.com", extra: ["email_verified": true], now: clock.now)
                    try await walk("google") { try await api.post("/v1/auth/google", ProviderSignInTests.body(token)) }
                case .passkey:
                    let passkeys = PasskeyTests.Flow(api: api, device: try SoftAuthenticator())
                    try await walk("passkey") {
                        let options = try await passkeys.registrationOptions(email: "hook-passkey@example.com")
                        let made = try await passkeys.device.create("hook", options: options.options, origin: PasskeyTests.nativeOrigin)
                        return try await passkeys.verifyRegistration(options.challengeID, made)
                    }
                case .anonymous:
                    try await walk("anonymous") { try await api.post("/v1/auth/anonymous", "") }
                case .phone:
                    #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": PhoneTests.number])).status == .accepted)
                    let code = try PhoneTests.code(in: try await PhoneTests.sms(config, to: PhoneTests.number))
                    try await walk("phone") { try await api.post("/v1/auth/phone/verify", PhoneTests.json(["phone": PhoneTests.number, "code": code])) }
                case .totp, .recoveryCodes:
                    Issue.record("\(credential) is a second factor, not a way in")
                }
                walked.insert(credential)
            }
            #expect(walked == Set(Credential.waysIn))
            // `/auth/v1`: a sign-up, and the operator's create, invite and generated sign-up link.
            let service: HTTPFields = WaysInTests.apikey.merging([.authorization: "Bearer \(SupabaseCompatTests.serviceRoleKey)"])
            try await walk("password") {
                try await api.post("/auth/v1/signup", AuthClient.credentials("hook-gotrue@example.com", "correct horse battery"), headers: WaysInTests.apikey)
            }
            try await walk("operator") {
                try await api.post("/auth/v1/admin/users", #"{"email": "hook-admin@example.com", "password": "correct horse battery"}"#, headers: service)
            }
            try await walk("operator") { try await api.post("/auth/v1/invite", #"{"email": "hook-invite@example.com"}"#, headers: service) }
            try await walk("operator") {
                try await api.post(
                    "/auth/v1/admin/generate_link", #"{"type": "signup", "email": "hook-link@example.com", "password": "correct horse battery"}"#,
                    headers: service)
            }
            // The envelope's time is the server's clock's (two minutes ahead here, within the
            // receiver's tolerance for `webhook-timestamp`).
            clock.advance(by: 120)
            #expect([.ok, .created].contains(try await api.signup("hook-clock@example.com").status))
            #expect(receiver.calls.last?.body["timestamp"] as? String == clock.now.rfc3339)
            #expect(receiver.rejections.isEmpty, "\(receiver.rejections)")
        }
    }

    /// `BEFORE_SIGN_IN` after the credential check and before any session, through HTTP: the
    /// call names the account, the door, how the first factor was proved, the client and the
    /// preset; a reject answers 403 `hook_rejected` with the hook's sentence and opens no session
    /// (a sign-up it refuses makes no account either: one transaction); a failure answers 503;
    /// a refresh is no sign-in and goes on. `SessionDoorTests` walks every door with the hook set.
    @Test(arguments: Backend.available)
    func theHookDecidesEverySignIn(_ backend: Backend) async throws {
        let receiver = try await HookReceiver()
        defer { receiver.stop() }
        let adjust: @Sendable (inout GatehouseConfig) -> Void = { config in
            config.hooks[.beforeSignIn] = HookEndpoint(url: URL(string: receiver.url("/sign-in"))!, secret: receiver.secret, failOpen: false, format: .gatehouse)
            config.hooks.timeout = .milliseconds(800)
        }
        try await TestApp.run(backend, preset: "handz", setup: .live, adjust: adjust) { client, config in
            let api = AuthClient(client: client)
            try receiver.allow()
            let made = try await api.account("kept@example.com")
            let call = try #require(receiver.calls.last)
            #expect(call.path == "/sign-in" && call.body["type"] as? String == "before_sign_in")
            let user = call.data["user"] as? [String: Any]
            #expect(user?["id"] as? String == made.user.id && user?["email"] as? String == "kept@example.com" && user?["is_anonymous"] as? Bool == false)
            #expect(call.data["door"] as? String == "sign_up" && call.data["method"] as? String == "password" && call.data["provider"] as? String == "email")
            #expect(call.data["preset"] as? String == "handz" && (call.data["client"] as? [String: Any])?["ip"] is String)
            let userID = try #require(UserID(made.user.id))
            func sessions() async throws -> Int { try await TestApp.withStore(config) { try await $0.sessions(of: userID).count } }
            let opened = try await sessions()

            try receiver.reject(Self.message)
            let refused = try await api.login("kept@example.com")
            #expect(refused.status == .forbidden && refused.error?.code == .hookRejected && refused.error?.message == Self.message, "\(refused.text)")
            let refusedSignUp = try await api.signup("turned-away@example.com")
            #expect(refusedSignUp.status == .forbidden && refusedSignUp.error?.code == .hookRejected, "\(refusedSignUp.text)")
            try await Self.expectNothingStored(config, "turned-away@example.com")
            // A refresh opens no session: the one the hook allowed goes on.
            #expect(try await api.refresh(made.session.refreshToken).status == .ok)
            try receiver.plan(["status": 500])
            let failed = try await api.login("kept@example.com")
            #expect(failed.status == .serviceUnavailable && failed.error?.code == .hookUnavailable, "\(failed.text)")
            #expect(try await sessions() == opened)

            try receiver.allow()
            #expect(try await api.login("kept@example.com").status == .ok)
            #expect(try await sessions() == opened + 1)
            #expect(receiver.calls.last?.data["door"] as? String == "password")
            #expect(receiver.rejections.isEmpty, "\(receiver.rejections)")
            let trail = try await TestApp.withStore(config) { store in try await store.auditEvents(userID: nil, event: "hook_call", before: nil, limit: 20) }
            #expect(trail.allSatisfy { $0.details["hook"] == "BEFORE_SIGN_IN" })
            #expect(trail.filter { $0.details["decision"] == "rejected" }.count == 2)
            #expect(trail.filter { $0.details["decision"] == "failed" }.map { $0.details["reason"] } == ["status"])
            #expect(trail.contains { $0.details["decision"] == "rejected" && $0.userID == userID })
        }
    }

    /// The app's claims (`CUSTOM_ACCESS_TOKEN`), through HTTP: every token the app gets carries
    /// the hook's answer under `app` (a sign-up's, a refresh's, `/auth/v1`'s), read typed by
    /// `GatehouseVerifier`; the call names the account, the session, the occasion and the door;
    /// an answer the session may keep (`"cache": true`) is not asked again at a refresh; a
    /// reserved name or an answer over 1,000 bytes fails the call (503, nothing signed); a
    /// refresh whose hook fails leaves the refresh token as it was.
    @Test(arguments: Backend.available)
    func theHookPutsTheAppsClaimsInEveryToken(_ backend: Backend) async throws {
        struct Membership: Decodable, Equatable {
            var tier: String
            var seats: Int
        }
        let receiver = try await HookReceiver()
        defer { receiver.stop() }
        let adjust: @Sendable (inout GatehouseConfig) -> Void = { config in
            SupabaseCompatTests.withBothKeys(&config)
            config.hooks[.customAccessToken] = HookEndpoint(url: URL(string: receiver.url("/claims"))!, secret: receiver.secret, failOpen: false, format: .gatehouse)
            config.hooks.timeout = .milliseconds(800)
        }
        try await TestApp.run(backend, preset: "handz", setup: .live, adjust: adjust) { client, config in
            let api = AuthClient(client: client)
            func calls() -> [HookReceiver.Call] { receiver.calls.filter { $0.body["type"] as? String == "custom_access_token" } }
            func app(_ token: String) throws -> [String: Any]? { try jwtParts(token).claims["app"] as? [String: Any] }
            try receiver.plan(["body": ["claims": ["tier": "gold", "seats": 3]]])
            let made = try await api.account("claims@example.com")
            #expect(try app(made.session.accessToken)?["tier"] as? String == "gold")
            let call = try #require(calls().last)
            #expect((call.data["user"] as? [String: Any])?["id"] as? String == made.user.id)
            #expect(call.data["session_id"] as? String == made.session.sessionID && call.data["occasion"] as? String == "sign_in")
            #expect(call.data["door"] as? String == "sign_up" && call.data["method"] as? String == "password" && call.data["preset"] as? String == "handz")
            let port = try #require(client.port)
            let verifier = AccessTokenVerifier(
                jwksURL: URL(string: "http://127.0.0.1:\(port)/.well-known/jwks.json")!, issuer: config.issuer, audience: config.audience,
                fetch: .http())
            #expect(try await verifier.verify(made.session.accessToken).app(as: Membership.self) == Membership(tier: "gold", seats: 3))
            // The example backend reads them typed (`GET /whoami`).
            try receiver.plan(["body": ["claims": ["saved_flows": 4]]])
            let flowsToken = try await api.login("claims@example.com").json(AuthResponse.self).session.accessToken
            try await AppBackendTests.withBackend(gatehousePort: port, config, routes: [.flows], clock: SystemClock()) { backend in
                let whoami = try await AppBackendTests.call(backend, .get, "/whoami", token: flowsToken)
                let body = try JSONSerialization.jsonObject(with: Data(whoami.text.utf8)) as? [String: Any]
                #expect(body?["saved_flows"] as? Int == 4 && body?["user_id"] as? String == made.user.id, "\(whoami.text)")
                let plain = try await AppBackendTests.call(backend, .get, "/whoami", token: made.session.accessToken)
                #expect(plain.status == .internalServerError, "claims of another shape are the app's mistake: \(plain.text)")
            }
            try receiver.plan(["body": ["claims": ["tier": "gold", "seats": 3]]])

            // Without "cache" every refresh asks again; the answer of the moment is signed.
            try receiver.plan(["body": ["claims": ["tier": "platinum", "seats": 5]]])
            let refreshed = try await api.refresh(made.session.refreshToken).json(SessionResponse.self).session
            #expect(try app(refreshed.accessToken)?["tier"] as? String == "platinum" && calls().last?.data["occasion"] as? String == "refresh")

            // A session told it may keep the answer is not asked again at a refresh.
            try receiver.plan(["body": ["claims": ["tier": "silver", "seats": 1], "cache": true]])
            let kept = try await api.login("claims@example.com").json(AuthResponse.self).session
            let asked = calls().count
            let again = try await api.refresh(kept.refreshToken).json(SessionResponse.self).session
            #expect(try app(again.accessToken)?["tier"] as? String == "silver" && calls().count == asked)

            // /auth/v1's tokens carry them too, beside Supabase's claims.
            let gotrue = try await api.post(
                "/auth/v1/token?grant_type=password", #"{"email": "claims@example.com", "password": "correct horse battery"}"#,
                headers: WaysInTests.apikey)
            let gotrueToken = try #require((try JSONSerialization.jsonObject(with: Data(gotrue.text.utf8)) as? [String: Any])?["access_token"] as? String)
            #expect(try app(gotrueToken)?["tier"] as? String == "silver" && jwtParts(gotrueToken).claims["role"] as? String == "authenticated")

            // A reserved name, or more than 1,000 bytes: the call failed, nothing is signed.
            for claims in [["sub": "someone-else"], ["plan": "pro"], ["blob": String(repeating: "x", count: 1_000)]] as [[String: Any]] {
                try receiver.plan(["body": ["claims": claims]])
                let refused = try await api.login("claims@example.com")
                #expect(refused.status == .serviceUnavailable && refused.error?.code == .hookUnavailable, "\(claims): \(refused.text)")
            }
            // A refresh whose hook fails keeps its token: the same one works once the hook does.
            try receiver.plan(["status": 500])
            #expect(try await api.refresh(refreshed.refreshToken).status == .serviceUnavailable)
            try receiver.plan(["body": ["claims": ["tier": "gold", "seats": 3]]])
            #expect(try await api.refresh(refreshed.refreshToken).status == .ok)
            #expect(receiver.rejections.isEmpty, "\(receiver.rejections)")
            let trail = try await TestApp.withStore(config) { store in try await store.auditEvents(userID: nil, event: "hook_call", before: nil, limit: 20) }
            #expect(trail.filter { $0.details["hook"] == "CUSTOM_ACCESS_TOKEN" }.map { $0.details["reason"] ?? "" } == ["status", "malformed", "malformed", "malformed"])
        }
    }

    /// `SEND_EMAIL` takes every mail instead of SMTP, through HTTP: the verification a sign-up
    /// queues and a magic link (composed by the worker) reach the hook with the kind, the rendered
    /// subject, text and HTML, the link, its token and the code, under the mail's own
    /// `webhook-id`; the token and the code work; the outbox keeps neither body nor link once the
    /// hook took the mail; a hook that fails leaves the mail to be tried again. With
    /// `FORMAT=supabase` the hook gets Supabase's `send-email` payload.
    @Test(arguments: Backend.available)
    func theHookSendsEveryMail(_ backend: Backend) async throws {
        let receiver = try await HookReceiver()
        defer { receiver.stop() }
        @Sendable func mailed(_ kind: String, to address: String, type: String = "send_email") async throws -> HookReceiver.Call {
            for _ in 0..<200 {
                if let call = receiver.calls.last(where: { call in
                    type == "send_email"
                        ? call.data["kind"] as? String == kind && call.data["to"] as? String == address
                        : (call.body["email_data"] as? [String: Any])?["email_action_type"] as? String == kind
                            && (call.body["user"] as? [String: Any])?["email"] as? String == address
                }) { return call }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw ProcessError("no \(kind) mail to \(address) reached the hook")
        }
        let adjust: @Sendable (HookFormat) -> @Sendable (inout GatehouseConfig) -> Void = { format in
            { config in
                SupabaseCompatTests.withBothKeys(&config)
                config.hooks[.sendEmail] = HookEndpoint(url: URL(string: receiver.url("/mail"))!, secret: receiver.secret, failOpen: false, format: format)
                config.hooks.timeout = .milliseconds(800)
                config.preset.verification.sendOnSignup = true
                config.preset.signInMethods.magicLink = true
            }
        }
        try await TestApp.run(backend, preset: "handz", adjust: adjust(.gatehouse)) { client, config in
            let api = AuthClient(client: client)
            try receiver.plan(["body": [:] as [String: Any]])
            _ = try await api.account("mailed@example.com")
            let verification = try await mailed("verification", to: "mailed@example.com")
            #expect(verification.body["type"] as? String == "send_email")
            #expect(verification.data["subject"] as? String == "Confirm your email for \(config.preset.app.name)")
            let link = try #require(verification.data["link"] as? String)
            let token = try #require(verification.data["token"] as? String)
            #expect((verification.data["text"] as? String)?.contains(link) == true && (verification.data["html"] as? String)?.contains("<") == true)
            #expect(link.contains("token=\(token)") && verification.data["code"] == nil)
            #expect(verification.webhookID == "msg_" + (verification.data["mail_id"] as? String ?? ""))
            let verified = try await api.post("/auth/v1/verify", #"{"type": "signup", "token_hash": "\#(token)"}"#, headers: WaysInTests.apikey)
            #expect(verified.status == .ok, "\(verified.text)")

            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "mailed@example.com"}"#).status == .accepted)
            let magic = try await mailed("magic_link", to: "mailed@example.com")
            let code = try #require(magic.data["code"] as? String)
            #expect(code.count == 6 && (magic.data["text"] as? String)?.contains(code) == true)
            let signedIn = try await api.post("/v1/auth/magic-link/verify", #"{"email": "mailed@example.com", "code": "\#(code)"}"#)
            #expect(signedIn.status == .ok, "\(signedIn.text)")
            // Once the hook took them, the outbox keeps no body, link or code.
            let rows = try await TestApp.withStore(config) { try await $0.recentMail(limit: 20) }.filter { $0.recipient == "mailed@example.com" }
            #expect(!rows.isEmpty && rows.allSatisfy { $0.status == "sent" && $0.textBody == nil && $0.htmlBody == nil && $0.payload == nil }, "\(rows)")

            // A hook that fails (500, too slow, a redirect, an answer over 16 KiB): the mail waits
            // for its next attempt, its link and code still on the row; the redirect is not followed.
            let failures: [(String, [String: Any])] = [
                ("500", ["status": 500]), ("timeout", ["delay_ms": 2_000]), ("redirect", ["redirect": receiver.url("/elsewhere")]),
                ("oversized", ["pad": 20_000]),
            ]
            for (name, plan) in failures {
                try receiver.plan(plan)
                let address = "waiting-\(name)@example.com"
                let waiting = try await api.post("/v1/auth/magic-link", #"{"email": "\#(address)"}"#)
                #expect(waiting.status == .accepted, "\(waiting.text)")
                let failed = try await EmailFlowTests.outbox(config) { mails in
                    mails.contains { $0.recipient == address && $0.attempts == 1 && $0.status == "pending" && $0.lastError != nil }
                }.first { $0.recipient == address }
                #expect(failed?.payload?["code"]?.count == 6 && failed?.textBody != nil, "\(name): \(String(describing: failed))")
            }
            #expect(receiver.calls.allSatisfy { $0.path != "/elsewhere" }, "a redirect was followed")
            #expect(receiver.rejections.isEmpty, "\(receiver.rejections)")
        }
        // Supabase's send-email payload: the token, its hash and the action, for a hook that renders its own.
        try await TestApp.run(backend, preset: "handz", adjust: adjust(.supabase)) { client, _ in
            let api = AuthClient(client: client)
            try receiver.plan(["body": [:] as [String: Any]])
            _ = try await api.account("supabase-mailed@example.com")
            let signup = try await mailed("signup", to: "supabase-mailed@example.com", type: "supabase")
            let data = try #require(signup.body["email_data"] as? [String: Any])
            let hash = try #require(data["token_hash"] as? String)
            #expect(!hash.isEmpty && data["token"] as? String == "" && (data["site_url"] as? String)?.hasPrefix("http") == true)
            let verified = try await api.post("/auth/v1/verify", #"{"type": "signup", "token_hash": "\#(hash)"}"#, headers: WaysInTests.apikey)
            #expect(verified.status == .ok, "\(verified.text)")
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "supabase-mailed@example.com"}"#).status == .accepted)
            let magic = try #require(try await mailed("magiclink", to: "supabase-mailed@example.com", type: "supabase").body["email_data"] as? [String: Any])
            let code = try #require(magic["token"] as? String)
            #expect(code.count == 6)
            #expect(try await api.post("/v1/auth/magic-link/verify", #"{"email": "supabase-mailed@example.com", "code": "\#(code)"}"#).status == .ok)
        }
    }

    /// Every hook called while a person waits fails the same way through HTTP: a hook that is
    /// slow, erring, redirecting, oversized or says something else answers 503
    /// `hook_unavailable` at a sign-in (the redirect's target never called), and with
    /// `FAIL_OPEN` the same failure lets the sign-in through: `BEFORE_SIGN_IN` as if it allowed,
    /// `CUSTOM_ACCESS_TOKEN` with a token without `app` claims. (`BEFORE_USER_CREATED`'s walk is
    /// `eachAnswerOfTheHookDecidesASignUp`.)
    @Test(arguments: Backend.available)
    func everyHookInARequestFailsClosedOrOpen(_ backend: Backend) async throws {
        let receiver = try await HookReceiver()
        defer { receiver.stop() }
        for hook in [HookName.beforeSignIn, .customAccessToken] {
            for failOpen in [false, true] {
                let adjust: @Sendable (inout GatehouseConfig) -> Void = { config in
                    config.hooks[hook] = HookEndpoint(url: URL(string: receiver.url("/\(hook.rawValue.lowercased())"))!, secret: receiver.secret, failOpen: failOpen, format: .gatehouse)
                    // Room for a hook that answers at once on a machine busy with the other
                    // tests (at 800 ms an erring answer was once counted as a timeout in CI).
                    config.hooks.timeout = .milliseconds(2_500)
                }
                try await TestApp.run(backend, preset: "handz", adjust: adjust) { client, config in
                    let api = AuthClient(client: client)
                    let failures: [(String, [String: Any])] = [
                        ("timeout", ["delay_ms": 6_000]),
                        ("status", ["status": 500]),
                        ("status", ["redirect": receiver.url("/elsewhere")]),
                        ("oversized", ["pad": 20_000]),
                        ("malformed", ["raw": "yes"]),
                    ]
                    try receiver.plan(["body": hook == .beforeSignIn ? ["decision": "allow"] : ["claims": [:] as [String: Any]]])
                    let email = "\(hook.rawValue.lowercased())-\(failOpen)@example.com"
                    _ = try await api.account(email)
                    for (reason, plan) in failures {
                        try receiver.plan(plan)
                        let answer = try await api.login(email)
                        if failOpen {
                            #expect(answer.status == .ok, "\(hook) \(reason) \(plan): \(answer.text)")
                            if hook == .customAccessToken, answer.status == .ok {
                                #expect(try jwtParts(answer.json(AuthResponse.self).session.accessToken).claims["app"] == nil)
                            }
                        } else {
                            #expect(answer.status == .serviceUnavailable && answer.error?.code == .hookUnavailable, "\(hook) \(reason) \(plan): \(answer.text)")
                        }
                    }
                    let trail = try await TestApp.withStore(config) { store in try await store.auditEvents(userID: nil, event: "hook_call", before: nil, limit: 20) }
                    let reasons = failures.map(\.0).sorted()
                    #expect(trail.map { $0.details["reason"] ?? "" }.sorted() == reasons, "\(hook) \(failOpen)")
                    #expect(trail.allSatisfy { $0.details["hook"] == hook.rawValue && $0.details["decision"] == (failOpen ? "failed_open" : "failed") })
                }
            }
        }
        #expect(receiver.calls.allSatisfy { $0.path != "/elsewhere" }, "a redirect was followed")
        #expect(receiver.rejections.isEmpty, "\(receiver.rejections)")
    }

    /// No account, no identity and no mail for `email`.
    static func expectNothingStored(_ config: GatehouseConfig, _ email: String) async throws {
        let (stored, mailed) = try await TestApp.withStore(config) { store in
            (try await store.user(normalizedEmail: email) != nil, try await store.recentMail(limit: 100).contains { $0.recipient == email })
        }
        #expect(!stored, "\(email) was stored")
        #expect(!mailed, "\(email) was mailed")
    }

    /// Supabase Auth's `before-user-created` payload and answers (`FORMAT=supabase`), as its
    /// documentation gives them: `{}` allows, `{"error": {"http_code", "message"}}` rejects with
    /// the message.
    @Test(arguments: Backend.available)
    func aHookWrittenForSupabaseWorksUnchanged(_ backend: Backend) async throws {
        let receiver = try await HookReceiver()
        defer { receiver.stop() }
        try await TestApp.run(backend, preset: "handz", adjust: Self.hook(receiver, format: .supabase)) { client, config in
            let api = AuthClient(client: client)
            try receiver.plan(["body": [:] as [String: Any]])
            #expect([.ok, .created].contains(try await api.signup("supabase-allowed@example.com").status))
            let call = try #require(receiver.calls.last)
            let metadata = try #require(call.body["metadata"] as? [String: Any])
            #expect(metadata["name"] as? String == "before-user-created" && metadata["uuid"] is String && metadata["ip_address"] is String)
            let user = try #require(call.body["user"] as? [String: Any])
            #expect(user["email"] as? String == "supabase-allowed@example.com" && user["aud"] as? String == "authenticated")
            #expect((user["app_metadata"] as? [String: Any])?["provider"] as? String == "email")
            try receiver.plan(["body": ["error": ["http_code": 400, "message": Self.message]]])
            let refused = try await api.signup("supabase-refused@example.com")
            #expect(refused.status == .forbidden && refused.error?.code == .hookRejected && refused.error?.message == Self.message, "\(refused.text)")
            try await Self.expectNothingStored(config, "supabase-refused@example.com")
        }
        // Supabase's custom access token hook: the claims as GoTrue would sign them, and the whole
        // object back; the names it added are the app's, under `app`. What it changed of the
        // claims it was sent is not taken.
        try await TestApp.run(backend, preset: "handz", adjust: {
            $0.hooks[.customAccessToken] = HookEndpoint(url: URL(string: receiver.url("/claims"))!, secret: receiver.secret, failOpen: false, format: .supabase)
        }) { client, _ in
            let api = AuthClient(client: client)
            try receiver.plan(["add_claims": ["user_role": "moderator", "role": "service_role"]])
            let made = try await api.account("supabase-claims@example.com")
            let call = try #require(receiver.calls.last)
            #expect(call.body["user_id"] as? String == made.user.id && call.body["authentication_method"] as? String == "email/signup")
            let sent = try #require(call.body["claims"] as? [String: Any])
            #expect(sent["sub"] as? String == made.user.id && sent["session_id"] as? String == made.session.sessionID)
            #expect(sent["role"] as? String == "authenticated" && sent["aud"] as? String == "authenticated" && sent["aal"] as? String == "aal1")
            #expect(sent["email"] as? String == "supabase-claims@example.com" && sent["is_anonymous"] as? Bool == false && sent["exp"] is Int)
            let claims = try jwtParts(made.session.accessToken).claims
            #expect(claims["app"] as? [String: String] == ["user_role": "moderator"], "\(claims)")
            #expect(claims["role"] == nil)
            _ = try await api.refresh(made.session.refreshToken)
            #expect(receiver.calls.last?.body["authentication_method"] as? String == "token_refresh")
        }
    }

    /// The hooks' settings are read together at start: a URL needs its `whsec_` secret, a
    /// setting without its URL is named, and `supabase` only where Supabase has the hook.
    @Test func theHookSettingsAreCheckedAtStart() async throws {
        let secret = SMSReceiver.newHookSecret()
        let good = try await GatehouseConfig.load(environment: [
            "GATEHOUSE_HOOK_BEFORE_USER_CREATED_URL": "https://app.example.com/hooks/created",
            "GATEHOUSE_HOOK_BEFORE_USER_CREATED_SECRET": secret, "GATEHOUSE_HOOK_BEFORE_USER_CREATED_FAIL_OPEN": "true",
            "GATEHOUSE_HOOK_TIMEOUT_MS": "1500",
        ])
        #expect(good.hooks.timeout == .milliseconds(1_500))
        #expect(good.hooks[.beforeUserCreated]?.failOpen == true && good.hooks[.beforeUserCreated]?.format == .gatehouse)
        #expect(good.hooks[.beforeSignIn] == nil)
        let supabase = try await GatehouseConfig.load(environment: [
            "GATEHOUSE_HOOK_BEFORE_USER_CREATED_URL": "https://app.example.com/hooks/created",
            "GATEHOUSE_HOOK_BEFORE_USER_CREATED_SECRET": secret, "GATEHOUSE_HOOK_BEFORE_USER_CREATED_FORMAT": "Supabase",
        ])
        #expect(supabase.hooks[.beforeUserCreated]?.format == .supabase && supabase.hooks[.beforeUserCreated]?.failOpen == false)
        // Without any setting the default is five seconds and no hook.
        let none = try await GatehouseConfig.load(environment: [:])
        #expect(none.hooks.timeout == .milliseconds(5_000) && none.hooks.endpoints.isEmpty)
        do {
            _ = try await GatehouseConfig.load(environment: [
                "GATEHOUSE_HOOK_BEFORE_USER_CREATED_URL": "https://app.example.com/hooks/created",
                "GATEHOUSE_HOOK_CUSTOM_ACCESS_TOKEN_SECRET": secret,
                "GATEHOUSE_HOOK_TIMEOUT_MS": "0",
            ])
            Issue.record("the settings were accepted")
        } catch {
            #expect(error.problems.sorted() == [
                "GATEHOUSE_HOOK_BEFORE_USER_CREATED_SECRET: is required when GATEHOUSE_HOOK_BEFORE_USER_CREATED_URL is set",
                "GATEHOUSE_HOOK_CUSTOM_ACCESS_TOKEN_SECRET: is set without GATEHOUSE_HOOK_CUSTOM_ACCESS_TOKEN_URL",
                "GATEHOUSE_HOOK_TIMEOUT_MS: '0' is not a number of milliseconds from 100 to 30000",
            ])
        }
        do {
            _ = try await GatehouseConfig.load(environment: [
                "GATEHOUSE_HOOK_BEFORE_USER_CREATED_URL": "https://app.example.com/c", "GATEHOUSE_HOOK_BEFORE_USER_CREATED_SECRET": "plain",
                "GATEHOUSE_HOOK_BEFORE_USER_CREATED_FORMAT": "firebase",
            ])
            Issue.record("a plain secret was accepted")
        } catch {
            #expect(error.problems == ["GATEHOUSE_HOOK_BEFORE_USER_CREATED_SECRET: must be a Standard Webhooks secret: whsec_ and at least 16 bytes in base64"])
        }
        do {
            _ = try await GatehouseConfig.load(environment: [
                "GATEHOUSE_HOOK_BEFORE_USER_CREATED_URL": "https://app.example.com/c", "GATEHOUSE_HOOK_BEFORE_USER_CREATED_SECRET": secret,
                "GATEHOUSE_HOOK_BEFORE_USER_CREATED_FORMAT": "firebase",
            ])
            Issue.record("an unknown format was accepted")
        } catch {
            #expect(error.problems == ["GATEHOUSE_HOOK_BEFORE_USER_CREATED_FORMAT: 'firebase' is not gatehouse or supabase"])
        }
        do {
            _ = try await GatehouseConfig.load(environment: [
                "GATEHOUSE_HOOK_BEFORE_SIGN_IN_URL": "https://app.example.com/s", "GATEHOUSE_HOOK_BEFORE_SIGN_IN_SECRET": secret,
                "GATEHOUSE_HOOK_BEFORE_SIGN_IN_FORMAT": "supabase",
            ])
            Issue.record("a Supabase format for a hook Supabase has not was accepted")
        } catch {
            #expect(error.problems == ["GATEHOUSE_HOOK_BEFORE_SIGN_IN_FORMAT: supabase has no such hook; only gatehouse is spoken here"])
        }
        // SEND_EMAIL is delivered from the outbox and tried again: it has no fail-open.
        do {
            _ = try await GatehouseConfig.load(environment: [
                "GATEHOUSE_HOOK_SEND_EMAIL_URL": "https://app.example.com/mail", "GATEHOUSE_HOOK_SEND_EMAIL_SECRET": secret,
                "GATEHOUSE_HOOK_SEND_EMAIL_FAIL_OPEN": "true",
            ])
            Issue.record("a fail-open SEND_EMAIL was accepted")
        } catch {
            #expect(error.problems == ["GATEHOUSE_HOOK_SEND_EMAIL_FAIL_OPEN: SEND_EMAIL is delivered from the outbox and tried again; it has no fail-open"])
        }
        // Every hook of the contract is called by this version: each one's settings are taken.
        for hook in HookName.allCases {
            let stem = "GATEHOUSE_HOOK_\(hook.rawValue)"
            let loaded = try await GatehouseConfig.load(environment: ["\(stem)_URL": "https://app.example.com/h", "\(stem)_SECRET": secret])
            #expect(loaded.hooks[hook]?.url.absoluteString == "https://app.example.com/h", "\(hook)")
        }
    }
}
