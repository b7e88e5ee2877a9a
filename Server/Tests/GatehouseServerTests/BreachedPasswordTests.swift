import Crypto
import Foundation
import GatehouseServer
import GatehouseWire
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// A local stand-in for a Pwned Passwords range API, serving the suffixes it is given.
struct RangeServer {
    /// Runs `body` with the base URL of a live range server that knows `breached`.
    static func run(breached: [String], _ body: @escaping @Sendable (String) async throws -> Void) async throws {
        var listed: [String: [String]] = [:]
        for password in breached {
            let digest = Insecure.SHA1.hash(data: Data(password.utf8)).map { String(format: "%02X", $0) }.joined()
            listed[String(digest.prefix(5)), default: []].append("\(digest.dropFirst(5)):42")
        }
        let table = listed
        let router = Router()
        router.get("/range/:prefix") { _, context -> String in
            let prefix = try context.parameters.require("prefix")
            // Padding lines with a zero count, as the real service sends with Add-Padding.
            return (table[prefix.uppercased()] ?? [] + ["0000000000000000000000000000000000A:0"]).joined(separator: "\r\n")
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            try await body("http://127.0.0.1:\(client.port!)/range/")
        }
    }
}

@Suite struct BreachedPasswordTests {
    @Test func aBreachedPasswordIsRefusedAndAnUnlistedOneAccepted() async throws {
        try await RangeServer.run(breached: ["Tr0ub4dor&3-Horse"]) { url in
            try await TestApp.run(.sqlite, preset: "syncwell", adjust: {
                $0.preset.passwordPolicy.breachedCheck = true
                $0.breachedPasswordsURL = url
            }) { client, _ in
                let auth = AuthClient(client: client)
                let refused = try await auth.signup("breach@example.com", "Tr0ub4dor&3-Horse")
                #expect(refused.status == .unprocessableContent)
                #expect(refused.error?.reasons == ["breached"])
                let accepted = try await auth.signup("fine@example.com", "Unlisted-Passw0rd-77")
                #expect(accepted.status == .created)
            }
        }
    }

    @Test func anUnreachableRangeServiceDoesNotBlockSignUp() async throws {
        try await TestApp.run(.sqlite, preset: "syncwell", adjust: {
            $0.preset.passwordPolicy.breachedCheck = true
            $0.breachedPasswordsURL = "http://127.0.0.1:9/range/"
        }) { client, _ in
            let response = try await AuthClient(client: client).signup("offline@example.com", "Tr0ub4dor&3-Horse")
            #expect(response.status == .created)
        }
    }
}
