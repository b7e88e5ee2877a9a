import Foundation
import GatehouseClient
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
            #expect(audit.contains { $0.event == .accountDeleted })
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

    /// Issue 41, finding 2: a young session is proof by itself only when nothing is offered. A
    /// proof that is offered and fails refuses, however young the session: a wrong password, a
    /// wrong code, an id token of someone else's Google account.
    @Test(arguments: Backend.available)
    func anOfferedProofThatFailsRefusesEvenOnAYoungSession(_ backend: Backend) async throws {
        try await ProviderSignInTests.run(backend) { api, _, google, _ in
            let account = try await api.account("keeper@example.com")
            let access = account.session.accessToken
            let own = try google.token(sub: "g-keeper", email: "keeper@example.com", extra: ["email_verified": "true"])
            let link = try await api.post("/v1/auth/identities/google", ProviderSignInTests.body(own), token: access)
            #expect(link.status == .ok, "\(link.text)")
            let stranger = try google.token(sub: "g-stranger", email: "stranger@example.com", extra: ["email_verified": "true"])
            let refused: [(String, String, String)] = [
                (#"{"password": "not it at all"}"#, "That password is not right.", "wrong password"),
                (#"{"code": "000000"}"#, "", "wrong code"),
                (ProviderSignInTests.body(stranger), "That sign-in does not belong to this account.", "foreign id token"),
                (#"{"password": "correct horse battery", "code": "000000"}"#, "", "a right password beside a wrong code"),
            ]
            for (body, words, what) in refused {
                let answer = try await delete(api, access, body)
                #expect(answer.status.code >= 400 && answer.status.code < 500, "\(what): \(answer.status) \(answer.text)")
                if !words.isEmpty {
                    #expect(answer.status == .forbidden && answer.error?.code == .reauthenticationRequired, "\(what)")
                    #expect(answer.error?.message.hasPrefix(words) == true, "\(what): \(answer.error?.message ?? "")")
                }
                #expect(try await api.get("/v1/me", token: access).status == .ok, "\(what) deleted the account")
            }
            // Nothing offered: the young session is the proof.
            #expect(try await delete(api, access).status == .noContent)
            #expect(try await api.get("/v1/me", token: access).status == .unauthorized)
        }
    }

    /// The catalogue names the proof each way in gives `DELETE /v1/me` (`Credential.deletionProof`,
    /// which the refusal's `details.proofs` is made from): every way back in names one, and each
    /// name is a field the server reads. Sent alone, wrong, on a stale session, it is checked and
    /// refused for itself, never answered as if no proof had come (`details.proofs`).
    @Test func everyWayBackInNamesADeletionProofTheServerReads() async throws {
        for credential in Credential.allCases where CredentialInventory.letsBackIn(credential) {
            #expect(credential.deletionProof != nil, "\(credential) lets its holder back in but proves nothing to delete")
        }
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, clock: clock) { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("every.proof@example.com")
            clock.advance(by: 301)
            let bare = try await delete(api, account.session.accessToken)
            #expect(bare.error?.details?["proofs"] == .array([.string("password"), .string("code")]), "\(bare.text)")
            let values: [String: String] = [
                "password": #""not it at all""#, "id_token": #""not.a.token""#, "code": #""000000""#,
                "passkey": #"{"challenge_id": "x", "credential": {}}"#, "sms_code": #""000000""#,
            ]
            for proof in Set(Credential.allCases.compactMap(\.deletionProof)) {
                let value = try #require(values[proof], "no wrong value for \(proof)")
                let answer = try await delete(api, account.session.accessToken, #"{"\#(proof)": \#(value)}"#)
                #expect(answer.status.code >= 400 && answer.error?.details?["proofs"] == nil, "\(proof): \(answer.text)")
            }
            #expect(try await api.get("/v1/me", token: account.session.accessToken).status == .ok)
        }
    }

    /// Issue 41, finding 7: the SDK's deletion screen asks for what fits the account. A stale
    /// session with a password gets the password field (the server's words offer it), a wrong
    /// password keeps it with the server's refusal, the right one deletes; an account without a
    /// password is told to sign in again, in words that do not offer a password.
    @Test func theDeletionModelAsksForWhatFitsTheAccount() async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(.sqlite, clock: clock, setup: .live, adjust: { $0.ipLimits = false }) { server, config in
            try await Self.deletionModel(server, config, clock)
        }
    }

    @MainActor static func deletionModel(_ server: any TestClientProtocol, _ config: GatehouseConfig, _ clock: ManualClock) async throws {
        let port = try #require(server.port)
        let (phone, tablet) = (try TestDevice(), try TestDevice())
        defer { phone.remove(); tablet.remove() }
        let app = try phone.launch(port: port)
        try await app.signUp(email: "going@example.com", password: "correct horse battery")
        clock.advance(by: 301)
        let deletion = AccountDeletionModel(client: app)
        await deletion.load()
        #expect(deletion.route == .confirm && deletion.title == "Delete account" && deletion.canDelete)
        #expect(await deletion.delete() == false)
        #expect(deletion.route == .password && !deletion.canDelete)
        #expect(deletion.message == "To delete your account, confirm it's you: sign in again or enter your password.")
        deletion.password = "not it at all"
        #expect(await deletion.delete() == false)
        #expect(deletion.route == .password && deletion.password.isEmpty)
        #expect(deletion.message?.hasPrefix("That password is not right.") == true)
        deletion.password = "correct horse battery"
        #expect(await deletion.delete() == true)
        let deletedState = await app.state
        #expect(deletion.route == .deleted && deletedState == .signedOut(.accountDeleted))

        // A magic-link account has no password: sign in again, in words that say only that.
        let other = try tablet.launch(port: port)
        try await other.sendMagicLink(email: "linked@example.com")
        let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link")
        _ = try await other.verifyMagicLink(email: "linked@example.com", code: try EmailFlowTests.code(in: ReceivedMail(text: mail.textBody ?? "")))
        clock.advance(by: 301)
        let passwordless = AccountDeletionModel(client: other)
        await passwordless.load()
        #expect(await passwordless.delete() == false)
        #expect(passwordless.route == .signInAgain && !passwordless.canDelete)
        #expect(passwordless.message == "To delete your account, confirm it's you: sign in again.")
        #expect(passwordless.guidance == "Sign out, then sign in again and delete your account within five minutes.")
        #expect(try await other.refreshUser().email == "linked@example.com")
    }
}
