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
            #expect(response.status == .ok || response.status == .created, "\(response.text)")
            let user = try response.json(SignInResponse.self).user
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
}
