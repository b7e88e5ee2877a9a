import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Issue 47: with the session cache on (production's default), `GET /v1/me` and
/// `POST /v1/entitlements/check` read an account's facts (identities, ledger, this period's
/// credits) from the node's copy, on SQLite as on PostgreSQL. A change the node makes itself is
/// seen by the very next request: a spend, a grant, a linked way in. (Across nodes:
/// `SessionCacheTests` and the cluster test's check s.)
@Suite struct AccountFactsCacheTests {
    func me(_ api: AuthClient, _ token: String) async throws -> MeResponse {
        let me = try await api.get("/v1/me", token: token)
        try #require(me.status == .ok, "GET /v1/me: \(me.status)")
        return try me.json(MeResponse.self)
    }

    func check(_ api: AuthClient, _ token: String) async throws -> GateDecision {
        let decided = try await api.post("/v1/entitlements/check", #"{"action": "practice_saved_flow"}"#, token: token)
        try #require(decided.status == .ok, "check: \(decided.status)")
        return try decided.json(GateDecision.self)
    }

    @Test(arguments: Backend.available)
    func theNodesOwnChangesAreSeenByTheNextRead(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "handz", setup: .live, adjust: { $0.sessionCache = true }) { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("facts@example.com")
            let token = account.session.accessToken
            // Read (and kept) before each change: the answers after it must not be the copies.
            let before = try await me(api, token)
            _ = try await me(api, token)
            let granted = try #require(before.entitlements.credits["practice"])
            #expect(granted.remaining == granted.granted && before.entitlements.planState == .free)
            #expect(try await check(api, token).allowed)

            for spent in 1...granted.granted {
                _ = try await me(api, token)
                _ = try await check(api, token)
                let spend = try await api.post(
                    "/v1/credits/practice/spend", #"{"idempotency_key": "spend-\#(spent)", "action": "practice_saved_flow"}"#, token: token)
                #expect(spend.status == .ok)
                #expect(try await me(api, token).entitlements.credits["practice"]?.remaining == granted.granted - spent)
            }
            let exhausted = try await check(api, token)
            #expect(!exhausted.allowed && exhausted.reasonCode == "credits_exhausted")

            let until = ISO8601DateFormatter().string(from: Date().addingTimeInterval(86_400))
            let grant = try await api.post(
                "/admin/v1/users/\(account.user.id)/grants", #"{"until": "\#(until)", "reason": "support"}"#,
                headers: [.authorization: "Bearer \(TestApp.adminKey)"])
            #expect(grant.status == .created, "\(grant.text)")
            #expect(try await me(api, token).entitlements.planState == .pro)
            #expect(try await check(api, token).allowed)
        }
    }
}
