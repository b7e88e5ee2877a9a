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

/// SECURITY.md rows that need a test of their own: the hash cost (R6), header and cookie
/// hardening on every kind of response (R17), and a generic answer to an unexpected failure (R54).
@Suite struct HardeningTests {
    /// R6: new hashes use OWASP's Argon2id figures unless configured otherwise.
    @Test func newPasswordHashesUseTheRecommendedArgon2Cost() async throws {
        #expect(GatehouseConfig().argon2 == Argon2Parameters(memoryKiB: 19_456, iterations: 2, parallelism: 1))
        let config = try await GatehouseConfig.load(environment: [:])
        #expect(config.argon2.memoryKiB == 19_456 && config.argon2.iterations == 2 && config.argon2.parallelism == 1)
        let hasher = try PasswordHasher(parameters: config.argon2, threads: 1)
        let hash = try await hasher.hash("correct horse battery")
        #expect(hash.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        #expect(try await hasher.verify("correct horse battery", against: hash).matches)
        await hasher.shutdown()
    }

    /// R17: `nosniff` and `no-referrer` on JSON, errors, HTML pages, the key set and the
    /// OpenAPI document; over HTTPS, HSTS and a `__Host-` CSRF cookie that is `Secure`.
    @Test func everyResponseCarriesTheHardeningHeaders() async throws {
        try await TestApp.run(.sqlite, adjust: { $0.publicURL = URL(string: "https://auth.example.com")! }) { client, _ in
            let responses: [(String, TestResponse)] = [
                ("health", try await client.execute(uri: "/health", method: .get)),
                ("not found", try await client.execute(uri: "/no/such/route", method: .get)),
                ("unauthorized", try await client.execute(uri: "/v1/me", method: .get)),
                ("page", try await client.execute(uri: "/auth/verify-email?token=" + String(repeating: "a", count: 43), method: .get)),
                ("jwks", try await client.execute(uri: "/.well-known/jwks.json", method: .get)),
                ("openapi", try await client.execute(uri: "/openapi.yaml", method: .get)),
            ]
            for (name, response) in responses {
                #expect(response.headers[.xContentTypeOptions] == "nosniff", "\(name)")
                #expect(response.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer", "\(name)")
                #expect(response.headers[HTTPField.Name("Strict-Transport-Security")!]?.hasPrefix("max-age=") == true, "\(name)")
            }
            let page = responses.first { $0.0 == "page" }!.1
            let cookie = try #require(page.headers[.setCookie])
            #expect(cookie.hasPrefix("__Host-gatehouse_csrf="))
            for attribute in ["Path=/;", "HttpOnly", "SameSite=Strict", "Secure"] {
                #expect(cookie.contains(attribute), "\(attribute) missing from \(cookie)")
            }
            #expect(!cookie.contains("Domain="))
        }
        // Over plain HTTP (development) the cookie cannot be `Secure`, so it has no prefix.
        try await TestApp.run(.sqlite) { client, _ in
            let page = try await client.execute(uri: "/auth/verify-email?token=" + String(repeating: "a", count: 43), method: .get)
            let cookie = try #require(page.headers[.setCookie])
            #expect(cookie.hasPrefix("gatehouse_csrf=") && !cookie.contains("Secure"))
            #expect(page.headers[HTTPField.Name("Strict-Transport-Security")!] == nil)
        }
    }

    /// R54: a failure nobody planned for (here a stored value that no longer decodes) answers
    /// 500 `internal_error` with the preset's words, and nothing about the cause.
    @Test(arguments: Backend.available)
    func anUnexpectedFailureAnswersAGenericMessage(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, config in
            let account = try await AuthClient(client: client).account("broken@example.com")
            let database = try await config.database.open(logger: TestDatabase.logger)
            let corrupt: @Sendable () async throws -> Void = {
                // Text where the column holds seconds. SQLite stores it as it comes; PostgreSQL's
                // column is BIGINT, so it is made TEXT first, without the indexes that divide it
                // into weeks (migration 37), which text cannot be.
                switch backend {
                case .sqlite:
                    try await database.query("UPDATE users SET created_at = 'not a time' WHERE id = ?", [.text(account.user.id)])
                case .postgres:
                    try await database.query("DROP INDEX users_email_prefix_weekly, users_handle_prefix_weekly")
                    try await database.query("ALTER TABLE users ALTER COLUMN created_at TYPE TEXT")
                    try await database.query("UPDATE users SET created_at = 'not a time' WHERE id = ?", [.text(account.user.id)])
                }
            }
            if let postgres = database as? PostgresDatabase {
                try await postgres.withRunning { try await corrupt() }
            } else {
                try await corrupt()
            }
            await database.shutdown()
            let response = try await AuthClient(client: client).get("/v1/me", token: account.session.accessToken)
            #expect(response.status == .internalServerError)
            #expect(response.error?.code == .internalError)
            #expect(response.error?.message == "Something went wrong on our end. Please try again in a few minutes.")
            let body = String(buffer: response.body)
            for leak in ["created_at", "decod", "column", "not a time", "SQL"] {
                #expect(!body.contains(leak), "the answer mentions \(leak): \(body)")
            }
        }
    }
}
