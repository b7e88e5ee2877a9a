import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Seed items the traceability table found without a test of their own.
@Suite struct SeedGapTests {
    /// Handz CH07 §3.2: a Google sign-up's address becomes the account's email.
    @Test func googlesAddressBecomesTheAccountsEmail() async throws {
        try await ProviderSignInTests.run(.sqlite, preset: "handz") { api, _, google, _ in
            let token = try google.token(sub: "g-email", email: "Ada.G@example.com", extra: ["email_verified": true, "name": "Ada G"])
            let response = try await api.post("/v1/auth/google", #"{"id_token": "\#(token)"}"#)
            // The contract: 200 `{user, session, created}` for a provider sign-in, new account or not.
            #expect(response.status == .ok, "\(response.text)")
            let signIn = try response.json(SignInResponse.self)
            #expect(signIn.created)
            let user = signIn.user
            #expect(user.email == "Ada.G@example.com" && user.emailVerified)
            #expect(user.identities.map(\.provider) == ["google"])
        }
    }

    /// SyncWell (decision 8): email sign-up sends the verification mail, so that linking can
    /// happen once the person has proven the address.
    @Test func syncWellSignUpSendsTheVerificationMail() async throws {
        try await TestApp.run(.sqlite, preset: "syncwell") { client, config in
            let api = AuthClient(client: client)
            let response = try await api.post("/v1/auth/signup", #"{"email": "sync@example.com", "password": "Tr1cky-Passphrase"}"#)
            #expect(response.status == .created, "\(response.text)")
            let mail = try await EmailFlowTests.outboxMail(config, kind: "verification") { $0.recipient == "sync@example.com" }
            #expect(mail.textBody?.contains("/auth/verify-email?token=") == true)
        }
    }

    /// OKLah §4 (`last_authenticated`): a session's last activity moves when it is used.
    @Test func aSessionsLastActivityMovesWithUse() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        try await TestApp.run(.sqlite, preset: "oklah", clock: clock) { client, _ in
            let api = AuthClient(client: client)
            let account = try await AccountTests.anonymous(api)
            let before = try await api.get("/v1/auth/sessions", token: account.session.accessToken).json(SessionsResponse.self)
            #expect(before.sessions.first?.lastActiveAt == "2027-01-15T08:00:00Z")
            clock.advance(by: 3_600)
            let refreshed = try await api.refresh(account.session.refreshToken).json(SessionResponse.self)
            let after = try await api.get("/v1/auth/sessions", token: refreshed.session.accessToken).json(SessionsResponse.self)
            #expect(after.sessions.first?.lastActiveAt == "2027-01-15T09:00:00Z")
            #expect(after.sessions.first?.createdAt == "2027-01-15T08:00:00Z")
        }
    }

    /// Decision 11 through the server: under OKLah the stored address is cut to its /24 and the
    /// user agent to its product token, in the session list and in the export; Handz keeps both.
    @Test func privacyLevelsApplyToWhatTheServerStores() async throws {
        for (preset, ip, agent) in [("oklah", "127.0.0.0", "OKLah/1.2"), ("handz", "127.0.0.1", "OKLah/1.2 CFNetwork/1490 Darwin/23.2")] {
            try await TestApp.run(.sqlite, preset: preset, setup: .live) { client, _ in
                let api = AuthClient(client: client)
                let headers: HTTPFields = [.userAgent: "OKLah/1.2 CFNetwork/1490 Darwin/23.2", .contentType: "application/json"]
                let response = preset == "oklah"
                    ? try await client.execute(uri: "/v1/auth/anonymous", method: .post, headers: headers)
                    : try await client.execute(
                        uri: "/v1/auth/signup", method: .post, headers: headers,
                        body: jsonBody(#"{"email": "privacy@example.com", "password": "correct horse battery"}"#))
                #expect(response.status == .created, "\(response.text)")
                struct WithSession: Decodable { let session: SessionPayload }
                let token = try response.json(WithSession.self).session.accessToken
                let sessions = try await api.get("/v1/auth/sessions", token: token).json(SessionsResponse.self)
                #expect(sessions.sessions.first?.userAgent == agent, "\(preset)")
                let export = try await api.get("/v1/me/export", token: token).text
                #expect(export.contains(ip), "\(preset): \(ip) not in the export")
                if preset == "oklah" {
                    #expect(!export.contains("127.0.0.1") && !export.contains("CFNetwork"))
                }
            }
        }
    }

    /// Decision 3: an `Idempotency-Key` answers the same account for 24 hours; after that the
    /// same key starts a new anonymous account.
    @Test func anIdempotencyKeyLastsADay() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "oklah", clock: clock) { client, _ in
            let api = AuthClient(client: client)
            let first = try await AccountTests.anonymous(api, key: "install-42")
            clock.advance(by: 86_000)
            #expect(try await AccountTests.anonymous(api, key: "install-42").user.id == first.user.id)
            clock.advance(by: 500)
            #expect(try await AccountTests.anonymous(api, key: "install-42").user.id != first.user.id)
        }
    }

    /// Decision 2: a session older than five minutes can prove itself with a fresh Apple token.
    @Test func aFreshProviderTokenProvesAnOlderSession() async throws {
        let clock = ManualClock(Date())
        try await ProviderSignInTests.run(.sqlite, preset: "handz", clock: clock) { api, apple, _, _ in
            let nonce = "n-delete"
            let first = try apple.token(sub: "001.leaving", email: "leaving.apple@example.com", extra: ["nonce": FakeProvider.sha256Hex(nonce)], now: clock.now)
            let signIn = try await api.post("/v1/auth/apple", #"{"id_token": "\#(first)", "raw_nonce": "\#(nonce)"}"#).json(SignInResponse.self)
            clock.advance(by: 400)
            let refreshed = try await api.refresh(signIn.session.refreshToken).json(SessionResponse.self)
            let access = refreshed.session.accessToken
            let bare = try await api.client.execute(
                uri: "/v1/me", method: .delete, headers: [.authorization: "Bearer \(access)", .contentType: "application/json"], body: jsonBody("{}"))
            #expect(bare.status == .forbidden && bare.error?.code == .reauthenticationRequired)
            let fresh = try apple.token(sub: "001.leaving", email: "leaving.apple@example.com", extra: ["nonce": FakeProvider.sha256Hex("n-2")], now: clock.now)
            let proven = try await api.client.execute(
                uri: "/v1/me", method: .delete, headers: [.authorization: "Bearer \(access)", .contentType: "application/json"],
                body: jsonBody(#"{"id_token": "\#(fresh)", "raw_nonce": "n-2"}"#))
            #expect(proven.status == .noContent, "\(proven.text)")
        }
    }

    /// Hannah ($11.99 a month or $71.99 a year): the yearly product is sold too and gives Premium.
    @Test func hannahsYearlyPlanIsPremium() async throws {
        let clock = ManualClock(Date())
        let apple = try FakeAppStore()
        try await TestApp.run(.sqlite, preset: "hannah", clock: clock, adjust: TestApp.trusting(apple)) { client, config in
            let api = AuthClient(client: client)
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "yearly@example.com"}"#).status == .accepted)
            let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link")
            let link = try EmailFlowTests.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/magic-link")
            let session = try await api.post("/v1/auth/magic-link/verify", #"{"token": "\#(link)"}"#).json(SignInResponse.self)
            let purchase = try apple.sign(
                FakeAppStore.transaction(
                    id: "y1", original: "y1", product: "com.hannahhealth.premium.yearly", user: session.user.id, purchased: clock.now,
                    expires: clock.now + 365 * 86_400, signed: clock.now))
            let snapshot = try await AppStoreTests.purchase(api, purchase, token: session.session.accessToken).json(EntitlementsPayload.self)
            #expect(snapshot.planState == "pro" && snapshot.tier == "premium")
            #expect(snapshot.subscription?.productID == "com.hannahhealth.premium.yearly")
        }
    }

    /// Handz CH07 §3.4: Apple returns the verified, non-relay address of an existing verified
    /// account: Apple is linked to that account (decision 8), no second account.
    @Test func appleWithTheAddressOfAVerifiedAccountLinksToIt() async throws {
        try await ProviderSignInTests.run(.sqlite, preset: "handz") { api, apple, _, config in
            let existing = try await api.account("same@example.com")
            _ = try await TestApp.withStore(config) {
                try await $0.markEmailVerified(UserID(existing.user.id)!, normalizedEmail: "same@example.com", at: Date())
            }
            let nonce = "n-link"
            let token = try apple.token(
                sub: "001.same", email: "same@example.com",
                extra: ["email_verified": "true", "is_private_email": "false", "nonce": FakeProvider.sha256Hex(nonce)])
            let response = try await api.post("/v1/auth/apple", #"{"id_token": "\#(token)", "raw_nonce": "\#(nonce)"}"#)
            #expect(response.status == .ok, "\(response.text)")
            let signIn = try response.json(SignInResponse.self)
            #expect(!signIn.created)
            let user = signIn.user
            #expect(user.id == existing.user.id)
            #expect(Set(user.identities.map(\.provider)) == ["email", "apple"])
        }
    }

    /// OKLah BR-ONB-004: the three suggestions are an adjective and a noun from the curated
    /// happiness and motivation lists, three different names, drawn anew for each account.
    @Test func nameSuggestionsComeFromTheCuratedLists() async throws {
        try await TestApp.run(.sqlite, preset: "oklah") { client, _ in
            let api = AuthClient(client: client)
            var seen: Set<[String]> = []
            for _ in 0..<5 {
                let suggestions = try await AccountTests.anonymous(api).nameSuggestions
                #expect(suggestions.count == 3 && Set(suggestions).count == 3)
                for name in suggestions {
                    let words = name.split(separator: " ").map(String.init)
                    #expect(words.count == 2 && NameSuggester.adjectives.contains(words[0]) && NameSuggester.nouns.contains(words[1]), "\(name)")
                }
                seen.insert(suggestions)
            }
            #expect(seen.count > 1, "the same three names every time")
        }
    }
}
