import Crypto
import Foundation
import GatehouseCore
@testable import GatehouseServer
@testable import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

/// Anonymous accounts, upgrade and merge, profile and handles, export, the admin API, events
/// and webhooks — through HTTP on both databases.
@Suite struct AccountTests {
    static func anonymous(_ api: AuthClient, key: String? = nil) async throws -> AnonymousResponse {
        var headers: HTTPFields = [:]
        if let key { headers[.idempotencyKey] = key }
        let response = try await api.client.execute(uri: "/v1/auth/anonymous", method: .post, headers: headers)
        #expect(response.status == .created, "\(response.text)")
        return try response.json(AnonymousResponse.self)
    }

    static func patch(_ api: AuthClient, _ token: String, _ json: String) async throws -> TestResponse {
        try await api.client.execute(
            uri: "/v1/me", method: .patch, headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
            body: ByteBuffer(string: json))
    }

    static func events(_ api: AuthClient, after: String? = nil) async throws -> EventList {
        try await api.client.execute(
            uri: "/admin/v1/events" + (after.map { "?after=\($0)" } ?? ""), method: .get, headers: TestApp.adminHeaders
        ).json(EventList.self)
    }

    @Test(arguments: Backend.available)
    func anAnonymousAccountNeedsNothingAndPicksAnOfferedName(_ backend: Backend) async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000.75))
        try await TestApp.run(backend, preset: "oklah", clock: clock) { client, _ in
            let api = AuthClient(client: client)
            let first = try await Self.anonymous(api)
            // O4-2, O5-1: the answer carries the account's `created_at`, the server's clock in UTC.
            #expect(first.user.createdAt == "2027-01-15T08:00:00Z")
            #expect(first.user.identities.map(\.createdAt) == ["2027-01-15T08:00:00Z"])
            #expect(first.user.isAnonymous && first.user.email == nil && first.user.identities.map(\.provider) == ["anonymous"])
            // A random UUIDv4, lowercase.
            #expect(first.user.id.count == 36 && first.user.id == first.user.id.lowercased() && Array(first.user.id)[14] == "4")
            #expect(first.nameSuggestions.count == 3 && Set(first.nameSuggestions).count == 3)
            let second = try await Self.anonymous(api)
            #expect(second.user.id != first.user.id)

            let access = first.session.accessToken
            let refused = try await api.post("/v1/me/anonymous-name", #"{"name": "Sneaky Name"}"#, token: access)
            #expect(refused.status == .unprocessableContent && refused.error?.code == .invalidChoice)
            let pick = first.nameSuggestions[1]
            let chosen = try await api.post("/v1/me/anonymous-name", #"{"name": "\#(pick)"}"#, token: access)
            #expect(try chosen.json(UserResponse.self).user.displayName == pick)
            // Another user's names are not this one's.
            #expect(try await api.post("/v1/me/anonymous-name", #"{"name": "\#(second.nameSuggestions[0])"}"#, token: access).status
                == .unprocessableContent)

            let done = try await Self.patch(api, access, #"{"onboarding_complete": true}"#)
            #expect(try done.json(UserResponse.self).user.onboardingComplete)
            let me = try await api.get("/v1/me", token: access).json(MeResponse.self)
            #expect(me.user.onboardingComplete && me.user.displayName == pick)
            // An anonymous account is an account: its plan starts as free (a guest has none).
            #expect(me.entitlements.planState == "free")
        }
    }

    @Test(arguments: Backend.available)
    func anIdempotencyKeyAnswersTheSameAccount(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, _ in
            let api = AuthClient(client: client)
            let first = try await Self.anonymous(api, key: "tap-7f3a")
            let retry = try await Self.anonymous(api, key: "tap-7f3a")
            #expect(retry.user.id == first.user.id && retry.session.sessionID != first.session.sessionID)
            #expect(retry.nameSuggestions == first.nameSuggestions)
            #expect(try await Self.anonymous(api, key: "tap-other").user.id != first.user.id)

            let headers: HTTPFields = [.idempotencyKey: "signup-1"]
            let credentials = AuthClient.credentials("idem@example.com", "correct horse battery")
            let signup = try await api.post("/v1/auth/signup", credentials, headers: headers).json(AuthResponse.self)
            let again = try await api.post("/v1/auth/signup", credentials, headers: headers)
            #expect(again.status == .created)
            #expect(try again.json(AuthResponse.self).user.id == signup.user.id)
            // A replay is a password sign-in (issue 17, finding 4): another password is a failed login.
            let other = try await api.post("/v1/auth/signup", AuthClient.credentials("idem@example.com", "another password here"), headers: headers)
            #expect(other.status == .unauthorized && other.error?.code == .invalidCredentials)
        }
    }

    @Test(arguments: Backend.available)
    func anonymousSignInIsLimitedPerIP(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "oklah", clock: ManualClock(), setup: .live, adjust: {
            $0.preset.throttling.anonymousPerIPPerHour = 2
        }) { client, _ in
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<3 {
                statuses.append(try await client.execute(uri: "/v1/auth/anonymous", method: .post).status)
            }
            #expect(statuses == [.created, .created, .tooManyRequests])
        }
    }

    @Test(arguments: Backend.available)
    func linkingUpgradesInPlaceAndATakenIdentityOffersAMerge(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, _ in
            let api = AuthClient(client: client)
            let guest = try await Self.anonymous(api)
            let upgraded = try await api.post(
                "/v1/auth/identities/email", AuthClient.credentials("upgraded@example.com", "correct horse battery"),
                token: guest.session.accessToken)
            #expect(upgraded.status == .ok, "\(upgraded.text)")
            let user = try upgraded.json(UserResponse.self).user
            #expect(user.id == guest.user.id && !user.isAnonymous && user.identities.map(\.provider) == ["email"])
            #expect(try await api.login("upgraded@example.com").status == .ok)

            // Another anonymous account tries an address that already has an account.
            let other = try await Self.anonymous(api)
            let taken = try await api.post(
                "/v1/auth/identities/email", AuthClient.credentials("upgraded@example.com", "correct horse battery"),
                token: other.session.accessToken)
            #expect(taken.status == .conflict && taken.error?.code == .identityInUse)
            let mergeToken = try #require(taken.error?.details?["merge_token"].flatMap { if case .string(let t) = $0 { t } else { nil } })
            // The anonymous session stays valid.
            #expect(try await api.get("/v1/me", token: other.session.accessToken).status == .ok)
            // Signed in to the other account, the client merges.
            let owner = try await api.login("upgraded@example.com").json(AuthResponse.self)
            let wrongCaller = try await api.post("/v1/auth/merge", #"{"merge_token": "\#(mergeToken)"}"#, token: other.session.accessToken)
            #expect(wrongCaller.status == .badRequest && wrongCaller.error?.code == .tokenInvalid)
            let merged = try await api.post("/v1/auth/merge", #"{"merge_token": "\#(mergeToken)"}"#, token: owner.session.accessToken)
            #expect(merged.status == .ok)
            #expect(try merged.json(UserResponse.self).user.id == guest.user.id)
            let again = try await api.post("/v1/auth/merge", #"{"merge_token": "\#(mergeToken)"}"#, token: owner.session.accessToken)
            #expect(again.status == .badRequest && again.error?.code == .tokenInvalid)
            #expect(try await api.get("/v1/me", token: other.session.accessToken).status == .unauthorized)

            let feed = try await Self.events(api)
            #expect(feed.events.contains { $0.type == "user.upgraded" && $0.userID == guest.user.id })
            #expect(feed.events.contains { $0.type == "user.merged" && $0.data == ["from": other.user.id, "to": guest.user.id] })
        }
    }

    @Test(arguments: Backend.available)
    func handlesAndProfileFollowTheRules(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "handz") { client, _ in
            let api = AuthClient(client: client)
            let sam = try await api.account("sam@example.com")
            #expect(sam.user.handle?.hasPrefix("user-") == true)
            let access = sam.session.accessToken
            let set = try await Self.patch(api, access, #"{"handle": "Sam_01", "display_name": "  Sam  ", "avatar_url": "https://example.com/a.png"}"#)
            let user = try set.json(UserResponse.self).user
            #expect(user.handle == "sam_01" && user.displayName == "Sam" && user.avatarURL == "https://example.com/a.png")
            let lookup = try await client.execute(uri: "/v1/handles/SAM_01", method: .get).json(HandleAvailability.self)
            #expect(lookup == HandleAvailability(handle: "sam_01", available: false, reason: "taken"))
            let free = try await client.execute(uri: "/v1/handles/new_one", method: .get).json(HandleAvailability.self)
            #expect(free.available && free.reason == nil)
            for (handle, reason) in [("admin", "reserved"), ("ab", "too_short"), ("has-hyphen", "invalid_characters"), ("ünïcode", "invalid_characters"), (String(repeating: "a", count: 21), "too_long")] {
                let response = try await Self.patch(api, access, #"{"handle": "\#(handle)"}"#)
                #expect(response.status == .unprocessableContent && response.error?.code == .invalidHandle && response.error?.reasons == [reason], "\(handle)")
            }
            for name in ["", "   ", String(repeating: "x", count: 51), "bad\u{0007}name"] {
                let body = String(decoding: try JSONSerialization.data(withJSONObject: ["display_name": name]), as: UTF8.self)
                #expect(try await Self.patch(api, access, body).error?.code == .invalidDisplayName, "\(name)")
            }
            #expect(try await Self.patch(api, access, #"{"avatar_url": "http://example.com/a.png"}"#).error?.code == .invalidAvatarURL)
            let cleared = try await Self.patch(api, access, #"{"avatar_url": null}"#).json(UserResponse.self)
            #expect(cleared.user.avatarURL == nil && cleared.user.handle == "sam_01")

            // Two people racing for one handle: exactly one wins.
            let a = try await api.account("racer-a@example.com")
            let b = try await api.account("racer-b@example.com")
            async let first = Self.patch(api, a.session.accessToken, #"{"handle": "fastest"}"#)
            async let second = Self.patch(api, b.session.accessToken, #"{"handle": "FASTEST"}"#)
            let statuses = [try await first.status, try await second.status]
            #expect(statuses.filter { $0 == .ok }.count == 1 && statuses.filter { $0 == .conflict }.count == 1)
        }
    }

    /// Every table that holds a `user_id` appears in the export: a new table with user data
    /// that the export leaves out fails this test.
    /// Decision 15: under Handz the app's `export_data` action waits for a verified address, but
    /// the person's own data (`GET /v1/me/export`) is never gated.
    @Test func theOwnDataExportIsNeverGated() async throws {
        try await TestApp.run(.sqlite, preset: "handz") { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("unverified-export@example.com")
            #expect(account.user.emailVerified == false)
            let gate = try await EntitlementTests.check(api, "export_data", token: account.session.accessToken).json(GateDecision.self)
            #expect(!gate.allowed && gate.reasonCode == "verification_required", "\(gate)")
            let export = try await api.get("/v1/me/export", token: account.session.accessToken)
            #expect(export.status == .ok)
            #expect(export.text.contains("unverified-export@example.com"))
        }
    }

    @Test(arguments: Backend.available)
    func theExportHoldsEveryTableWithUserData(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, config in
            let api = AuthClient(client: client)
            let account = try await api.account("export@example.com")
            _ = try await api.post("/v1/auth/password/forgot", #"{"email": "export@example.com"}"#)
            let response = try await api.get("/v1/me/export", token: account.session.accessToken)
            #expect(response.status == .ok)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any])
            let tables = try await TestApp.withStore(config) { store -> [String] in
                let database = store.executor
                if store.dialect == .sqlite {
                    let names = try await database.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                    var withUser: [String] = []
                    for row in names {
                        let name = try row.string("name")
                        let columns = try await database.query("SELECT name FROM pragma_table_info('\(name)')")
                        if try columns.contains(where: { try $0.string("name") == "user_id" }) { withUser.append(name) }
                    }
                    return withUser
                }
                return try await database.query(
                    "SELECT DISTINCT table_name AS name FROM information_schema.columns WHERE column_name = 'user_id' AND table_schema = current_schema()"
                ).map { try $0.string("name") }
            }
            #expect(!tables.isEmpty)
            for table in tables + ["users"] {
                #expect(object[table] != nil, "the export leaves out \(table)")
            }
            let export = try response.json(AccountExport.self)
            #expect(export.users.email == "export@example.com" && export.sessions.count == 1)
            #expect(export.emailTokens.contains { $0.purpose == "verify_email" })
            #expect(export.auditLog.contains { $0.event == "signup" } && export.events.contains { $0.type == "user.created" })
            #expect(!response.text.contains("token_hash") && !response.text.contains("password_hash"))
        }
    }

    @Test(arguments: Backend.available)
    func theAdminAPIPagesEventsDeletesOverridesAndDisables(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, config in
            let api = AuthClient(client: client)
            var accounts: [AuthResponse] = []
            for index in 0..<3 { accounts.append(try await api.account("admin\(index)@example.com")) }
            let page = try await client.execute(uri: "/admin/v1/events?limit=2", method: .get, headers: TestApp.adminHeaders).json(EventList.self)
            #expect(page.events.map(\.type) == ["user.created", "user.created"])
            let rest = try await client.execute(
                uri: "/admin/v1/events?limit=2&after=\(page.nextCursor!)", method: .get, headers: TestApp.adminHeaders
            ).json(EventList.self)
            #expect(rest.events.map(\.userID) == [accounts[2].user.id])
            let nothing = try await Self.events(api, after: rest.nextCursor)
            #expect(nothing.events.isEmpty && nothing.nextCursor == rest.nextCursor)

            let plan = try await client.execute(
                uri: "/admin/v1/users/\(accounts[0].user.id)/plan", method: .put, headers: TestApp.adminHeaders, body: jsonBody(#"{"plan": "pro"}"#))
            #expect(plan.status == .ok)
            let disabled = try await client.execute(
                uri: "/admin/v1/users/\(accounts[1].user.id)/disable", method: .post, headers: TestApp.adminHeaders, body: jsonBody("{}"))
            #expect(disabled.status == .ok)
            // Every session ended; the app is told why.
            let refresh = try await api.refresh(accounts[1].session.refreshToken)
            #expect(refresh.status == .forbidden && refresh.error?.code == .accountDisabled)
            let disabledID = UserID(accounts[1].user.id)!
            let sessions = try await TestApp.withStore(config) { try await $0.sessions(of: disabledID) }
            #expect(!sessions.isEmpty && sessions.allSatisfy(\.isRevoked))
            let deleted = try await client.execute(uri: "/admin/v1/users/\(accounts[2].user.id)", method: .delete, headers: TestApp.adminHeaders)
            #expect(deleted.status == .noContent)
            #expect(try await client.execute(uri: "/admin/v1/users/\(accounts[2].user.id)", method: .get, headers: TestApp.adminHeaders).status == .notFound)
            let feed = try await Self.events(api, after: rest.nextCursor)
            #expect(feed.events.map(\.type) == ["plan.changed", "user.deleted"])
        }
    }

    /// A webhook receiver that fails once: the event is retried and arrives signed.
    @Test(arguments: Backend.available)
    func webhooksAreSignedAndRetriedUntilAcknowledged(_ backend: Backend) async throws {
        let received = Mutex<[(signature: String, body: Data)]>([])
        let router = Router()
        router.post("/hook") { request, _ -> HTTPResponse.Status in
            let body = Data(buffer: try await request.body.collect(upTo: 65_536))
            let count = received.withLock { list -> Int in
                list.append((request.headers[HTTPField.Name("Gatehouse-Signature")!] ?? "", body))
                return list.count
            }
            return count == 1 ? .internalServerError : .ok
        }
        let receiver = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        let clock = ManualClock(Date())
        try await receiver.test(.live) { hook in
            try await TestApp.run(backend, clock: clock, adjust: {
                $0.webhookURL = URL(string: "http://127.0.0.1:\(hook.port!)/hook")
                $0.webhookSecret = "whsec-test-secret-0123456789"
            }) { client, _ in
                let account = try await AuthClient(client: client).account("hooked@example.com")
                for _ in 0..<200 where received.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(50)) }
                // The retry is due 5 s after the failure is recorded; time moves on until it comes.
                for _ in 0..<300 where received.withLock({ $0.count < 2 }) {
                    clock.advance(by: 6)
                    try await Task.sleep(for: .milliseconds(50))
                }
                let deliveries = received.withLock { $0 }
                #expect(deliveries.count == 2)
                let last = try #require(deliveries.last)
                let event = try #require(try JSONSerialization.jsonObject(with: last.body) as? [String: Any])
                #expect(event["type"] as? String == "user.created" && event["user_id"] as? String == account.user.id)
                // t=<unix>,v1=<hex of HMAC-SHA256 over the raw body>; the body carries the same time.
                let parts = Dictionary(uniqueKeysWithValues: last.signature.split(separator: ",").map {
                    let pair = $0.split(separator: "=", maxSplits: 1)
                    return (String(pair[0]), String(pair[1]))
                })
                let mac = HMAC<SHA256>.authenticationCode(for: last.body, using: SymmetricKey(data: Data("whsec-test-secret-0123456789".utf8)))
                #expect(parts["v1"] == mac.map { String(format: "%02x", $0) }.joined())
                #expect(parts["t"] == String(event["sent_at"] as? Int ?? -1))
            }
        }
    }

    @Test func unusedAnonymousAccountsAreRemovedWhenThePresetSaysSo() async throws {
        try await TestDatabase.withStore(.sqlite) { store in
            let clock = ManualClock(Date())
            let jobs = JobWorker(store: store, sealer: SecretSealer(secret: nil), clock: clock, logger: TestApp.quietLogger, handlers: [:])
            let events = EventRecorder(jobs: jobs, webhookConfigured: false, clock: clock)
            let stale = User(id: .random(), isAnonymous: true, createdAt: clock.now)
            let kept = User(id: .random(), email: "kept@example.com", normalizedEmail: "kept@example.com", createdAt: clock.now)
            try await store.insertUser(stale)
            try await store.insertUser(kept)
            clock.advance(by: 31 * 86_400)
            let fresh = User(id: .random(), isAnonymous: true, createdAt: clock.now)
            try await store.insertUser(fresh)
            let unitOfWork = UnitOfWork(store: store, narrow: { $0 as AccountCleanup.Stores }, events: events, mail: nil, jobs: jobs, privacy: PrivacySettings(), clock: clock)
            let cleanup = AccountCleanup(
                store: store, unitOfWork: unitOfWork, lifecycle: AccountLifecycle(handles: HandleSettings()),
                rules: [.inactiveAnonymous(days: 30)], grace: LedgerGrace(proGraceHours: 72), clock: clock, logger: TestApp.quietLogger)
            #expect(await cleanup.sweep() == 1)
            #expect(try await store.user(id: stale.id) == nil)
            let freshStays = try await store.user(id: fresh.id) != nil
            let keptStays = try await store.user(id: kept.id) != nil
            #expect(freshStays && keptStays)
            #expect(try await store.events(after: nil, userID: stale.id, limit: 10).map(\.type) == [.userDeleted])
        }
    }
}

@Suite struct MagicLinkUpgradeTests {
    @Test(arguments: Backend.available)
    func aMagicLinkUpgradesTheAnonymousAccountThatAskedForIt(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, clock: clock) { client, config in
            let api = AuthClient(client: client)
            let guest = try await AccountTests.anonymous(api)
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "Keeper@example.com"}"#, token: guest.session.accessToken).status == .accepted)
            let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link")
            let token = try EmailFlowTests.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/magic-link")
            let upgraded = try await api.post("/v1/auth/magic-link/verify", #"{"token": "\#(token)"}"#)
            #expect(upgraded.status == .ok, "\(upgraded.text)")
            let result = try upgraded.json(SignInResponse.self)
            #expect(!result.created && result.user.id == guest.user.id && !result.user.isAnonymous)
            #expect(result.user.email == "Keeper@example.com" && result.user.emailVerified && result.user.identities.map(\.provider) == ["email"])
            #expect(try await AccountTests.events(api).events.contains { $0.type == "user.upgraded" && $0.userID == guest.user.id })

            // Another anonymous account asking for the same address gets a merge token instead.
            clock.advance(by: 61)
            let other = try await AccountTests.anonymous(api)
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "keeper@example.com"}"#, token: other.session.accessToken).status == .accepted)
            let second = try await EmailFlowTests.outboxMail(config, kind: "magic_link", after: mail.id)
            let secondToken = try EmailFlowTests.token(in: ReceivedMail(text: second.textBody ?? ""), path: "/auth/magic-link")
            let taken = try await api.post("/v1/auth/magic-link/verify", #"{"token": "\#(secondToken)"}"#)
            #expect(taken.status == .conflict && taken.error?.code == .identityInUse && taken.error?.details?["merge_token"] != nil)
        }
    }
}
