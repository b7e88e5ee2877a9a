import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// A request's body is read whole in its connection's pipeline before the application sees its
/// head (`WholeBodyHandler`): each body goes with its own head, whatever the reads it came in,
/// and within its route's limit.
@Suite struct WholeBodyTests {
    static let login = #"{"email": "nobody@example.com", "password": "not the one"}"#

    /// A raw HTTP/1.1 request on a kept-alive connection whose body is sent in `chunks`.
    static func chunked(_ method: String, _ path: String, _ chunks: [String]) -> [UInt8] {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        for chunk in chunks { text += String(chunk.utf8.count, radix: 16) + "\r\n" + chunk + "\r\n" }
        return Array((text + "0\r\n\r\n").utf8)
    }

    @Test func bodiesInPiecesAndPipelinedGoEachWithItsOwnHead() async throws {
        try await TestApp.run(.sqlite, setup: .live) { client, _ in
            let port = try #require(client.port)
            // A body in three chunks, each written on its own: put together in order (a login the
            // server reads as valid JSON, refused as a wrong password).
            let pieces = Self.chunked("POST", "/v1/auth/login", [String(Self.login.prefix(10)), String(Self.login.dropFirst(10).prefix(20)), String(Self.login.dropFirst(30))])
            let blankLine = Array("\r\n\r\n".utf8)
            let head = try #require(pieces.indices.first { Array(pieces[$0...].prefix(4)) == blankLine }) + 4
            let cut = [0, head + 8, head + 30, pieces.count]
            var steps: [(bytes: [UInt8], pause: Duration, answers: Bool)] = (0..<3).map { index in
                (Array(pieces[cut[index]..<cut[index + 1]]), .milliseconds(100), index == 2)
            }
            // Then three requests in one write: a body that is not JSON, no body, a login. Each
            // answer is its own request's.
            let pipelined =
                LastByteRace.request("POST", "/v1/auth/login", json: "{not json", keepAlive: true)
                + LastByteRace.request("GET", "/health", keepAlive: true)
                + LastByteRace.request("POST", "/v1/auth/login", json: Self.login, keepAlive: true)
            steps += [(pipelined, .zero, true), ([], .zero, true), ([], .zero, true)]
            let answers = try await LastByteRace.keptAlive(port: port, steps)
            #expect(answers.map(\.status) == [401, 400, 200, 401], "\(answers.map(\.status))")
            #expect(answers.first?.error?.code == .invalidCredentials, "\(answers.first.map { String(decoding: $0.body, as: UTF8.self) } ?? "")")
            #expect(answers.dropFirst().first?.error?.code == .invalidRequest)
        }
    }

    @Test func aBodyThatGrowsPastItsLimitIs413AndItsRestIsDropped() async throws {
        try await TestApp.run(.sqlite, setup: .live, adjust: { $0.maxBodyBytes = 2_048 }) { client, _ in
            let port = try #require(client.port)
            let half = String(repeating: "a", count: 1_500)
            // No length declared: the chunks are counted as they come.
            let grown = Self.chunked("POST", "/v1/auth/login", [#"{"email": ""# + half, half + #"@example.com"}"#])
            let answers = try await LastByteRace.keptAlive(
                port: port,
                [(grown, .zero, true), (LastByteRace.request("POST", "/v1/auth/login", json: Self.login, keepAlive: true), .zero, true)])
            #expect(answers.map(\.status) == [413, 401], "\(answers.map(\.status))")
            #expect(answers.first?.error?.code == .payloadTooLarge)
            #expect(answers.first?.error?.message == "The request body is larger than the limit of 2048 bytes.")
            // A payment source's route takes more than the general limit (`BodyLimits`): read, and
            // refused for what it says, not for its size.
            let notice = #"{"signedPayload": ""# + String(repeating: "a", count: 4_000) + #""}"#
            let apple = try await LastByteRace.keptAlive(
                port: port, [(LastByteRace.request("POST", Endpoints.appStoreNotification.path.template, json: notice, keepAlive: true), .zero, true)])
            #expect(apple.map(\.status) == [400], "\(apple.map { String(decoding: $0.body, as: UTF8.self) })")
        }
    }
}
