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

/// Issue 17: the limits that failed when an attacker's requests arrived together, each tried
/// the attacker's way (`LastByteRace`: every request but its last byte sent, then all last bytes
/// at once), on SQLite and PostgreSQL. Each of these failed before the fix it names.
@Suite struct ConcurrentLimitTests {
    static let password = "correct horse battery"

    /// The test client keeps one connection open while a test waits its turn at `BurstGate`;
    /// the server's 30 s idle timeout must not close it meanwhile.
    static func patient(_ config: inout GatehouseConfig) {
        config.httpIdleTimeoutSeconds = 600
    }

    static func credentials(_ email: String, _ password: String) -> String {
        AuthClient.credentials(email, password)
    }

    /// Finding 1: 15 wrong codes released together are compared five times at most: the
    /// attempt is reserved (`code_attempts < limit`) before the comparison, and the right code
    /// afterwards finds the code used up.
    @Test(arguments: Backend.available)
    func magicLinkCodeGuessesStopAtTheLimitWhateverArrivesTogether(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live, adjust: { $0.ipLimits = false; Self.patient(&$0) }) { client, config in
            let api = AuthClient(client: client)
            let port = try #require(client.port)
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "guess@example.com"}"#).status == .accepted)
            let mail = try await EmailFlowTests.outboxMail(config, kind: "magic_link")
            let code = try EmailFlowTests.code(in: ReceivedMail(text: mail.textBody ?? ""))
            let wrong = Array((0..<1_000_000).lazy.map { String(format: "%06d", $0) }.filter { $0 != code }.prefix(15))
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(
                port: port,
                wrong.map { LastByteRace.request("POST", "/v1/auth/magic-link/verify", json: #"{"email": "guess@example.com", "code": "\#($0)"}"#) }) }
            #expect(answers.allSatisfy { $0.status == 400 }, "\(answers.map(\.status))")
            let compared = answers.filter { $0.error?.code == .tokenInvalid }
            #expect(compared.count == 4, "four wrong codes answered with attempts left, then the code is dead")
            #expect(answers.filter { $0.error?.code == .codeExhausted }.count == 11)
            let attempts = try await TestApp.withStore(config) { store in
                try await store.newestEmailToken(normalizedEmail: "guess@example.com", purpose: .magicLink)?.codeAttempts
            }
            #expect(attempts == 5)
            let right = try await api.post("/v1/auth/magic-link/verify", #"{"email": "guess@example.com", "code": "\#(code)"}"#)
            #expect(right.status == .badRequest && right.error?.code == .codeExhausted)
        }
    }

    /// Finding 2 (R7): 15 wrong passwords released together get exactly five 401s; the fifth
    /// locks the account before its hash is done, the others get 429 without a hash, and the
    /// right password afterwards waits too.
    @Test(arguments: Backend.available)
    func parallelWrongPasswordsLockTheAccountAfterFive(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "handz", setup: .live, adjust: { $0.ipLimits = false; Self.patient(&$0) }) { client, _ in
            let api = AuthClient(client: client)
            let port = try #require(client.port)
            _ = try await api.account("lockrace@example.com", "right password 1")
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(
                port: port, LastByteRace.request("POST", "/v1/auth/login", json: Self.credentials("lockrace@example.com", "wrong guess")),
                copies: 15) }
            #expect(answers.filter { $0.status == 401 && $0.error?.code == .invalidCredentials }.count == 5, "\(answers.map(\.status))")
            #expect(answers.filter { $0.status == 429 && $0.error?.code == .tooManyAttempts }.count == 10)
            let right = try await api.login("lockrace@example.com", "right password 1")
            #expect(right.status == .tooManyRequests && right.error?.code == .tooManyAttempts)
        }
    }

    /// Finding 3: an anonymous start's Idempotency-Key answers the same account only while it
    /// is anonymous and its first session lives; replays count against the per-IP limit.
    @Test(arguments: Backend.available)
    func anAnonymousIdempotencyKeyDiesWithTheUpgradeAndTheLogout(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live, adjust: Self.patient) { client, config in
            let api = AuthClient(client: client)
            let port = try #require(client.port)
            let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "anon-key-0001"]
            let first = try await api.post("/v1/auth/anonymous", "", headers: key).json(AnonymousResponse.self)
            let again = try await api.post("/v1/auth/anonymous", "", headers: key).json(AnonymousResponse.self)
            #expect(again.user.id == first.user.id)
            // Upgraded with an email and a password, then signed out everywhere.
            let upgraded = try await api.post(
                "/v1/auth/identities/email", Self.credentials("upgraded@example.com", Self.password), token: first.session.accessToken)
            #expect(upgraded.status == .ok)
            let replay = try await api.post("/v1/auth/anonymous", "", headers: key)
            #expect(try replay.json(AnonymousResponse.self).user.id != first.user.id, "the key no longer reaches the upgraded account")
            // A key whose first session was signed out locally answers 409.
            let other: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "anon-key-0002"]
            let second = try await api.post("/v1/auth/anonymous", "", headers: other).json(AnonymousResponse.self)
            #expect(try await api.post("/v1/auth/logout", #"{"scope": "local"}"#, token: second.session.accessToken).status == .noContent)
            let dead = try await api.post("/v1/auth/anonymous", "", headers: other)
            #expect(dead.status == .conflict && dead.error?.code == .idempotencyKeyReused)
            // Replays released together count against the per-IP limit (30 an hour by default).
            let third = try await api.post("/v1/auth/anonymous", "", headers: [HTTPField.Name("Idempotency-Key")!: "anon-key-0003"])
            #expect(third.status == .created)
            let burst = try await BurstGate.exclusive { try await LastByteRace.send(
                port: port, LastByteRace.request("POST", "/v1/auth/anonymous", headers: ["Idempotency-Key": "anon-key-0003"]), copies: 40) }
            let limit = config.preset.throttling.anonymousPerIPPerHour
            #expect(burst.filter { $0.status == 201 }.count <= limit)
            #expect(burst.filter { $0.status == 429 && $0.error?.code == .rateLimited }.count >= 40 - limit)
        }
    }

    /// Finding 4: a sign-up's replay is a password sign-in and passes what a login passes: a
    /// locked account stays locked, and wrong passwords through replays are counted.
    @Test(arguments: Backend.available)
    func aSignUpReplayIsNoWayAroundTheLockout(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "handz", setup: .live, adjust: { $0.ipLimits = false; Self.patient(&$0) }) { client, _ in
            let api = AuthClient(client: client)
            let port = try #require(client.port)
            let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "signup-key-0001"]
            let body = Self.credentials("replay@example.com", "right password 1")
            #expect(try await api.post("/v1/auth/signup", body, headers: key).status == .created)
            // Wrong passwords through replays, released together: counted like logins.
            let guesses = try await BurstGate.exclusive { try await LastByteRace.send(
                port: port,
                LastByteRace.request(
                    "POST", "/v1/auth/signup", json: Self.credentials("replay@example.com", "wrong guess"),
                    headers: ["Idempotency-Key": "signup-key-0001"]),
                copies: 12) }
            #expect(guesses.filter { $0.status == 401 }.count == 5, "\(guesses.map(\.status))")
            #expect(guesses.filter { $0.status == 429 && $0.error?.code == .tooManyAttempts }.count == 7)
            // The account is locked: the right password through a replay waits like a login.
            let replay = try await api.post("/v1/auth/signup", body, headers: key)
            #expect(replay.status == .tooManyRequests && replay.error?.code == .tooManyAttempts)
        }
    }

    /// Finding 5: `privacy.client_ip: none` keeps no address, yet the per-IP limits still count
    /// the real one (as a keyed hash that reveals nothing in the database).
    @Test func perIPLimitsHoldWhenThePresetKeepsNoAddress() async throws {
        try await TestApp.run(.sqlite, setup: .live, adjust: { $0.preset.privacy.clientIP = .none }) { client, config in
            let api = AuthClient(client: client)
            let limit = config.preset.throttling.anonymousPerIPPerHour
            for _ in 0..<limit { #expect(try await api.post("/v1/auth/anonymous", "").status == .created) }
            let refused = try await api.post("/v1/auth/anonymous", "")
            #expect(refused.status == .tooManyRequests && refused.error?.code == .rateLimited)
            let database = try await config.database.open(logger: TestApp.quietLogger)
            let keys = try await database.query("SELECT key FROM rate_limits").map { try $0.string("key") }
            await database.shutdown()
            #expect(!keys.isEmpty && keys.allSatisfy { !$0.contains("127.0.0.1") })
        }
    }

    /// Finding 6: 12 resends released together a minute after sign-up send one mail.
    @Test(arguments: Backend.available)
    func parallelVerificationResendsSendOneMail(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await TestApp.run(backend, preset: "syncwell", clock: clock, setup: .live, adjust: { $0.ipLimits = false; Self.patient(&$0) }) { client, config in
            let api = AuthClient(client: client)
            let port = try #require(client.port)
            let account = try await api.account("resend@example.com", "Correct-Horse-Battery-9")
            clock.advance(by: 61)
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(
                port: port,
                LastByteRace.request(
                    "POST", "/v1/auth/email/verification", headers: ["Authorization": "Bearer \(account.session.accessToken)"]),
                copies: 12) }
            #expect(answers.filter { $0.status == 202 }.count == 1, "\(answers.map(\.status))")
            #expect(answers.filter { $0.status == 429 && $0.error?.code == .rateLimited }.count == 11)
            let links = try await TestApp.withStore(config) { store in
                try await store.emailTokenTimes(userID: UserID(account.user.id)!, purpose: .verifyEmail, since: .distantPast).count
            }
            #expect(links == 2, "the sign-up's link and one resend")
        }
    }

    /// Finding 9: a spend's idempotency key is bound to its credit, action and subject.
    @Test(arguments: Backend.available)
    func aSpendKeyAnswersOnlyTheSpendItMade(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "handz") { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("spender@example.com", "right password 1")
            let token = account.session.accessToken
            let first = try await EntitlementTests.spend(api, key: "spend-1", token: token)
            #expect(first.status == .ok)
            #expect(try await EntitlementTests.spend(api, key: "spend-1", token: token).status == .ok)
            let otherAction = try await EntitlementTests.spend(api, key: "spend-1", token: token, action: "practice_inbox_item")
            #expect(otherAction.status == .conflict && otherAction.error?.code == .idempotencyKeyReused)
            let otherCredit = try await api.post(
                "/v1/credits/unknown/spend", #"{"idempotency_key": "spend-1", "action": "practice_saved_flow"}"#, token: token)
            #expect(otherCredit.status == .conflict && otherCredit.error?.code == .idempotencyKeyReused)
            let otherSubject = try await api.post(
                "/v1/credits/practice/spend", #"{"idempotency_key": "spend-1", "action": "practice_saved_flow", "subject": "flow-9"}"#,
                token: token)
            #expect(otherSubject.status == .conflict)
        }
    }

    /// Finding 10: connections over the per-address cap are closed as they open, and the
    /// server takes new ones once they are gone.
    @Test func connectionsOverTheCapAreClosedAtOnce() async throws {
        try await TestApp.run(.sqlite, setup: .live, adjust: { $0.maxConnectionsPerAddress = 20 }) { client, _ in
            let port = try #require(client.port)
            let held = try RawConnections(port: port, count: 30, partial: LastByteRace.request("POST", "/v1/auth/login", json: "{}"))
            // The ten over the cap (eleven if the test client holds one) see the server close
            // them; the twenty within it wait for their body.
            #expect((10...11).contains(await held.closedByServer()))
            held.close()
            // Once they are gone, new connections are taken again (the server sees the closes
            // within moments; a loaded machine may take a few hundred milliseconds more).
            var answers: [LastByteRace.Answer] = []
            for _ in 0..<20 {
                try await Task.sleep(for: .milliseconds(300))
                answers = (try? await LastByteRace.send(port: port, LastByteRace.request("GET", "/v1/config"), copies: 5)) ?? []
                if answers.count == 5, answers.allSatisfy({ $0.status == 200 }) { break }
            }
            #expect(answers.count == 5 && answers.allSatisfy { $0.status == 200 }, "\(answers.map(\.status))")
        }
    }

    /// Finding 11: the lockout says how to get in now, and the owner's reset mail ends it.
    @Test func theLockoutNamesTheWayInAndAResetEndsIt() async throws {
        try await TestApp.run(.sqlite, preset: "handz") { client, config in
            let api = AuthClient(client: client)
            let account = try await api.account("owner@example.com", "right password 1")
            for _ in 0..<5 { _ = try await api.login("owner@example.com", "wrong") }
            let locked = try await api.login("owner@example.com", "right password 1")
            #expect(locked.status == .tooManyRequests)
            #expect(locked.error?.message.contains("reset your password") == true)
            // A device that signed in before keeps its session.
            #expect(try await api.refresh(account.session.refreshToken).status == .ok)
            #expect(try await api.post("/v1/auth/password/forgot", #"{"email": "owner@example.com"}"#).status == .accepted)
            let mail = try await EmailFlowTests.outboxMail(config, kind: "password_reset")
            let token = try EmailFlowTests.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/reset-password")
            #expect(try await api.post("/v1/auth/password/reset", #"{"token": "\#(token)", "password": "new password 22"}"#).status == .ok)
            #expect(try await api.login("owner@example.com", "new password 22").status == .ok)
        }
    }

    /// Finding 12: an access token accepted only in its one base64url spelling.
    @Test func aPaddedSignatureIsRefused() async throws {
        try await TestApp.run(.sqlite) { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("padding@example.com")
            #expect(try await api.get("/v1/me", token: account.session.accessToken).status == .ok)
            for suffix in ["=", "==", "%3D"] {
                #expect(try await api.get("/v1/me", token: account.session.accessToken + suffix).status == .unauthorized, "\(suffix)")
            }
        }
        #expect(Data(base64URLEncoded: "YQ") == Data("a".utf8))
        #expect(Data(base64URLEncoded: "YQ==") == nil)
        #expect(Data(base64URLEncoded: "YR") == nil, "stray bits in the last character")
        #expect(Data(base64URLEncoded: "Y+Q") == nil)
    }
}

/// Raw connections that send part of a request and wait, to see which the server closes.
final class RawConnections: @unchecked Sendable {
    // SAFETY: used from one test task only.
    private var sockets: [Int32] = []

    init(port: Int, count: Int, partial request: [UInt8]) throws {
        for _ in 0..<count {
            let fd = try LastByteRace.connectLoopback(port: port)
            _ = request.dropLast().withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            sockets.append(fd)
        }
    }

    /// How many the server closed (a read sees the end, or a reset) within three seconds, all
    /// sockets watched together by one `poll` on a thread of its own: blocking calls on Swift's
    /// cooperative pool (two threads here) would stall every other test in the process.
    func closedByServer() async -> Int {
        let sockets = self.sockets
        return await withCheckedContinuation { continuation in
            LastByteRace.onOwnThread {
                var watched = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
                let deadline = Date().addingTimeInterval(3)
                var closed = Set<Int32>()
                while Date() < deadline, closed.count < sockets.count {
                    guard poll(&watched, nfds_t(watched.count), 100) > 0 else { continue }
                    for index in watched.indices where watched[index].revents != 0 {
                        var byte: UInt8 = 0
                        let count = recv(watched[index].fd, &byte, 1, Int32(MSG_DONTWAIT))
                        if count == 0 || (count < 0 && errno == ECONNRESET) { closed.insert(watched[index].fd) }
                        watched[index].events = 0
                    }
                }
                continuation.resume(returning: closed.count)
            }
        }
    }

    func close() {
        for fd in sockets { Glibc.close(fd) }
        sockets = []
    }
}
