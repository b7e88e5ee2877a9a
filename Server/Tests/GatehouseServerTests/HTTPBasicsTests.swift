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

@Suite struct HTTPBasicsTests {
    @Test(arguments: Backend.available)
    func healthAnswersOKWithARequestID(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, _ in
            // The probe gives the database 2 s; on this 2-core machine under the whole parallel
            // suite, a new server's first one has missed that (503, Retry-After). A healthy server
            // answers 200 within a few tries; a broken one never does.
            var response = try await client.execute(uri: "/health", method: .get)
            for _ in 0..<5 where response.status == .serviceUnavailable {
                try await Task.sleep(for: .seconds(1))
                response = try await client.execute(uri: "/health", method: .get)
            }
            #expect(response.status == .ok)
            #expect(try response.json(HealthResponse.self).status == "ok")
            let id = try #require(response.headers[HTTPField.Name("X-Request-Id")!])
            #expect(UUID(uuidString: id) != nil)
            #expect(response.headers[.cacheControl] == "no-store")
        }
    }

    @Test func aSaneIncomingRequestIDIsKeptAndAnOddOneReplaced() async throws {
        try await TestApp.run(.sqlite) { client, _ in
            let kept = try await client.execute(uri: "/health", method: .get, headers: [HTTPField.Name("X-Request-Id")!: "trace-abc_123"])
            #expect(kept.headers[HTTPField.Name("X-Request-Id")!] == "trace-abc_123")
            let replaced = try await client.execute(
                uri: "/health", method: .get, headers: [HTTPField.Name("X-Request-Id")!: "bad id\" with quotes"])
            #expect(replaced.headers[HTTPField.Name("X-Request-Id")!] != "bad id\" with quotes")
            // A new id is a version-4 UUID in lowercase, different every time.
            var seen = Set<String>()
            for _ in 0..<50 {
                let id = try #require(try await client.execute(uri: "/health", method: .get).headers[HTTPField.Name("X-Request-Id")!])
                #expect(UUID(uuidString: id)?.uuidString.lowercased() == id && id.count == 36, "\(id)")
                #expect(Array(id)[14] == "4" && "89ab".contains(Array(id)[19]), "\(id)")
                seen.insert(id)
            }
            #expect(seen.count == 50)
        }
    }

    @Test func anUnknownRouteIs404InTheContractShape() async throws {
        try await TestApp.run(.sqlite) { client, _ in
            for (uri, method) in [("/nope", HTTPRequest.Method.get), ("/v1/auth/nothing", .post), ("/health", .delete)] {
                let response = try await client.execute(uri: uri, method: method)
                #expect(response.status == .notFound)
                #expect(response.error?.code == .notFound)
                #expect(response.error?.message == "There is nothing at this address.")
                #expect(response.headers[HTTPField.Name("X-Request-Id")!] != nil)
            }
        }
    }

    /// Over a connection (`WholeBodyHandler` keeps the limit) and in process (the middleware does).
    @Test(arguments: [true, false])
    func aBodyOverTheLimitIs413(live: Bool) async throws {
        try await TestApp.run(.sqlite, setup: live ? .live : .router, adjust: { $0.maxBodyBytes = 2_048 }) { client, _ in
            let big = ByteBuffer(repeating: UInt8(ascii: "a"), count: 4_096)
            // Declared too large: refused before routing, whatever the path.
            let declared = try await client.execute(uri: "/anything", method: .post, headers: [.contentLength: "4096"], body: big)
            #expect(declared.status == .contentTooLarge)
            #expect(declared.error?.code == .payloadTooLarge)
            // A JSON route reading a large body refuses it too.
            let users = try await client.execute(
                uri: "/admin/v1/users/\(UUID())/disable", method: .post, headers: TestApp.adminHeaders,
                body: jsonBody(#"{"reason": ""# + String(repeating: "x", count: 3_000) + #""}"#))
            #expect(users.status == .contentTooLarge)
            #expect(users.error?.code == .payloadTooLarge)
        }
    }

    @Test func malformedJSONAndWrongTypesAre400InvalidRequest() async throws {
        try await TestApp.run(.sqlite) { client, config in
            let user = User(id: .random(), email: "m@x.io", normalizedEmail: "m@x.io", createdAt: Date())
            try await TestApp.withStore(config) { try await $0.insertUser(user) }
            let uri = "/admin/v1/users/\(user.id)/disable"
            let cases: [(String, String)] = [
                ("{not json", "not valid JSON"),
                (#"{"reason": 42}"#, "'reason'"),
                ("[1, 2]", "JSON object"),
            ]
            for (body, fragment) in cases {
                let response = try await client.execute(uri: uri, method: .post, headers: TestApp.adminHeaders, body: jsonBody(body))
                #expect(response.status == .badRequest, "\(body)")
                #expect(response.error?.code == .invalidRequest)
                #expect(response.error?.message.contains(fragment) == true, "\(response.text)")
            }
            let wrongType = try await client.execute(
                uri: uri, method: .post, headers: [.authorization: "Bearer \(TestApp.adminKey)", .contentType: "text/plain"],
                body: jsonBody("{}"))
            #expect(wrongType.status == .unsupportedMediaType)
        }
    }

    @Test(arguments: ["default", "handz", "oklah", "syncwell", "hannah"])
    func configServesEachPresetsMethods(_ preset: String) async throws {
        let expected: [String: [String]] = [
            "default": ["email_password", "magic_link", "anonymous", "apple", "google", "passkey"],
            "handz": ["email_password", "apple", "google", "passkey"],
            "oklah": ["anonymous"],
            "syncwell": ["email_password", "apple", "google"],
            "hannah": ["magic_link", "passkey", "phone"],
        ]
        try await TestApp.run(.sqlite, preset: preset) { client, _ in
            let response = try await client.execute(uri: "/v1/config", method: .get)
            #expect(response.status == .ok)
            let config = try response.json(PublicConfiguration.self)
            #expect(config.preset == preset)
            #expect(config.signInMethods == expected[preset])
            #expect(config.accessTokenTTLSeconds == 900)
        }
    }

    @Test func presetNumbersFollowTheSeeds() throws {
        let syncwell = try PresetLibrary.load("syncwell").get()
        #expect(syncwell.passwordPolicy.minLength == 10)
        #expect(syncwell.passwordPolicy.minCharacterClasses == 3)
        #expect(syncwell.passwordPolicy.breachedCheck)
        #expect(syncwell.text("error.invalid_credentials", "") == "Invalid email or password. Please try again.")
        let handz = try PresetLibrary.load("handz").get()
        #expect(handz.enumerationProtection == .helpful)
        #expect(handz.throttling.loginFailuresBeforeLockout == 5)
        #expect(handz.handles.minLength == 3 && handz.handles.maxLength == 20)
        let oklah = try PresetLibrary.load("oklah").get()
        #expect(oklah.privacy.clientIP == .truncated && oklah.privacy.retentionDays == 30)
        #expect(oklah.handles.enabled == false)
        for name in Preset.builtInNames {
            let preset = try PresetLibrary.load(name).get()
            #expect(preset.tokens.refreshTokenTTLSeconds == 30 * 86_400)
        }
    }
}
