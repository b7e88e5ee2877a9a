import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Issue 58's findings, each as the attacker ran it, through HTTP on both databases: a code
/// belongs to its number, its purpose and whoever asked, not to an account.
@Suite struct PhoneFindingsTests {
    static let password = "attacker's own passphrase 58"

    /// Hannah's preset with passwords on and `/auth/v1` served.
    static func configure(_ config: inout GatehouseConfig) {
        PhoneTests.roomy(&config)
        SupabaseCompatTests.withBothKeys(&config)
        config.preset.signInMethods.emailPassword = true
    }

    /// A call to `/auth/v1` as a Supabase client makes it: the anon key, and a session's token when given.
    static func goTrue(
        _ client: any TestClientProtocol, _ uri: String, _ body: [String: String], method: HTTPRequest.Method = .post, token: String? = nil
    ) async throws -> TestResponse {
        let apikey = HTTPField.Name("apikey")!
        let headers: HTTPFields = [
            apikey: SupabaseCompatTests.anonKey, .contentType: "application/json",
            .authorization: "Bearer \(token ?? SupabaseCompatTests.anonKey)",
        ]
        return try await client.execute(uri: "/auth/v1" + uri, method: method, headers: headers, body: ByteBuffer(string: PhoneTests.json(body)))
    }

    /// The JSON object of an answer.
    static func object(_ response: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]) ?? [:]
    }

    /// The newest SMS to `to` and its code.
    static func newestCode(_ config: GatehouseConfig, to: String, after: UUID? = nil) async throws -> (id: UUID, code: String) {
        let message = try await PhoneTests.sms(config, to: to, after: after)
        return (message.id, try PhoneTests.code(in: message))
    }

    static func smsCount(_ config: GatehouseConfig, to: String) async throws -> Int {
        try await TestApp.withStore(config) { store in try await store.recentMail(limit: 200).filter { $0.kind == "sms" && $0.recipient == to }.count }
    }

    /// Finding 1 (high): an attacker signs up with the victim's number and a password; the
    /// victim asks for a sign-in code; the attacker's `resend` must not swap in a code that keeps
    /// the password. The victim types the newest SMS and gets the number's account without the
    /// attacker's password. Run in both orders: the sign-up before the victim's request, and
    /// after it (the sign-up's own code then arrives last).
    @Test(arguments: Backend.available)
    func anUnprovedSignUpKeepsNoPasswordThroughTheHoldersCode(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: Self.configure) { client, config in
            let api = AuthClient(client: client)
            for (number, signUpFirst) in [("+14155550161", true), ("+14155550162", false)] {
                if !signUpFirst {
                    #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": number])).status == .accepted)
                    clock.advance(by: 61)
                }
                let made = try await Self.goTrue(client, "/signup", ["phone": number, "password": Self.password])
                #expect(made.status == .ok, "\(made.text)")
                let attackers = try #require((Self.object(made)["id"] ?? (Self.object(made)["user"] as? [String: Any])?["id"]) as? String)
                if signUpFirst {
                    clock.advance(by: 61)
                    // The victim asks for a sign-in code; a minute on, the attacker asks for a resend.
                    #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": number])).status == .accepted)
                    clock.advance(by: 61)
                    let resent = try await Self.goTrue(client, "/resend", ["type": "sms", "phone": number])
                    #expect(resent.status == .ok, "\(resent.text)")
                }
                // The victim types the newest SMS.
                let newest = try await Self.newestCode(config, to: number)
                let signedIn = try await api.post("/v1/auth/phone/verify", PhoneTests.json(["phone": number, "code": newest.code]))
                #expect(signedIn.status == .ok, "\(signedIn.text)")
                let answer = try #require(try signedIn.json(SignInAnswer<SignInResponse>.self).signedIn)
                #expect(answer.user.id.description == attackers && answer.user.phoneVerified)
                // The attacker's password no longer opens it, on either surface.
                let grant = try await Self.goTrue(client, "/token?grant_type=password", ["phone": number, "password": Self.password])
                #expect(grant.status == .badRequest && Self.object(grant)["error_code"] as? String == "invalid_credentials", "\(grant.text)")
                clock.advance(by: 61)
            }
        }
    }

    /// Finding 1's oracle: a wrong guess at a number someone asked a code for answers exactly as
    /// one at a number nobody did, on both surfaces (no `attempts_left` telling when the victim asked).
    @Test(arguments: Backend.available)
    func aWrongGuessSaysNothingOfALiveCode(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "hannah", adjust: Self.configure) { client, config in
            let api = AuthClient(client: client)
            let (asked, quiet) = ("+14155550163", "+14155550164")
            #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": asked])).status == .accepted)
            let live = try await Self.newestCode(config, to: asked)
            let wrong = live.code == "000000" ? "111111" : "000000"
            let first = try await api.post("/v1/auth/phone/verify", PhoneTests.json(["phone": asked, "code": wrong]))
            let second = try await api.post("/v1/auth/phone/verify", PhoneTests.json(["phone": quiet, "code": wrong]))
            #expect(first.status == .badRequest && first.error?.code == .invalidCode, "\(first.text)")
            #expect(first.status == second.status && first.text == second.text, "\(first.text) vs \(second.text)")
            let viaGoTrue = try await Self.goTrue(client, "/verify", ["type": "sms", "phone": asked, "token": wrong])
            let quietGoTrue = try await Self.goTrue(client, "/verify", ["type": "sms", "phone": quiet, "token": wrong])
            #expect(viaGoTrue.status == quietGoTrue.status && viaGoTrue.text == quietGoTrue.text, "\(viaGoTrue.text) vs \(quietGoTrue.text)")
            // The holder's code still works after the guesses.
            let signedIn = try await api.post("/v1/auth/phone/verify", PhoneTests.json(["phone": asked, "code": live.code]))
            #expect(signedIn.status == .ok, "\(signedIn.text)")
        }
    }

    /// Finding 2: the victim asks to change to N, the attacker's own account asks for N a minute
    /// later. The newest SMS (the attacker's) typed without a session confirms nothing and opens
    /// no session; a resend sends neither change; the victim's own code with the victim's session
    /// makes N the victim's, and the attacker's account never gets it.
    @Test(arguments: Backend.available)
    func twoAccountsChangesToOneNumberDoNotMeet(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: Self.configure) { client, config in
            let api = AuthClient(client: client)
            let number = "+14155550165"
            let victim = try await PhoneTests.magicSignIn(api, config, "victim.58@example.com")
            let attacker = try await PhoneTests.magicSignIn(api, config, "attacker.58@example.com")
            #expect(try await Self.goTrue(client, "/user", ["phone": number], method: .put, token: victim).status == .ok)
            let victims = try await Self.newestCode(config, to: number)
            clock.advance(by: 61)
            #expect(try await Self.goTrue(client, "/user", ["phone": number], method: .put, token: attacker).status == .ok)
            let attackers = try await Self.newestCode(config, to: number, after: victims.id)
            // The newest SMS, typed as a Supabase client does (no session): refused.
            let typed = try await Self.goTrue(client, "/verify", ["type": "phone_change", "phone": number, "token": attackers.code])
            #expect(typed.status != .ok && Self.object(typed)["access_token"] == nil, "\(typed.text)")
            // A resend by number alone cannot tell whose change to send: nothing goes out.
            let before = try await Self.smsCount(config, to: number)
            clock.advance(by: 61)
            #expect(try await Self.goTrue(client, "/resend", ["type": "phone_change", "phone": number]).status == .ok)
            #expect(try await Self.smsCount(config, to: number) == before)
            // The victim's own code with the victim's session: N is the victim's.
            let confirmed = try await Self.goTrue(
                client, "/verify", ["type": "phone_change", "phone": number, "token": victims.code], token: victim)
            #expect(confirmed.status == .ok, "\(confirmed.text)")
            let user = Self.object(confirmed)["user"] as? [String: Any]
            let victimID = try await api.get("/v1/me", token: victim).json(MeResponse.self).user.id.description
            #expect(user?["id"] as? String == victimID && user?["phone"] as? String == "14155550165", "\(confirmed.text)")
            let attackersMe = try await api.get("/v1/me", token: attacker).json(MeResponse.self)
            #expect(attackersMe.user.phone == nil)
        }
    }

    /// Finding 3: whether a number has an account is said only to whoever proves it. Adding a
    /// registered number answers as an unregistered one does (202, then 409 `phone_in_use` only
    /// after its code), the send limits are spent before anything is looked up, and `/auth/v1`'s
    /// sign-up and number change answer the same for both.
    @Test(arguments: Backend.available)
    func noRouteSaysANumberHasAnAccountBeforeItsProof(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: Self.configure) { client, config in
            let api = AuthClient(client: client)
            let registered = "+14155550166"
            let owner = try await PhoneTests.signIn(api, config, registered, e164: registered)
            #expect(owner.status == .ok, "\(owner.text)")
            let prober = try await PhoneTests.magicSignIn(api, config, "prober.58@example.com")
            clock.advance(by: 61)

            let onRegistered = try await api.post("/v1/me/phone", PhoneTests.json(["phone": registered]), token: prober)
            let onFree = try await api.post("/v1/me/phone", PhoneTests.json(["phone": "+14155550167"]), token: prober)
            #expect(onRegistered.status == .accepted && onFree.status == .accepted, "\(onRegistered.text) \(onFree.text)")
            #expect(onRegistered.text == onFree.text)
            // Whoever holds the registered number and types its code hears that it is in use.
            let sent = try await Self.newestCode(config, to: registered)
            clock.advance(by: 61)
            #expect(try await api.post("/v1/me/phone", PhoneTests.json(["phone": registered]), token: prober).status == .accepted)
            let again = try await Self.newestCode(config, to: registered, after: sent.id)
            let proved = try await api.post("/v1/me/phone/verify", PhoneTests.json(["code": again.code]), token: prober)
            #expect(proved.status == .conflict && proved.error?.code == .phoneInUse, "\(proved.text)")

            // `/auth/v1`: sign-up and the number change, registered or not, answer alike.
            clock.advance(by: 61)
            let signUpTaken = try await Self.goTrue(client, "/signup", ["phone": registered, "password": Self.password])
            let signUpFree = try await Self.goTrue(client, "/signup", ["phone": "+14155550168", "password": Self.password])
            #expect(signUpTaken.status == .ok && signUpFree.status == .ok, "\(signUpTaken.text) \(signUpFree.text)")
            func shape(_ response: TestResponse) -> [String] {
                Self.object(response).map { key, value in
                    ["id", "created_at", "updated_at", "phone"].contains(key) ? key : "\(key)=\(value)"
                }.sorted()
            }
            #expect(shape(signUpTaken) == shape(signUpFree))
            clock.advance(by: 61)
            let changeTaken = try await Self.goTrue(client, "/user", ["phone": registered], method: .put, token: prober)
            #expect(changeTaken.status == .ok, "\(changeTaken.text)")
            // The owner's account is untouched by the refused sign-up.
            let ownerAnswer = try #require(try owner.json(SignInAnswer<SignInResponse>.self).signedIn)
            let me = try await api.get("/v1/me", token: ownerAnswer.session.accessToken).json(MeResponse.self)
            #expect(me.user.phone == registered && me.user.phoneVerified)
        }
    }

    /// Finding 6: an account has one password lockout whichever name is typed. Five wrong
    /// passwords by address lock it; the next, by its number, is refused as locked too (each
    /// name had its own count before: ten wrong passwords a window).
    @Test(arguments: Backend.available)
    func oneLockoutPerAccountWhateverNameIsTyped(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "hannah", adjust: Self.configure) { client, config in
            let api = AuthClient(client: client)
            let number = "+14155550174"
            let made = try await api.account("both.names.58@example.com", "correct horse battery staple 58")
            #expect(try await api.post("/v1/me/phone", PhoneTests.json(["phone": number]), token: made.session.accessToken).status == .accepted)
            let code = try await Self.newestCode(config, to: number)
            #expect(try await api.post("/v1/me/phone/verify", PhoneTests.json(["code": code.code]), token: made.session.accessToken).status == .ok)
            let threshold = config.preset.throttling.loginFailuresBeforeLockout
            for _ in 0..<threshold {
                let wrong = try await api.login("both.names.58@example.com", "not the password at all")
                #expect(wrong.status == .unauthorized, "\(wrong.text)")
            }
            let byNumber = try await Self.goTrue(client, "/token?grant_type=password", ["phone": number, "password": "not the password either"])
            #expect(byNumber.status == .tooManyRequests, "\(byNumber.text)")
            let rightByNumber = try await Self.goTrue(client, "/token?grant_type=password", ["phone": number, "password": "correct horse battery staple 58"])
            #expect(rightByNumber.status == .tooManyRequests, "\(rightByNumber.text)")
        }
    }

    /// Finding 6: an unproved phone sign-up holds its number a day at most. The hourly cleanup
    /// removes the account (with `user.deleted`), so the number is free again; a proved number,
    /// and a day not yet over, stay.
    @Test(arguments: Backend.available)
    func anUnprovedPhoneSignUpFreesItsNumberAfterADay(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let clock = ManualClock(Date())
            let jobs = JobWorker(store: store, sealer: SecretSealer(secret: nil), clock: clock, logger: TestApp.quietLogger, handlers: [:])
            let events = EventRecorder(jobs: jobs, webhookConfigured: false, clock: clock)
            var unproved = User(id: .random(), passwordHash: "$argon2id$placeholder", createdAt: clock.now)
            unproved.phone = "+14155550172"
            var proved = User(id: .random(), createdAt: clock.now)
            proved.phone = "+14155550173"
            proved.phoneVerifiedAt = clock.now
            try await store.insertUser(unproved)
            try await store.insertUser(proved)
            try await store.insertIdentity(Identity(userID: proved.id, provider: .phone, subject: "+14155550173", email: nil, createdAt: clock.now))
            let unitOfWork = UnitOfWork(
                store: store, narrow: { $0 as AccountCleanup.Stores }, events: events, mail: nil, jobs: jobs, privacy: PrivacySettings(), clock: clock)
            let cleanup = AccountCleanup(
                store: store, unitOfWork: unitOfWork, lifecycle: AccountLifecycle(handles: HandleSettings()),
                rules: AccountCleanup.rules(anonymousCleanupDays: nil), clock: clock, logger: TestApp.quietLogger)
            clock.advance(by: 86_000)
            #expect(await cleanup.sweep() == 0)
            clock.advance(by: 401)
            #expect(await cleanup.sweep() == 1)
            #expect(try await store.user(phone: "+14155550172") == nil)
            #expect(try await store.user(phone: "+14155550173")?.id == proved.id)
            #expect(try await store.events(after: nil, userID: unproved.id, limit: 10).map(\.type) == [.userDeleted])
        }
    }

    /// Finding 3's limit: once the client's sends are spent, a registered number and a free one
    /// both answer 429 with the same wait (today 409 came first for a registered number).
    @Test(arguments: Backend.available)
    func theSendLimitIsSpentBeforeAnyLookup(_ backend: Backend) async throws {
        // The day's budget is the limit every address shares; the clock stands still, so both waits are the same.
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: {
            Self.configure(&$0)
            $0.preset.sms.dailyBudget = 2
        }) { client, config in
            let api = AuthClient(client: client)
            let registered = "+14155550169"
            #expect(try await PhoneTests.signIn(api, config, registered, e164: registered).status == .ok)
            let prober = try await PhoneTests.magicSignIn(api, config, "limit.58@example.com")
            clock.advance(by: 61)
            #expect(try await api.post("/v1/me/phone", PhoneTests.json(["phone": "+14155550170"]), token: prober).status == .accepted)
            let taken = try await api.post("/v1/me/phone", PhoneTests.json(["phone": registered]), token: prober)
            let free = try await api.post("/v1/me/phone", PhoneTests.json(["phone": "+14155550171"]), token: prober)
            #expect(taken.status == .tooManyRequests && taken.error?.code == .rateLimited, "\(taken.text)")
            #expect(taken.status == free.status && taken.text == free.text, "\(taken.text) vs \(free.text)")
        }
    }
}
