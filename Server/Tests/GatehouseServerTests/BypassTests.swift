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

/// Issue 17: the bypasses found by probing (look-alike addresses, enumeration through linking,
/// pre-account takeover, Apple's events, provider key fetches, the "new sign-in" mail).
@Suite struct BypassTests {
    static let password = "correct horse battery"

    /// Finding 7: a fullwidth look-alike cannot squat the owner's address, and mail never goes
    /// to a compatibility form, even for an account stored before the rule.
    @Test(arguments: Backend.available)
    func lookAlikeAddressesAreRefusedAndNeverMailed(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "handz") { client, config in
            let api = AuthClient(client: client)
            let squat = try await api.signup("ｖｉｃｔｉｍ@example.com")
            #expect(squat.status == .badRequest && squat.error?.code == .invalidEmail)
            #expect(try await api.post("/v1/auth/password/forgot", #"{"email": "ｖｉｃｔｉｍ@example.com"}"#).error?.code == .invalidEmail)
            #expect(try await api.signup("Victim@Example.com").status == .created, "case is not a compatibility form")
            // An account stored with a fullwidth address before the rule: its reset mail goes to
            // the canonical form.
            try await TestApp.withStore(config) { store in
                try await store.insertUser(
                    User(id: .random(), email: "ｏｌｄ@example.com", normalizedEmail: "old@example.com", createdAt: Date()))
            }
            #expect(try await api.post("/v1/auth/password/forgot", #"{"email": "old@example.com"}"#).status == .accepted)
            let mail = try await EmailFlowTests.outboxMail(config, kind: "password_reset")
            #expect(mail.recipient == "old@example.com")
        }
        #expect(EmailAddress.isCanonical("ann@bücher.example"))
        #expect(!EmailAddress.isCanonical("ann@BÜCHER.example"))
        #expect(!EmailAddress.isCanonical("ann@example．com"))
    }

    /// Finding 8: linking an address checks the password policy first, costs what a sign-up
    /// costs, and the merge token says nothing about the other account.
    @Test func linkingAnAddressIsNoEnumerationOracle() async throws {
        try await TestApp.run(.sqlite, setup: .live) { client, config in
            let api = AuthClient(client: client)
            let owner = try await api.account("taken@example.com")
            let anonymous = try await api.post("/v1/auth/anonymous", "").json(AnonymousResponse.self)
            let token = anonymous.session.accessToken
            let weak = try await api.post("/v1/auth/identities/email", AuthClient.credentials("taken@example.com", "abc"), token: token)
            #expect(weak.status.code == 422 && weak.error?.code == .weakPassword)
            let taken = try await api.post("/v1/auth/identities/email", AuthClient.credentials("taken@example.com", Self.password), token: token)
            #expect(taken.status == .conflict && taken.error?.code == .identityInUse)
            guard case .string(let merge)? = taken.error?.details?["merge_token"] else {
                Issue.record("no merge token")
                return
            }
            let raw = String(decoding: Data(base64URLEncoded: merge) ?? Data(), as: UTF8.self)
            #expect(!raw.contains(owner.user.id) && !raw.contains(anonymous.user.id))
            #expect(try await api.post("/v1/auth/merge", #"{"merge_token": "\#(merge)"}"#, token: owner.session.accessToken).status == .ok)
            // The sign-up limit applies (20 an hour by default; two sign-ups so far).
            let limit = config.preset.throttling.signupPerIPPerHour
            let other = try await api.post("/v1/auth/anonymous", "").json(AnonymousResponse.self)
            var statuses: [Int] = []
            for index in 0..<limit {
                statuses.append(Int(try await api.post(
                    "/v1/auth/identities/email", AuthClient.credentials("probe\(index)@example.com", "abc"),
                    token: other.session.accessToken).status.code))
            }
            #expect(statuses.contains(429))
        }
    }

    /// Finding 13: a pre-account takeover through a provider. The squatter cannot link a
    /// sign-in to an address they never proved; when the inbox owner proves it, everything added
    /// before ends; and a provider's unverified address never becomes an account's.
    @Test(arguments: Backend.available)
    func theInboxOwnerTakesOverAPreparedAccountCleanly(_ backend: Backend) async throws {
        try await ProviderSignInTests.run(backend) { api, _, google, config in
            let squatter = try await api.account("owner@example.com")
            let link = try await api.post(
                "/v1/auth/identities/google", ProviderSignInTests.body(try google.token(sub: "attacker", email: "attacker@gmail.com",
                    extra: ["email_verified": true])), token: squatter.session.accessToken)
            #expect(link.status == .forbidden && link.error?.code == .verificationRequired)
            // An identity that got there before the rule (stored directly), then the owner's magic link.
            try await TestApp.withStore(config) { store in
                try await store.insertIdentity(
                    Identity(userID: UserID(squatter.user.id)!, provider: .google, subject: "attacker", email: "attacker@gmail.com",
                             createdAt: Date()))
            }
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "owner@example.com"}"#).status == .accepted)
            let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link")
            let code = try EmailFlowTests.code(in: ReceivedMail(text: mail.textBody ?? ""))
            let owner = try await api.post("/v1/auth/magic-link/verify", #"{"email": "owner@example.com", "code": "\#(code)"}"#)
                .json(SignInResponse.self)
            #expect(owner.user.id == squatter.user.id)
            #expect(owner.user.identities.map(\.provider) == ["email"])
            #expect(try await api.refresh(squatter.session.refreshToken).status == .unauthorized)
            #expect(try await api.get("/v1/me", token: squatter.session.accessToken).status == .unauthorized)
            #expect(try await api.login("owner@example.com").status == .unauthorized, "the squatter's password is gone")
            let attacker = try await api.post("/v1/auth/google", ProviderSignInTests.body(try google.token(sub: "attacker")))
                .json(SignInResponse.self)
            #expect(attacker.user.id != owner.user.id)
            // A Google sign-in whose address Google does not vouch for keeps it off the account.
            let unverified = try await api.post(
                "/v1/auth/google",
                ProviderSignInTests.body(try google.token(sub: "attacker-2", email: "second@example.com", extra: ["email_verified": false])))
                .json(SignInResponse.self)
            #expect(unverified.user.email == nil)
        }
    }

    /// Finding 14: Apple's events are refused when old or replayed; a replayed delete cannot
    /// delete the next account.
    @Test(arguments: Backend.available)
    func appleEventsAreFreshAndUsedOnce(_ backend: Backend) async throws {
        try await ProviderSignInTests.run(backend) { api, apple, _, config in
            func event(_ type: String, sub: String, issued: Date = Date(), jti: String = UUID().uuidString) throws -> String {
                let events = try JSONSerialization.data(withJSONObject: ["type": type, "sub": sub, "event_time": 1_700_000_000])
                let token = try apple.sign(
                    ["iss": "https://appleid.apple.com", "aud": ProviderSignInTests.appleAudience, "iat": Int(issued.timeIntervalSince1970),
                     "jti": jti, "events": String(decoding: events, as: UTF8.self)], key: apple.signing)
                return #"{"payload": "\#(token)"}"#
            }
            _ = try await api.post("/v1/auth/apple", ProviderSignInTests.body(try apple.token(sub: "s2s-old", email: "old@example.com")))
            let old = try await api.post("/v1/webhooks/apple/sign-in", try event("account-delete", sub: "s2s-old", issued: Date() - 365 * 86_400))
            #expect(old.status == .badRequest)
            let first = try await api.post("/v1/auth/apple", ProviderSignInTests.body(try apple.token(sub: "s2s-2"))).json(SignInResponse.self)
            let delete = try event("account-delete", sub: "s2s-2", jti: "event-1")
            #expect(try await api.post("/v1/webhooks/apple/sign-in", delete).status == .ok)
            #expect(try await TestApp.withStore(config) { try await $0.user(id: UserID(first.user.id)!) } == nil)
            // The person comes back; the same event replayed leaves the new account alone.
            let again = try await api.post("/v1/auth/apple", ProviderSignInTests.body(try apple.token(sub: "s2s-2"))).json(SignInResponse.self)
            #expect(try await api.post("/v1/webhooks/apple/sign-in", delete).status == .badRequest)
            #expect(try await TestApp.withStore(config) { try await $0.user(id: UserID(again.user.id)!) } != nil)
        }
    }

    /// Finding 15: with the key server failing, made-up `kid`s cause one fetch a minute at most.
    @Test func aFailingKeyServerIsAskedOnceAMinute() async throws {
        let clock = ManualClock()
        // Down from the start, so no key is cached: before the fix every made-up `kid` fetched.
        try await ProviderSignInTests.run(.sqlite, clock: clock, before: { _, google in google.setDown(true) }) { api, _, google, _ in
            let before = google.fetches
            for index in 0..<40 {
                // Made-up kids on the real key (generating 40 RSA keys would only load the machine).
                let token = try google.token(sub: "kid-\(index)", key: FakeProvider.Key(kid: "made-up-\(index)", key: google.signing.key))
                let answer = try await api.post("/v1/auth/google", ProviderSignInTests.body(token))
                // Nothing was ever cached and the last fetch failed: every answer is "still down".
                #expect(answer.status == .serviceUnavailable && answer.error?.code == .providerUnavailable)
            }
            #expect(google.fetches - before <= 1, "\(google.fetches - before) fetches")
            clock.advance(by: 61)
            _ = try await api.post("/v1/auth/google", ProviderSignInTests.body(try google.token(sub: "later")))
            #expect(google.fetches - before <= 2)
        }
    }

    /// A failed key fetch is tried again 5 s later, then after 10, 20 and 40 s, then once a
    /// minute: one failure (a blip while the server starts) does not shut sign-in for a minute,
    /// and a key server that stays down is asked a handful of times, never once per sign-in.
    @Test func aFailedKeyFetchIsRetriedAfterAShortGrowingPause() async throws {
        let clock = ManualClock()
        try await ProviderSignInTests.run(.sqlite, clock: clock, before: { _, google in google.setDown(true) }) { api, _, google, _ in
            func signIn(_ label: String) async throws -> HTTPResponse.Status {
                try await api.post("/v1/auth/google", ProviderSignInTests.body(try google.token(sub: "retry-\(label)", now: clock.now))).status
            }
            let first = try await signIn("first")
            #expect(first == .serviceUnavailable)
            let start = google.fetches
            #expect(start == 1)
            // (seconds to move the clock by, fetches since the first). The background prefetch
            // may be the one to fetch once the clock has moved; the count is the same either way.
            let steps: [(TimeInterval, Int)] = [
                (0, 0), (4, 0), (1.5, 1), (9, 1), (1.5, 2), (18, 2), (2.5, 3), (38, 3), (2.5, 4), (58, 4), (2.5, 5), (58, 5), (2.5, 6),
            ]
            for (step, (advance, fetches)) in steps.enumerated() {
                clock.advance(by: advance)
                let status = try await signIn("down-\(step)")
                #expect(status == .serviceUnavailable)
                #expect(google.fetches - start == fetches, "step \(step)")
            }
            // Back up: the next sign-in after the pause fetches and succeeds.
            google.setDown(false)
            clock.advance(by: 61)
            let up = try await signIn("up")
            #expect(up == .ok)
        }
    }

    /// Finding 16: an id_token for several audiences needs `azp` naming ours.
    @Test func severalAudiencesNeedOurAuthorisedParty() async throws {
        try await ProviderSignInTests.run(.sqlite) { api, _, google, _ in
            let audiences = [ProviderSignInTests.googleAudience, "someone-else"]
            let without = try google.token(sub: "azp-1", extra: ["aud": audiences])
            #expect(try await api.post("/v1/auth/google", ProviderSignInTests.body(without)).status == .unauthorized)
            let theirs = try google.token(sub: "azp-2", extra: ["aud": audiences, "azp": "someone-else"])
            #expect(try await api.post("/v1/auth/google", ProviderSignInTests.body(theirs)).status == .unauthorized)
            let ours = try google.token(sub: "azp-3", extra: ["aud": audiences, "azp": ProviderSignInTests.googleAudience])
            #expect(try await api.post("/v1/auth/google", ProviderSignInTests.body(ours)).status == .ok)
        }
    }

    /// Finding 16: the "new sign-in" mail describes the device from a fixed vocabulary; a
    /// forged User-Agent's words never reach it.
    @Test func theNewSignInMailCarriesNoAttackerText() async throws {
        try await TestApp.run(.sqlite, preset: "handz") { client, config in
            let api = AuthClient(client: client)
            let account = try await api.account("notice@example.com")
            try await TestApp.withStore(config) { store in
                _ = try await store.markEmailVerified(UserID(account.user.id)!, normalizedEmail: "notice@example.com", at: Date())
            }
            let forged = "Mozilla/5.0 (iPhone) Safari/604.1 Version/17 ...this was you. Secure your account at https://evil.example/reset"
            let login = try await api.post(
                "/v1/auth/login", AuthClient.credentials("notice@example.com", Self.password), headers: [.userAgent: forged])
            #expect(login.status == .ok)
            let mail = try await EmailFlowTests.outboxMail(config, kind: "new_sign_in")
            let text = mail.textBody ?? ""
            #expect(!text.contains("evil.example") && !text.contains("Secure your account"))
            #expect(text.contains("Safari on iPhone"))
        }
        #expect(DeviceSummary.describe(userAgent: "OKLah/1.2 CFNetwork/1490 Darwin/23.2") == "An app on an Apple device")
        #expect(DeviceSummary.describe(userAgent: "free text") == "An unknown device")
    }
}
