import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Per-IP limits need a real socket peer, so these run the app on a live loopback port.
@Suite struct IPLimitTests {
    func signups(_ auth: AuthClient, count: Int, forwardedFor: (Int) -> String? = { _ in nil }) async throws -> [HTTPResponse.Status] {
        var statuses: [HTTPResponse.Status] = []
        for index in 0..<count {
            var headers: HTTPFields = [:]
            if let hop = forwardedFor(index) { headers[HTTPField.Name("X-Forwarded-For")!] = hop }
            let response = try await auth.post(
                "/v1/auth/signup", AuthClient.credentials("ip\(index)-\(UUID().uuidString.prefix(6))@example.com", "correct horse battery"),
                headers: headers)
            statuses.append(response.status)
            if response.status == .tooManyRequests {
                #expect(response.error?.code == .rateLimited && response.headers[.retryAfter] != nil)
            }
        }
        return statuses
    }

    @Test func signUpsPerIPAreLimitedAndSpoofedForwardingIsIgnored() async throws {
        try await TestApp.run(.sqlite, clock: ManualClock(), setup: .live) { client, _ in
            // 20 an hour from one address; a forged X-Forwarded-For from an untrusted peer changes nothing.
            let statuses = try await signups(AuthClient(client: client), count: 21, forwardedFor: { "203.0.113.\($0)" })
            #expect(statuses.prefix(20).allSatisfy { $0 == .created })
            #expect(statuses.last == .tooManyRequests)
        }
    }

    @Test func loginsPerIPAreLimited() async throws {
        // A fixed clock keeps all 31 in one window (a real clock may cross a minute boundary).
        try await TestApp.run(.sqlite, clock: ManualClock(), setup: .live) { client, _ in
            let auth = AuthClient(client: client)
            var statuses: [HTTPResponse.Status] = []
            // Different (unknown) accounts, so only the per-IP limit (30 a minute) can answer 429.
            for index in 0..<31 {
                statuses.append(try await auth.login("nobody\(index)@example.com", "whatever").status)
            }
            #expect(statuses.prefix(30).allSatisfy { $0 == .unauthorized })
            #expect(statuses.last == .tooManyRequests)
        }
    }

    /// 1,000 logins, each claiming another address in `X-Forwarded-For` from an untrusted peer:
    /// all count against the peer, so only the first 30 of the minute are even checked.
    @Test func aThousandSpoofedForwardedAddressesShareOneLimit() async throws {
        try await TestApp.run(.sqlite, clock: ManualClock(), setup: .live) { client, _ in
            var answered: [HTTPResponse.Status: Int] = [:]
            for index in 0..<1_000 {
                let headers: HTTPFields = [
                    .contentType: "application/json", HTTPField.Name("X-Forwarded-For")!: "198.18.\(index / 256).\(index % 256)",
                ]
                let response = try await client.execute(
                    uri: "/v1/auth/login", method: .post, headers: headers,
                    body: jsonBody(#"{"email": "nobody\#(index)@example.com", "password": "whatever"}"#))
                answered[response.status, default: 0] += 1
            }
            #expect(answered == [.unauthorized: 30, .tooManyRequests: 970])
        }
    }

    @Test func behindATrustedProxyTheForwardedAddressCounts() async throws {
        try await TestApp.run(.sqlite, setup: .live, adjust: { $0.trustedProxies = ["127.0.0.1", "::1"] }) { client, _ in
            let statuses = try await signups(AuthClient(client: client), count: 25, forwardedFor: { "198.51.100.7, 203.0.113.\($0)" })
            #expect(statuses.allSatisfy { $0 == .created })
        }
    }

    @Test func ipLimitsOffLiftsThem() async throws {
        try await TestApp.run(.sqlite, setup: .live, adjust: { $0.ipLimits = false }) { client, _ in
            let statuses = try await signups(AuthClient(client: client), count: 25)
            #expect(statuses.allSatisfy { $0 == .created })
        }
    }
}
