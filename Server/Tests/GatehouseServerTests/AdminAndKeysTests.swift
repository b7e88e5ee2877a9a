import Crypto
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

@Suite struct AdminAPITests {
    @Test(arguments: Backend.available)
    func adminCallsNeedTheAdminKey(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, _ in
            for headers: HTTPFields in [[:], [.authorization: "Bearer wrong-key-0123456789abcdefghij"], [.authorization: TestApp.adminKey]] {
                let response = try await client.execute(uri: "/admin/v1/users", method: .get, headers: headers)
                #expect(response.status == .unauthorized)
                #expect(response.error?.code == .unauthorized)
            }
            let ok = try await client.execute(uri: "/admin/v1/users", method: .get, headers: TestApp.adminHeaders)
            #expect(ok.status == .ok)
        }
    }

    @Test(arguments: Backend.available)
    func listShowDisableAndEnableUsers(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, config in
            let users = (0..<3).map { index in
                User(
                    id: .random(), email: "Person\(index)@Example.com", normalizedEmail: "person\(index)@example.com",
                    createdAt: Date(unixSeconds: 1_800_000_000 + Int64(index)))
            }
            try await TestApp.withStore(config) { store in
                for user in users {
                    try await store.insertUser(user)
                    try await store.insertIdentity(
                        Identity(userID: user.id, provider: .email, subject: user.normalizedEmail!, email: user.email, createdAt: user.createdAt))
                }
                try await store.insertPasskey(
                    Passkey(
                        userID: users[2].id, credentialID: Array("admin-list-key".utf8), publicKey: Array(repeating: 1, count: 65), signCount: 0,
                        backupEligible: true, backedUp: true, transports: [], aaguid: Array(repeating: 0, count: 16), name: "Laptop",
                        createdAt: users[2].createdAt))
            }
            let first = try await client.execute(uri: "/admin/v1/users?limit=2", method: .get, headers: TestApp.adminHeaders)
                .json(AdminUserList.self)
            #expect(first.users.map(\.user.id) == [users[2].id.description, users[1].id.description])
            // Each account's identities and passkeys, read for the whole page at once.
            #expect(first.users.map { $0.passkeys.map(\.name) } == [["Laptop"], []])
            #expect(first.users.map { $0.user.identities.map(\.provider) } == [["email"], ["email"]])
            let cursor = try #require(first.nextCursor)
            let second = try await client.execute(uri: "/admin/v1/users?limit=2&before=\(cursor)", method: .get, headers: TestApp.adminHeaders)
                .json(AdminUserList.self)
            #expect(second.users.map(\.user.id) == [users[0].id.description])
            #expect(second.nextCursor == nil)

            let found = try await client.execute(uri: "/admin/v1/users?q=person1", method: .get, headers: TestApp.adminHeaders)
                .json(AdminUserList.self)
            #expect(found.users.map(\.user.email) == ["Person1@Example.com"])
            #expect(found.users.first?.user.identities.map(\.provider) == ["email"])

            let target = users[1].id.description
            let disabled = try await client.execute(
                uri: "/admin/v1/users/\(target)/disable", method: .post, headers: TestApp.adminHeaders,
                body: jsonBody(#"{"reason": "chargeback"}"#))
            #expect(disabled.status == .ok)
            let disabledView = try disabled.json(AdminUser.self)
            #expect(disabledView.disabled && disabledView.disabledReason == "chargeback" && disabledView.disabledAt != nil)

            let shown = try await client.execute(uri: "/admin/v1/users/\(target)", method: .get, headers: TestApp.adminHeaders)
            #expect(try shown.json(AdminUser.self).disabled)
            let stored = try await TestApp.withStore(config) { try await $0.user(id: users[1].id) }
            #expect(stored?.isDisabled == true)

            let enabled = try await client.execute(uri: "/admin/v1/users/\(target)/enable", method: .post, headers: TestApp.adminHeaders)
            #expect(try enabled.json(AdminUser.self).disabled == false)

            let missing = try await client.execute(uri: "/admin/v1/users/\(UUID())", method: .get, headers: TestApp.adminHeaders)
            #expect(missing.status == .notFound && missing.error?.code == .notFound)
            let badCursor = try await client.execute(uri: "/admin/v1/users?before=nonsense", method: .get, headers: TestApp.adminHeaders)
            #expect(badCursor.status == .badRequest && badCursor.error?.code == .invalidRequest)
        }
    }
}

@Suite struct SigningKeyTests {
    @Test(arguments: Backend.available)
    func aRotatedKeyStaysPublishedUntilItsTokensHaveExpired(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await TestApp.run(backend, clock: clock) { client, config in
            let initial = try await client.execute(uri: "/.well-known/jwks.json", method: .get).json(JSONWebKeySet.self)
            #expect(initial.keys.count == 1)
            let first = try #require(initial.keys.first)
            #expect(first.kty == "EC" && first.crv == "P-256" && first.alg == "ES256" && first.use == "sig")
            #expect(first.x?.count == 43 && first.y?.count == 43)

            let rotated = try await client.execute(uri: "/admin/v1/keys/rotate", method: .post, headers: TestApp.adminHeaders)
            #expect(rotated.status == .ok)
            let afterRotation = try await client.execute(uri: "/.well-known/jwks.json", method: .get).json(JSONWebKeySet.self)
            #expect(afterRotation.keys.count == 2)
            #expect(afterRotation.keys.map(\.kid).contains(first.kid))
            let second = try #require(afterRotation.keys.first { $0.kid != first.kid })

            // Past the longest access-token life plus leeway, counted from when the last node can
            // have stopped signing with it (one reload interval later), the first key is gone.
            let publish = KeyRing.retiredKeyPublishSeconds(
                accessTokenTTLSeconds: config.preset.tokens.accessTokenTTLSeconds, leewaySeconds: config.preset.tokens.leewaySeconds)
            #expect(publish > config.preset.tokens.accessTokenTTLSeconds + config.preset.tokens.leewaySeconds + KeyRing.reloadIntervalSeconds)
            let oneSecondBefore = clock.now.addingTimeInterval(TimeInterval(publish - 1))
            let stillPublished = try await TestApp.withStore(config) { try await $0.signingKeys(publishedAt: oneSecondBefore).map(\.kid) }
            #expect(stillPublished.contains(first.kid))
            clock.advance(by: TimeInterval(publish + 1))
            _ = try await client.execute(uri: "/admin/v1/keys/rotate", method: .post, headers: TestApp.adminHeaders)
            let later = try await client.execute(uri: "/.well-known/jwks.json", method: .get).json(JSONWebKeySet.self)
            #expect(later.keys.count == 2)
            #expect(!later.keys.map(\.kid).contains(first.kid))
            #expect(later.keys.map(\.kid).contains(second.kid))
        }
    }

    @Test func theKidIsTheKeysRFC7638Thumbprint() async throws {
        try await TestApp.run(.sqlite) { client, _ in
            let key = try #require(try await client.execute(uri: "/.well-known/jwks.json", method: .get).json(JSONWebKeySet.self).keys.first)
            let input = #"{"crv":"P-256","kty":"EC","x":"\#(key.x!)","y":"\#(key.y!)"}"#
            let thumbprint = Data(SHA256.hash(data: Data(input.utf8))).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(key.kid == thumbprint)
        }
    }

    @Test func privateKeysAreEncryptedAtRestWithTheSecretKey() async throws {
        let (url, cleanup) = try await TestDatabase.make(.sqlite)
        defer { Task { await cleanup() } }
        var config = try TestApp.config(url, directory: try ServerProcess.makeDirectory())
        config.secretKey = "a-secret-of-at-least-thirty-two-bytes!"
        let app = try await buildApplication(config: config, dependencies: AppDependencies(logger: TestApp.quietLogger))
        try await app.test(.router) { client in
            let health = try await client.execute(uri: "/health", method: .get)
            #expect(health.status == .ok)
        }
        let keys = try await TestApp.withStore(config) { try await $0.allSigningKeys() }
        #expect(keys.count == 1)
        #expect(keys[0].encryption == "aes-256-gcm")
        #expect(keys[0].privateKey.count == 12 + 32 + 16)  // nonce + sealed P-256 scalar + tag

        // Starting with another secret, or none, fails with a reason instead of signing garbage.
        for secret in ["another-secret-of-at-least-thirty-two-bytes", nil] {
            var other = config
            other.secretKey = secret
            let restarted = try await buildApplication(config: other, dependencies: AppDependencies(logger: TestApp.quietLogger))
            await #expect {
                try await restarted.test(.router) { _ in }
            } throws: { error in
                "\(error)".contains("GATEHOUSE_SECRET_KEY")
            }
        }
    }

    @Test func anUnencryptedKeyIsSealedOnceASecretIsSet() async throws {
        let (url, cleanup) = try await TestDatabase.make(.sqlite)
        defer { Task { await cleanup() } }
        var config = try TestApp.config(url, directory: try ServerProcess.makeDirectory())
        let plain = try await buildApplication(config: config, dependencies: AppDependencies(logger: TestApp.quietLogger))
        try await plain.test(.router) { _ in }
        #expect(try await TestApp.withStore(config) { try await $0.allSigningKeys() }.first?.encryption == "none")
        config.secretKey = "a-secret-of-at-least-thirty-two-bytes!"
        let sealed = try await buildApplication(config: config, dependencies: AppDependencies(logger: TestApp.quietLogger))
        try await sealed.test(.router) { client in
            let jwks = try await client.execute(uri: "/.well-known/jwks.json", method: .get).json(JSONWebKeySet.self)
            #expect(jwks.keys.count == 1)
        }
        #expect(try await TestApp.withStore(config) { try await $0.allSigningKeys() }.first?.encryption == "aes-256-gcm")
    }
}

@Suite struct AdminKeyTests {
    @Test func aGeneratedAdminKeyIsWrittenOnceWithMode0600() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gh-admin-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = try AdminKey.load(configured: nil, path: path)
        #expect(first.generated && first.file == path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let key = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.count >= 40)
        let second = try AdminKey.load(configured: nil, path: path)
        #expect(!second.generated)
        #expect(second.matches(key) && first.matches(key))
        #expect(!second.matches(key + "x") && !second.matches(""))
    }

    @Test func aConfiguredKeyWritesNoFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gh-admin-\(UUID().uuidString)").path
        let key = try AdminKey.load(configured: "configured-admin-key-0123456789", path: path)
        #expect(key.file == nil && key.matches("configured-admin-key-0123456789"))
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
