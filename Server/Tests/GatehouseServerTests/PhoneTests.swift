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

/// Issue 43: phone numbers, Hannah's phase 3. Sign-up and sign-in by an SMS code, a number on
/// the profile, the last-way-in refusal, a second factor's challenge after a code, and the same
/// answer for known and unknown numbers, through HTTP on both databases.
@Suite struct PhoneTests {
    static let number = "+14155550142"

    /// Hannah's preset (phone on, US numbers), with room for the tests' sends.
    static func roomy(_ config: inout GatehouseConfig) {
        config.preset.sms.perClientPerHour = 1_000
        config.preset.sms.perRangePerHour = 1_000
        config.httpIdleTimeoutSeconds = 600
    }

    /// The newest SMS in the outbox for `to` (E.164), after `after`.
    static func sms(_ config: GatehouseConfig, to: String, after: UUID? = nil) async throws -> OutboxMessage {
        try await EmailFlowTests.outboxMail(config, kind: "sms", after: after) { $0.recipient == to }
    }

    /// The code an SMS carries: its last line is `@<host> #<code>`.
    static func code(in message: OutboxMessage) throws -> String {
        let last = try #require(message.textBody?.split(separator: "\n").last)
        return String(try #require(last.split(separator: "#").last))
    }

    static func json(_ object: [String: String]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    /// Asks for a code and signs in with it.
    static func signIn(_ api: AuthClient, _ config: GatehouseConfig, _ typed: String, e164: String) async throws -> TestResponse {
        let previous = try? await TestApp.withStore(config) { store in try await store.recentMail(limit: 50).first { $0.kind == "sms" }?.id }
        let sent = try await api.post("/v1/auth/phone/code", json(["phone": typed]))
        #expect(sent.status == .accepted, "\(sent.text)")
        let message = try await sms(config, to: e164, after: previous ?? nil)
        return try await api.post("/v1/auth/phone/verify", json(["phone": typed, "code": try code(in: message)]))
    }

    /// A magic-link sign-up by its code; the session's access token.
    static func magicSignIn(_ api: AuthClient, _ config: GatehouseConfig, _ email: String) async throws -> String {
        #expect(try await api.post("/v1/auth/magic-link", json(["email": email])).status == .accepted)
        let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link") { $0.recipient == email }
        let code = try EmailFlowTests.code(in: ReceivedMail(text: mail.textBody ?? ""))
        let signedIn = try await api.post("/v1/auth/magic-link/verify", json(["email": email, "code": code]))
        return try #require(try signedIn.json(SignInAnswer<SignInResponse>.self).signedIn, "\(signedIn.text)").session.accessToken
    }

    @Test(arguments: Backend.available)
    func signUpSignInAndTheNumberOnTheProfile(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: Self.roomy) { client, config in
            let api = AuthClient(client: client)
            // Sign-up: the number as people type it, the SMS in the preset's words with the
            // domain-bound one-time-code line, the account made with the number verified.
            #expect(try await api.post("/v1/auth/phone/code", Self.json(["phone": "(415) 555-0142"])).status == .accepted)
            let message = try await Self.sms(config, to: Self.number)
            let code = try Self.code(in: message)
            #expect(message.textBody == "Your Hannah Health sign-in code is \(code). It expires in 10 minutes. Don't share it.\n\n@127.0.0.1 #\(code)")
            #expect(message.payload?["purpose"] == "sign_in")
            let signUp = try await api.post("/v1/auth/phone/verify", Self.json(["phone": "(415) 555-0142", "code": code]))
            #expect(signUp.status == .ok, "\(signUp.text)")
            let made = try #require(try signUp.json(SignInAnswer<SignInResponse>.self).signedIn)
            #expect(made.created && made.user.phone == Self.number && made.user.phoneVerified && made.user.email == nil)
            #expect(made.user.identities.map(\.provider) == [.phone])
            let amr = try #require(jwtParts(made.session.accessToken).claims["amr"] as? [[String: Any]])
            #expect(amr.map { $0["method"] as? String } == ["sms"], "\(amr)")
            // Hannah's 7-day trial starts at sign-up, as with a magic link.
            let plan = try await api.get("/v1/entitlements", token: made.session.accessToken).json(EntitlementsPayload.self)
            let created = try #require(ISO8601DateFormatter().date(from: made.user.createdAt))
            let ends = try #require(plan.trial.flatMap { ISO8601DateFormatter().date(from: $0.endsAt) })
            #expect(plan.planState == .trial && abs(ends.timeIntervalSince(created) - 7 * 86_400) <= 1, "\(String(describing: plan.trial))")
            // A verified number passes Hannah's verification rules, as a verified address does.
            let check = try await api.post("/v1/entitlements/check", Self.json(["action": "ai_chat"]), token: made.session.accessToken)
            let decision = try check.json(GateDecision.self)
            #expect(check.status == .ok && decision.allowed, "\(check.text)")
            #expect(try jwtParts(made.session.accessToken).claims["phone_verified"] as? Bool == true)
            // The code was used: again it is refused.
            let again = try await api.post("/v1/auth/phone/verify", Self.json(["phone": Self.number, "code": code]))
            #expect(again.status == .badRequest && again.error?.code == .invalidCode)

            // Sign-in: a minute later (one send a minute per number), the same account.
            clock.advance(by: 61)
            let signIn = try await Self.signIn(api, config, "+1 415 555 0142", e164: Self.number)
            let back = try #require(try signIn.json(SignInAnswer<SignInResponse>.self).signedIn, "\(signIn.text)")
            #expect(!back.created && back.user.id == made.user.id)

            // The number is the account's only way in.
            let last = try await api.client.execute(
                uri: "/v1/me/phone", method: .delete, headers: [.authorization: "Bearer \(back.session.accessToken)"])
            #expect(last.status == .conflict && last.error?.code == .lastIdentity)
            #expect(last.error?.message == "This number is the only way to sign in to this account, so it cannot be removed.")

            // Changing it: a recent sign-in, a code to the new number, which then is the account's.
            let other = "+14155550143"
            #expect(try await api.post("/v1/me/phone", Self.json(["phone": "415-555-0143"]), token: back.session.accessToken).status == .accepted)
            let change = try await Self.sms(config, to: other)
            #expect(change.payload?["purpose"] == "verify_phone")
            #expect(change.textBody?.hasPrefix("Your Hannah Health code to add this number is ") == true)
            let wrong = try await api.post("/v1/me/phone/verify", Self.json(["code": "000000" == (try Self.code(in: change)) ? "111111" : "000000"]), token: back.session.accessToken)
            #expect(wrong.status == .badRequest && wrong.error?.code == .invalidCode && wrong.error?.details?["attempts_left"] == .number(4))
            let changed = try await api.post("/v1/me/phone/verify", Self.json(["code": try Self.code(in: change)]), token: back.session.accessToken)
            #expect(changed.status == .ok, "\(changed.text)")
            #expect(try changed.json(UserResponse.self).user.phone == other)
            let me = try await api.get("/v1/me", token: back.session.accessToken).json(MeResponse.self)
            #expect(me.user.phone == other && me.user.phoneVerified)

            // A stale session may not add a number.
            clock.advance(by: 301)
            let stale = try await api.post("/v1/me/phone", Self.json(["phone": "+14155550144"]), token: back.session.accessToken)
            #expect(stale.status == .forbidden && stale.error?.code == .reauthenticationRequired)
            #expect(stale.error?.message == "To change your phone number, sign in again first.")

            // Another account may not take it: its code goes out as to any number (issue 58: no
            // oracle), and whoever proves the number hears 409. It may remove its own number when
            // it has another way in.
            let magic = try await Self.magicSignIn(api, config, "second.phone@example.com")
            clock.advance(by: 61)
            #expect(try await api.post("/v1/me/phone", Self.json(["phone": other]), token: magic).status == .accepted)
            let takenCode = try Self.code(in: try await Self.sms(config, to: other, after: change.id))
            let taken = try await api.post("/v1/me/phone/verify", Self.json(["code": takenCode]), token: magic)
            #expect(taken.status == .conflict && taken.error?.code == .phoneInUse, "\(taken.text)")
            clock.advance(by: 61)
            #expect(try await api.post("/v1/me/phone", Self.json(["phone": "+14155550150"]), token: magic).status == .accepted)
            let its = try await Self.sms(config, to: "+14155550150")
            #expect(try await api.post("/v1/me/phone/verify", Self.json(["code": try Self.code(in: its)]), token: magic).status == .ok)
            let removed = try await api.client.execute(uri: "/v1/me/phone", method: .delete, headers: [.authorization: "Bearer \(magic)"])
            #expect(removed.status == .noContent)
            let after = try await api.get("/v1/me", token: magic).json(MeResponse.self)
            #expect(after.user.phone == nil && !after.user.phoneVerified && !after.user.identities.contains { $0.provider == .phone })
            // The operators' search finds an account by its number.
            let found = try await api.client.execute(uri: "/admin/v1/users?q=%2B14155550143", method: .get, headers: TestApp.adminHeaders)
            #expect(try found.json(AdminUserList.self).users.map(\.user.id) == [made.user.id], "\(found.text) \(made.user.id)")
        }
    }

    /// The SMS's words come from the preset: changed copy is what goes out.
    @Test func theTextComesFromThePresetsCopy() async throws {
        try await TestApp.run(.sqlite, preset: "hannah", adjust: {
            Self.roomy(&$0)
            $0.preset.copy["sms.sign_in"] = "{code} is your {app} code ({minutes} min)."
        }) { client, config in
            let api = AuthClient(client: client)
            #expect(try await api.post("/v1/auth/phone/code", Self.json(["phone": Self.number])).status == .accepted)
            let message = try await Self.sms(config, to: Self.number)
            let code = try Self.code(in: message)
            #expect(message.textBody == "\(code) is your Hannah Health code (10 min).\n\n@127.0.0.1 #\(code)")
        }
    }

    /// Numbers that cannot be, or are of a country the preset does not send to, are refused
    /// with `invalid_phone`; a preset without phone answers `method_disabled`.
    @Test func refusals() async throws {
        try await TestApp.run(.sqlite, preset: "hannah", adjust: Self.roomy) { client, _ in
            let api = AuthClient(client: client)
            let short = try await api.post("/v1/auth/phone/code", Self.json(["phone": "555-0100"]))
            #expect(short.status == .badRequest && short.error?.code == .invalidPhone && short.error?.details?["reason"] == .string("impossible_length"))
            let letters = try await api.post("/v1/auth/phone/code", Self.json(["phone": "call me"]))
            #expect(letters.error?.code == .invalidPhone && letters.error?.details?["reason"] == .string("not_a_number"))
            let abroad = try await api.post("/v1/auth/phone/code", Self.json(["phone": "+44 20 7946 0958"]))
            #expect(abroad.status == .badRequest && abroad.error?.code == .invalidPhone)
            #expect(abroad.error?.message == "We can't send codes to numbers in this country.")
        }
        try await TestApp.run(.sqlite, preset: "handz") { client, _ in
            let off = try await AuthClient(client: client).post("/v1/auth/phone/code", Self.json(["phone": Self.number]))
            #expect(off.status == .forbidden && off.error?.code == .methodDisabled)
        }
    }

    /// An account with a confirmed second factor gets the usual challenge after a code.
    @Test(arguments: Backend.available)
    func aSecondFactorIsAskedForAfterACode(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: Self.roomy) { client, config in
            let api = AuthClient(client: client)
            let first = try #require(try await Self.signIn(api, config, Self.number, e164: Self.number).json(SignInAnswer<SignInResponse>.self).signedIn)
            let codes = MFAFlow(api: api, clock: clock)
            let enrolled = try await codes.enroll(first.session.accessToken)
            try await codes.confirm(enrolled, token: first.session.accessToken)
            clock.advance(by: 61)
            let next = try await Self.signIn(api, config, Self.number, e164: Self.number).json(SignInAnswer<SignInResponse>.self)
            #expect(next.signedIn == nil)
            let challenge = try #require(next.challenge)
            #expect(challenge.factors.map(\.type) == ["totp"])
        }
    }

    /// Known and unknown numbers get the same bytes from `POST /v1/auth/phone/code`, in about
    /// the same time: both pass the same defences and both get a code (sign-ups are on).
    @Test(arguments: Backend.available)
    func knownAndUnknownNumbersGetTheSameAnswer(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "hannah", adjust: Self.roomy) { client, config in
            let api = AuthClient(client: client)
            let known = (0..<12).map { "+1415555\(String(format: "%04d", 2000 + $0))" }
            let unknown = (0..<12).map { "+1415555\(String(format: "%04d", 3000 + $0))" }
            try await TestApp.withStore(config) { store in
                for number in known {
                    var user = User(id: .random(), createdAt: Date())
                    (user.phone, user.phoneVerifiedAt) = (number, Date())
                    try await store.insertUser(user)
                }
            }
            // Each pair runs back to back, the known number first in one pair and second in the
            // next, so the load of a busy machine falls on both halves of a pair alike.
            var pairs: [(known: Double, unknown: Double)] = []
            for (index, (a, b)) in zip(known, unknown).enumerated() {
                var answers: (known: String, unknown: String) = ("", "")
                func timed(_ number: String, _ answer: inout String) async throws -> Double {
                    let took = try await ContinuousClock().measure { answer = EnumerationTests.answer(try await api.post("/v1/auth/phone/code", Self.json(["phone": number]))) }
                    return Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
                }
                if index.isMultiple(of: 2) {
                    let first = try await timed(a, &answers.known)
                    pairs.append((first, try await timed(b, &answers.unknown)))
                } else {
                    let first = try await timed(b, &answers.unknown)
                    pairs.append((try await timed(a, &answers.known), first))
                }
                #expect(answers.known == answers.unknown, "\(answers.known)\n---\n\(answers.unknown)")
            }
            // The same work either way: the median difference within a pair is within 25 ms, or
            // within half the median request.
            func median(_ list: [Double]) -> Double { list.sorted()[list.count / 2] }
            let difference = median(pairs.map { $0.known - $0.unknown })
            let typical = median(pairs.map { max($0.known, $0.unknown) })
            #expect(abs(difference) <= max(0.025, typical / 2), "known minus unknown \(difference) s, a request \(typical) s")
            let sent = try await TestApp.withStore(config) { store in try await store.recentMail(limit: 100).filter { $0.kind == "sms" }.count }
            #expect(sent == 24)
        }
    }

    /// A number belongs to at most one account: the unique key refuses a second one.
    @Test(arguments: Backend.available)
    func aNumberBelongsToOneAccountByAUniqueKey(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "hannah") { _, config in
            try await TestApp.withStore(config) { store in
                var first = User(id: .random(), createdAt: Date())
                first.phone = Self.number
                try await store.insertUser(first)
                var second = User(id: .random(), createdAt: Date())
                second.phone = Self.number
                await #expect(throws: StoreError.self) { try await store.insertUser(second) }
                do {
                    try await store.insertUser(second)
                } catch let error as StoreError {
                    #expect(error.uniqueKey == .phone)
                }
                #expect(try await store.user(phone: Self.number)?.id == first.id)
            }
        }
    }
}

/// Bursts released on their last byte (`LastByteRace`), on both databases.
@Suite struct PhoneBurstTests {
    /// 60 wrong guesses at one code: at most 5 are compared, and the right code afterwards
    /// finds the code dead.
    @Test(arguments: Backend.available)
    func sixtyGuessesAtOneCodeAreComparedFiveTimesAtMost(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "hannah", setup: .live, adjust: { PhoneTests.roomy(&$0); $0.ipLimits = false }) { client, config in
            let api = AuthClient(client: client)
            let port = try #require(client.port)
            #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": PhoneTests.number])).status == .accepted)
            let code = try PhoneTests.code(in: try await PhoneTests.sms(config, to: PhoneTests.number))
            let wrong = Array((0..<1_000_000).lazy.map { String(format: "%06d", $0) }.filter { $0 != code }.prefix(60))
            let answers = try await BurstGate.exclusive {
                try await LastByteRace.send(
                    port: port,
                    wrong.map { LastByteRace.request("POST", "/v1/auth/phone/verify", json: PhoneTests.json(["phone": PhoneTests.number, "code": $0])) })
            }
            // By number alone every wrong guess answers the same (issue 58): no tries left said.
            #expect(answers.allSatisfy { $0.status == 400 && $0.error?.code == .invalidCode && $0.error?.details == nil }, "\(answers.map(\.status))")
            let attempts = try await TestApp.withStore(config) { store in
                try await store.newestPhoneCode(phone: PhoneTests.number, purpose: .signIn, userID: nil)?.attempts
            }
            #expect(attempts == 5)
            let right = try await api.post("/v1/auth/phone/verify", PhoneTests.json(["phone": PhoneTests.number, "code": code]))
            #expect(right.status == .badRequest && right.error?.code == .invalidCode)
        }
    }

    /// 30 sends to one number released together: one SMS goes out.
    @Test(arguments: Backend.available)
    func thirtySendsToOneNumberSendOne(_ backend: Backend) async throws {
        // The clock stands still, so the burst cannot straddle two of the minute's windows.
        try await TestApp.run(backend, preset: "hannah", clock: ManualClock(Date()), setup: .live, adjust: { PhoneTests.roomy(&$0) }) { client, config in
            let port = try #require(client.port)
            let answers = try await BurstGate.exclusive {
                try await LastByteRace.send(
                    port: port, LastByteRace.request("POST", "/v1/auth/phone/code", json: PhoneTests.json(["phone": PhoneTests.number])), copies: 30)
            }
            #expect(answers.filter { $0.status == 202 }.count == 1, "\(answers.map(\.status))")
            #expect(answers.filter { $0.status == 429 && $0.error?.code == .rateLimited }.count == 29)
            try await Task.sleep(for: .milliseconds(300))
            let sent = try await TestApp.withStore(config) { store in
                try await store.recentMail(limit: 100).filter { $0.kind == "sms" && $0.recipient == PhoneTests.number }.count
            }
            #expect(sent == 1)
        }
    }

    /// 20 sign-ups racing with the number's code: one account.
    @Test(arguments: Backend.available)
    func twentySignUpsRacingForOneNumberMakeOneAccount(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "hannah", setup: .live, adjust: { PhoneTests.roomy(&$0); $0.ipLimits = false }) { client, config in
            let api = AuthClient(client: client)
            let port = try #require(client.port)
            #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": PhoneTests.number])).status == .accepted)
            let code = try PhoneTests.code(in: try await PhoneTests.sms(config, to: PhoneTests.number))
            let answers = try await BurstGate.exclusive {
                try await LastByteRace.send(
                    port: port,
                    LastByteRace.request("POST", "/v1/auth/phone/verify", json: PhoneTests.json(["phone": PhoneTests.number, "code": code])), copies: 20)
            }
            #expect(answers.filter { $0.status == 200 }.count == 1, "\(answers.map(\.status))")
            let accounts = try await TestApp.withStore(config) { store in try await store.userCount() }
            #expect(accounts == 1)
        }
    }
}

/// `/auth/v1`'s phone flows with Supabase's own Python clients, unchanged:
/// `sign_in_with_otp({"phone"})`, `verify_otp(type "sms")`, `update_user({"phone"})` and
/// `verify_otp(type "phone_change")`, on both databases.
@Suite struct SupabasePhoneTests {
    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("support/supabase_phone_check.py")
    }

    static let steps = [
        "settings offer phone", "sign in with an SMS code", "one send a minute per number", "change the number with phone_change",
        "sign up with a number and a password", "refusals in GoTrue's words",
    ]

    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"), arguments: Backend.available, ["supabase_auth", "gotrue"])
    func supabasesOwnClientSignsInWithAPhone(_ backend: Backend, _ library: String) async throws {
        try await TestApp.run(backend, preset: "hannah", setup: .live, adjust: {
            PhoneTests.roomy(&$0)
            SupabaseCompatTests.withBothKeys(&$0)
            // Passwords on, for `sign_up` with a number and a password.
            $0.preset.signInMethods.emailPassword = true
        }) { client, _ in
            let output = try await Command.run(
                try #require(SMTPSink.python),
                [Self.script.path, "--url", "http://127.0.0.1:\(try #require(client.port))", "--anon", SupabaseCompatTests.anonKey,
                 "--library", library])
            for step in Self.steps { #expect(output.contains("ok: \(step)\n"), "missing step: \(step)\n\(output)") }
            #expect(output.contains("ALL OK"), "\(output)")
        }
    }

    /// `resend` with `sms` (a phone sign-up's code: the newest works, the replaced one does not,
    /// the password stays) and `phone_change` (the change's code again), with three sends a
    /// minute per number so a resend fits; nothing to a number with nothing pending, and the
    /// per-number limits refusing a send past them.
    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"), arguments: Backend.available)
    func supabasesOwnClientResendsSMSCodes(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "hannah", setup: .live, adjust: {
            PhoneTests.roomy(&$0)
            SupabaseCompatTests.withBothKeys(&$0)
            $0.preset.signInMethods.emailPassword = true
            $0.preset.sms.perNumberPerMinute = 3
        }) { client, _ in
            let output = try await Command.run(
                try #require(SMTPSink.python),
                [Self.script.path, "--url", "http://127.0.0.1:\(try #require(client.port))", "--anon", SupabaseCompatTests.anonKey,
                 "--library", "supabase_auth", "--resend"])
            for step in ["resend a sign-up's code", "resend a number change's code"] {
                #expect(output.contains("ok: \(step)\n"), "missing step: \(step)\n\(output)")
            }
            #expect(output.contains("ALL OK"), "\(output)")
        }
    }
}
