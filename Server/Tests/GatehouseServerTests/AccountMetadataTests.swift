import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseVerifier
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Account metadata on the native API and Supabase's claims in native tokens (issue 46):
/// `user_metadata` written by the holder through `PATCH /v1/me` (merged, `null` removes a key,
/// at most 4 KiB), `app_metadata` by the service role only; with the preset's
/// `tokens.supabase_claims` on, every access token carries `role`, `email` and `app_metadata`,
/// and `GatehouseVerifier` reads them.
@Suite struct AccountMetadataTests {
    static let serviceHeaders: HTTPFields = [
        HTTPField.Name("apikey")!: SupabaseCompatTests.serviceRoleKey, .authorization: "Bearer \(SupabaseCompatTests.serviceRoleKey)",
        .contentType: "application/json",
    ]

    @Test(arguments: Backend.available)
    func theHolderWritesUserMetadataAndOnlyOperatorsAppMetadata(_ backend: Backend) async throws {
        try await TestApp.run(backend, adjust: SupabaseCompatTests.withBothKeys) { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("metadata@example.com")
            let token = account.session.accessToken
            let written = try await AccountTests.patch(api, token, #"{"user_metadata": {"color": "teal", "size": 3, "email": "x@example.com"}}"#)
            #expect(written.status == .ok, "\(written.text)")
            // Top-level merge; `null` removes a key; a key naming what the server keeps (`email`)
            // is kept as set and shows the server's value: the holder cannot make it say another address.
            _ = try await AccountTests.patch(api, token, #"{"user_metadata": {"size": null, "nested": {"a": [1, 2]}}, "app_metadata": {"roles": ["admin"]}}"#)
            var me = try await api.get("/v1/me", token: token).json(MeResponse.self).user
            #expect(
                me.userMetadata == [
                    "color": .string("teal"), "nested": .object(["a": .array([.number(1), .number(2)])]), "email": .string("metadata@example.com"),
                ])
            #expect(me.appMetadata == [:])
            let big = String(repeating: "x", count: AccountMetadata.maxBytes)
            let refused = try await AccountTests.patch(api, token, #"{"user_metadata": {"big": "\#(big)"}}"#)
            #expect(refused.status == .badRequest && refused.text.contains("at most 4096 bytes"), "\(refused.text)")

            // The service role (an operator) writes app_metadata; the holder reads it.
            let put = try await client.execute(
                uri: "/auth/v1/admin/users/\(account.user.id)", method: .put, headers: Self.serviceHeaders,
                body: ByteBuffer(string: #"{"app_metadata": {"roles": ["editor"], "provider": "google"}}"#))
            #expect(put.status == .ok, "\(put.text)")
            me = try await api.get("/v1/me", token: token).json(MeResponse.self).user
            #expect(me.appMetadata == ["roles": .array([.string("editor")])])
            // Both objects are in the export.
            let export = try await api.get("/v1/me/export", token: token)
            let users = (try JSONSerialization.jsonObject(with: Data(buffer: export.body)) as? [String: Any])?["users"] as? [String: Any]
            #expect((users?["app_metadata"] as? [String: Any])?["roles"] as? [String] == ["editor"])
            #expect((users?["user_metadata"] as? [String: Any])?["color"] as? String == "teal")
            // Without the preset switch a native token has none of Supabase's claims.
            let claims = try jwtParts(try await api.login("metadata@example.com").json(AuthResponse.self).session.accessToken).claims
            #expect(claims["role"] == nil && claims["email"] == nil && claims["app_metadata"] == nil)
        }
    }

    /// Twelve writes of twelve keys released together (the last-byte technique), the holder's
    /// and an operator's: each merges into what is stored when it holds the account's row, so
    /// every key is kept.
    @Test(arguments: Backend.available)
    func writesReleasedTogetherLoseNoKey(_ backend: Backend) async throws {
        try await TestApp.run(backend, setup: .live, adjust: ConcurrentLimitTests.patient) { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("race@example.com")
            let token = account.session.accessToken
            let requests = (0..<12).map { key in
                let body = #"{"user_metadata": {"k\#(key)": \#(key)}}"#
                return key.isMultiple(of: 3)
                    ? LastByteRace.request("PATCH", "/v1/me", json: body, headers: ["Authorization": "Bearer \(token)"])
                    : LastByteRace.request(
                        "PATCH", "/admin/v1/users/\(account.user.id)/metadata", json: body, headers: ["Authorization": "Bearer \(TestApp.adminKey)"])
            }
            let answers = try await BurstGate.exclusive { try await LastByteRace.send(port: try #require(client.port), requests) }
            #expect(answers.map(\.status) == Array(repeating: 200, count: 12), "\(answers.map(\.status))")
            let me = try await api.get("/v1/me", token: token).json(MeResponse.self).user
            #expect(me.userMetadata == Dictionary(uniqueKeysWithValues: (0..<12).map { ("k\($0)", JSONValue.number(Double($0))) }))
        }
    }

    @Test(arguments: Backend.available)
    func nativeTokensCarrySupabasesClaimsWhenThePresetSaysSo(_ backend: Backend) async throws {
        let adjust: (inout GatehouseConfig) -> Void = { config in
            config.preset.tokens.supabaseClaims = true
            SupabaseCompatTests.withBothKeys(&config)
        }
        try await TestApp.run(backend, setup: .live, adjust: adjust) { client, config in
            let api = AuthClient(client: client)
            let account = try await api.account("claims@example.com")
            let put = try await client.execute(
                uri: "/auth/v1/admin/users/\(account.user.id)", method: .put, headers: Self.serviceHeaders,
                body: ByteBuffer(string: #"{"app_metadata": {"roles": ["editor"]}, "user_metadata": {"color": "teal"}}"#))
            #expect(put.status == .ok, "\(put.text)")
            let session = try await api.login("claims@example.com").json(AuthResponse.self).session
            let claims = try jwtParts(session.accessToken).claims
            #expect(claims["role"] as? String == "authenticated" && claims["email"] as? String == "claims@example.com")
            #expect((claims["app_metadata"] as? [String: Any])?["roles"] as? [String] == ["editor"])
            // The switch adds three claims; the holder's own metadata stays out of native tokens.
            #expect(claims["user_metadata"] == nil && claims["session_id"] == nil && claims["phone"] == nil)
            let port = try #require(client.port)
            let verifier = AccessTokenVerifier(
                jwksURL: URL(string: "http://127.0.0.1:\(port)/.well-known/jwks.json")!, issuer: config.issuer, audience: config.audience,
                fetch: .http())
            let user = try await verifier.verify(session.accessToken)
            #expect(user.role == "authenticated" && user.email == "claims@example.com")
            #expect(user.appMetadata == ["roles": .array([.string("editor")])] && user.userMetadata == nil)
        }
    }
}
