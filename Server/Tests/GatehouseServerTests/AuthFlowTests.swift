import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdBcrypt
import HummingbirdTesting
import Testing

@Suite struct SignupAndLoginTests {
    @Test(arguments: Backend.available)
    func signUpLogInAndReadMe(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, config in
            let auth = AuthClient(client: client)
            let created = try await auth.signup("Ann.Lee@Example.com")
            #expect(created.status == .created)
            #expect(created.headers[.cacheControl] == "no-store")
            let body = try created.json(AuthResponse.self)
            #expect(body.user.email == "Ann.Lee@Example.com")
            #expect(body.user.emailVerified == false && body.user.isAnonymous == false)
            #expect(body.user.identities.map(\.provider) == ["email"])
            #expect(body.user.handle?.range(of: #"^user-[0-9]{6}$"#, options: .regularExpression) != nil)
            #expect(body.session.tokenType == "bearer" && body.session.expiresIn == 900)
            #expect(body.session.refreshToken.count >= 43)
            #expect(UUID(uuidString: body.session.sessionID) != nil)

            let (header, claims) = try jwtParts(body.session.accessToken)
            #expect(header["alg"] as? String == "ES256" && header["typ"] as? String == "at+jwt")
            #expect(claims["iss"] as? String == config.issuer && claims["aud"] as? String == "default")
            #expect(claims["sub"] as? String == body.user.id && claims["sid"] as? String == body.session.sessionID)
            #expect(claims["is_anonymous"] as? Bool == false && claims["email_verified"] as? Bool == false)
            #expect(claims["plan"] as? String == "free")
            let exp = try #require(claims["exp"] as? Int)
            #expect(Int64(exp) == body.session.expiresAt && exp - (claims["iat"] as! Int) == 900)

            // Case and Unicode variants of the address meet the same account.
            let login = try await auth.login("ann.lee@EXAMPLE.com")
            #expect(login.status == .ok)
            #expect(try login.json(AuthResponse.self).user.id == body.user.id)

            let me = try await auth.get("/v1/me", token: body.session.accessToken)
            #expect(me.status == .ok)
            let profile = try me.json(MeResponse.self)
            #expect(profile.user.id == body.user.id && profile.entitlements.planState == "free")
        }
    }

    @Test(arguments: ["plainaddress", "@example.com", "a@b", "a b@example.com", "a@@example.com", "a@example..com", ""])
    func invalidEmailsAre400(_ email: String) async throws {
        try await TestApp.run(.sqlite) { client, _ in
            let response = try await AuthClient(client: client).signup(email)
            #expect(response.status == .badRequest)
            #expect(response.error?.code == .invalidEmail)
        }
    }

    @Test func aTakenEmailIs409WithThePresetsCopy() async throws {
        for (preset, message) in [
            ("handz", "This email is already in use. Log in instead."),
            ("syncwell", "An account with this email already exists. Please sign in."),
        ] {
            try await TestApp.run(.sqlite, preset: preset) { client, _ in
                let auth = AuthClient(client: client)
                _ = try await auth.account("taken@example.com", "Str0ng-Passphrase!")
                for variant in ["TAKEN@example.com", " taken@example.com ", "ｔａｋｅｎ@example.com"] {
                    let again = try await auth.signup(variant, "Str0ng-Passphrase!")
                    #expect(again.status == .conflict, "\(variant)")
                    #expect(again.error?.code == .emailInUse && again.error?.message == message)
                }
            }
        }
    }

    @Test(arguments: Backend.available)
    func fiftyConcurrentSignUpsOfOneEmailMakeOneUser(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, config in
            let auth = AuthClient(client: client)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let email = ["same@example.com", "SAME@example.com", "Same@Example.COM"][index % 3]
                        return try await auth.signup(email).status
                    }
                }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .created }.count == 1)
            #expect(statuses.filter { $0 == .conflict }.count == 49)
            let users = try await TestApp.withStore(config) { try await $0.users(search: "same@", before: nil, limit: 100) }
            #expect(users.count == 1)
        }
    }

    @Test func weakPasswordsListEveryFailedRule() async throws {
        try await TestApp.run(.sqlite, preset: "syncwell") { client, _ in
            let auth = AuthClient(client: client)
            let cases: [(String, [String])] = [
                ("abc", ["too_short", "too_few_character_classes"]),
                ("abcdefghijk", ["too_few_character_classes"]),
                ("Password123", ["common"]),
                ("Sync-Well-2024", []),
                (String(repeating: "Aa1!", count: 300), ["too_long"]),
            ]
            for (password, reasons) in cases {
                let response = try await auth.signup("p\(UUID().uuidString.prefix(8))@example.com", password)
                if reasons.isEmpty {
                    #expect(response.status == .created, "\(password): \(response.text)")
                } else {
                    #expect(response.status == .unprocessableContent, "\(password)")
                    #expect(response.error?.code == .weakPassword)
                    #expect(response.error?.reasons == reasons, "\(password)")
                }
            }
        }
    }

    @Test func handzPolicyUsesItsCopyAndRefusesContextWords() async throws {
        try await TestApp.run(.sqlite, preset: "handz") { client, _ in
            let auth = AuthClient(client: client)
            let short = try await auth.signup("short@example.com", "zqx9k")
            #expect(short.error?.message == "Password must be at least 8 characters.")
            let context = try await auth.signup("jonathan.smith@example.com", "jonathan.smith")
            #expect(context.error?.reasons == ["contains_context"])
            let appName = try await auth.signup("someone@example.com", "handz2024!")
            #expect(appName.error?.reasons == ["contains_context"])
        }
    }

    @Test func aMethodThePresetTurnsOffIs403() async throws {
        try await TestApp.run(.sqlite, preset: "oklah") { client, _ in
            let auth = AuthClient(client: client)
            for response in [try await auth.signup("a@example.com"), try await auth.login("a@example.com")] {
                #expect(response.status == .forbidden && response.error?.code == .methodDisabled)
            }
        }
    }

    @Test(arguments: Backend.available)
    func unknownEmailAndWrongPasswordGetTheSameBytes(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, _ in
            let auth = AuthClient(client: client)
            _ = try await auth.account("known@example.com")
            let wrong = try await auth.login("known@example.com", "not the password")
            let unknown = try await auth.login("unknown@example.com", "not the password")
            #expect(wrong.status == .unauthorized && unknown.status == .unauthorized)
            #expect(wrong.text == unknown.text)
            #expect(wrong.text == #"{"error":{"code":"invalid_credentials","message":"Incorrect email or password."}}"#)
        }
    }

    @Test func passwordsAreNotTruncated() async throws {
        try await TestApp.run(.sqlite) { client, _ in
            let auth = AuthClient(client: client)
            let prefix = String(repeating: "x", count: 72)
            _ = try await auth.account("long@example.com", prefix + "-first-tail")
            #expect(try await auth.login("long@example.com", prefix + "-other-tail").status == .unauthorized)
            #expect(try await auth.login("long@example.com", prefix + "-first-tail").status == .ok)
        }
    }

    @Test func importedBcryptAndOldArgon2HashesAreUpgradedAtLogin() async throws {
        try await TestApp.run(.sqlite) { client, config in
            let bcryptUser = User(
                id: .random(), email: "bcrypt@example.com", normalizedEmail: "bcrypt@example.com",
                passwordHash: Bcrypt.hash("supabase-password", cost: 4), createdAt: Date())
            #expect(bcryptUser.passwordHash?.hasPrefix("$2") == true)
            try await TestApp.withStore(config) { try await $0.insertUser(bcryptUser) }
            let auth = AuthClient(client: client)
            #expect(try await auth.login("bcrypt@example.com", "wrong").status == .unauthorized)
            #expect(try await auth.login("bcrypt@example.com", "supabase-password").status == .ok)
            let upgraded = try await TestApp.withStore(config) { try await $0.user(id: bcryptUser.id) }
            #expect(upgraded?.passwordHash?.hasPrefix("$argon2id$v=19$m=64,t=1,p=1$") == true)
            #expect(try await auth.login("bcrypt@example.com", "supabase-password").status == .ok)

            let oldHasher = try PasswordHasher(parameters: Argon2Parameters(memoryKiB: 32, iterations: 2, parallelism: 1), threads: 1)
            let oldHash = try await oldHasher.hash("older parameters")
            await oldHasher.shutdown()
            let argonUser = User(
                id: .random(), email: "old@example.com", normalizedEmail: "old@example.com", passwordHash: oldHash, createdAt: Date())
            try await TestApp.withStore(config) { try await $0.insertUser(argonUser) }
            #expect(try await auth.login("old@example.com", "older parameters").status == .ok)
            let rehashed = try await TestApp.withStore(config) { try await $0.user(id: argonUser.id) }
            #expect(rehashed?.passwordHash?.hasPrefix("$argon2id$v=19$m=64,t=1,p=1$") == true)
        }
    }

    @Test func aDisabledAccountCannotSignInOrUseItsTokens() async throws {
        try await TestApp.run(.sqlite) { client, _ in
            let auth = AuthClient(client: client)
            let account = try await auth.account("disabled@example.com")
            let disable = try await client.execute(
                uri: "/admin/v1/users/\(account.user.id)/disable", method: .post, headers: TestApp.adminHeaders, body: jsonBody("{}"))
            #expect(disable.status == .ok)
            let login = try await auth.login("disabled@example.com")
            #expect(login.status == .forbidden && login.error?.code == .accountDisabled)
            let me = try await auth.get("/v1/me", token: account.session.accessToken)
            #expect(me.status == .forbidden && me.error?.code == .accountDisabled)
            let refresh = try await auth.refresh(account.session.refreshToken)
            #expect(refresh.status == .forbidden)
        }
    }
}

@Suite struct ThrottlingTests {
    @Test(arguments: Backend.available)
    func fromTheFifthFailureAttemptsWaitEvenWithTheRightPassword(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await TestApp.run(backend, preset: "handz", clock: clock) { client, _ in
            let auth = AuthClient(client: client)
            _ = try await auth.account("lock@example.com", "right password 1")
            // Four failures, then the right password: allowed, and the count starts again.
            for _ in 0..<4 { #expect(try await auth.login("lock@example.com", "wrong").status == .unauthorized) }
            #expect(try await auth.login("lock@example.com", "right password 1").status == .ok)
            // Five failures (case variants count together)…
            for variant in ["lock@example.com", "LOCK@example.com", "Lock@Example.com", "lock@example.com", "LOCK@EXAMPLE.COM"] {
                #expect(try await auth.login(variant, "wrong").status == .unauthorized)
            }
            // …then even the right password waits.
            let locked = try await auth.login("lock@example.com", "right password 1")
            #expect(locked.status == .tooManyRequests && locked.error?.code == .tooManyAttempts)
            let wait = try #require(locked.error?.retryAfter)
            #expect(wait == 30 && locked.headers[.retryAfter] == "30")
            clock.advance(by: 31)
            // Another failure after the wait doubles it.
            #expect(try await auth.login("lock@example.com", "wrong").status == .unauthorized)
            let longer = try await auth.login("lock@example.com", "right password 1")
            #expect(longer.error?.retryAfter == 60)
            clock.advance(by: 61)
            #expect(try await auth.login("lock@example.com", "right password 1").status == .ok)
        }
    }

    /// The right password gives its attempt back even when the login goes no further: four
    /// failures and the right password on a disabled account leave nothing counted, so once
    /// the account is enabled again it signs in (the attempt is not given back in the session's
    /// transaction then, as there is none).
    @Test(arguments: Backend.available)
    func theRightPasswordCountsForNothingWhenTheLoginIsRefused(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "handz") { client, _ in
            let auth = AuthClient(client: client)
            let account = try await auth.account("paused@example.com", "right password 1")
            func admin(_ action: String) async throws {
                let answer = try await client.execute(
                    uri: "/admin/v1/users/\(account.user.id)/\(action)", method: .post, headers: TestApp.adminHeaders, body: jsonBody("{}"))
                #expect(answer.status == .ok)
            }
            try await admin("disable")
            for _ in 0..<4 { #expect(try await auth.login("paused@example.com", "wrong").status == .unauthorized) }
            let refused = try await auth.login("paused@example.com", "right password 1")
            #expect(refused.status == .forbidden && refused.error?.code == .accountDisabled)
            try await admin("enable")
            #expect(try await auth.login("paused@example.com", "wrong").status == .unauthorized)
            #expect(try await auth.login("paused@example.com", "right password 1").status == .ok)
        }
    }

    @Test func unknownAccountsLockTheSameWay() async throws {
        try await TestApp.run(.sqlite) { client, _ in
            let auth = AuthClient(client: client)
            for _ in 0..<5 {
                let failure = try await auth.login("ghost@example.com", "x")
                #expect(failure.status == .unauthorized)
            }
            let locked = try await auth.login("ghost@example.com", "x")
            #expect(locked.status == .tooManyRequests)
        }
    }
}
