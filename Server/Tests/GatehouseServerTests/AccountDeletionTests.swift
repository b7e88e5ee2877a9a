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

/// `DELETE /v1/me` asks for proof that fits the account once the session is no longer young.
@Suite struct AccountDeletionTests {
    func delete(_ api: AuthClient, _ access: String, _ body: String = "{}") async throws -> TestResponse {
        try await api.client.execute(
            uri: "/v1/me", method: .delete, headers: [.authorization: "Bearer \(access)", .contentType: "application/json"],
            body: ByteBuffer(string: body))
    }

    @Test(arguments: Backend.available)
    func anOlderSessionNeedsThePasswordAndDeletedMeansGone(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, clock: clock) { client, config in
            let api = AuthClient(client: client)
            let account = try await api.account("leaving@example.com")
            clock.advance(by: 301)
            let bare = try await delete(api, account.session.accessToken)
            #expect(bare.status == .forbidden && bare.error?.code == .reauthenticationRequired)
            let wrong = try await delete(api, account.session.accessToken, #"{"password": "not it at all"}"#)
            #expect(wrong.status == .forbidden && wrong.error?.code == .reauthenticationRequired)
            let done = try await delete(api, account.session.accessToken, #"{"password": "correct horse battery"}"#)
            #expect(done.status == .noContent)
            #expect(try await api.login("leaving@example.com").status == .unauthorized)
            #expect(try await api.get("/v1/me", token: account.session.accessToken).status == .unauthorized)
            // The audit keeps a row without personal data; the address can sign up again.
            let audit = try await TestApp.withStore(config) { try await $0.auditEvents(userID: UserID(account.user.id)!, before: nil, limit: 50) }
            #expect(audit.contains { $0.event == "account_deleted" })
            #expect(audit.allSatisfy { $0.ipAddress == nil && $0.userAgent == nil })
            let again = try await api.account("leaving@example.com")
            #expect(again.user.id != account.user.id)
        }
    }

    /// Decision 2: an anonymous account holds nothing to prove itself with, so its session alone
    /// deletes it, also when the session is older than the 5 minutes that spare others a proof.
    @Test(arguments: Backend.available)
    func anAnonymousAccountIsDeletedWithItsSessionAlone(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "oklah", clock: clock) { client, config in
            let api = AuthClient(client: client)
            let account = try await AccountTests.anonymous(api)
            clock.advance(by: 600)  // Past the 5 minutes that spare others a proof; the token still lives.
            let done = try await delete(api, account.session.accessToken)
            #expect(done.status == .noContent, "\(done.text)")
            #expect(try await api.get("/v1/me", token: account.session.accessToken).status == .unauthorized)
            #expect(try await TestApp.withStore(config) { try await $0.user(id: UserID(account.user.id)!) } == nil)
        }
    }

    @Test func aPasswordlessAccountProvesItselfWithAMagicLinkCode() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, preset: "hannah", clock: clock) { client, config in
            let api = AuthClient(client: client)
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "pw-less@example.com"}"#).status == .accepted)
            let first = try await EmailFlowTests.outboxMail(config, kind: "magic_link")
            let token = try EmailFlowTests.token(in: ReceivedMail(text: first.textBody ?? ""), path: "/auth/magic-link")
            let session = try await api.post("/v1/auth/magic-link/verify", #"{"token": "\#(token)"}"#).json(SignInResponse.self)
            clock.advance(by: 301)
            #expect(try await delete(api, session.session.accessToken).status == .forbidden)
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "pw-less@example.com"}"#).status == .accepted)
            let second = try await EmailFlowTests.outboxMail(config, kind: "magic_link", after: first.id)
            let code = try EmailFlowTests.code(in: ReceivedMail(text: second.textBody ?? ""))
            let done = try await delete(api, session.session.accessToken, #"{"code": "\#(code)"}"#)
            #expect(done.status == .noContent, "\(done.text)")
        }
    }
}
