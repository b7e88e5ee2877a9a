import Crypto
import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// Issue 47: `GET /v1/config` changes only with the preset, so it is encoded once and served with
/// an `ETag`; a request naming that tag in `If-None-Match` gets 304 and no body, and the SDK's
/// cached configuration revalidates that way.
@Suite struct ConfigurationETagTests {
    /// The tag is the served bytes' SHA-256; every form RFC 9110 allows in `If-None-Match`
    /// matches it, another tag does not, and a preset whose copy changed has another tag.
    @Test func theDocumentCarriesItsTagAndA304AnswersIt() async throws {
        let first = Mutex<(etag: String, body: Data)?>(nil)
        try await TestApp.run(.sqlite, preset: "handz") { client, _ in
            let response = try await client.execute(uri: "/v1/config", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.cacheControl] == "public, max-age=60")
            let body = Data(response.body.readableBytesView)
            let etag = try #require(response.headers[.eTag])
            #expect(etag == "\"" + Data(SHA256.hash(data: body)).base64URLEncoded + "\"")
            #expect(try JSONDecoder().decode(PublicConfiguration.self, from: body).preset == "handz")
            first.withLock { $0 = (etag, body) }

            for condition in [etag, "W/\(etag)", "\"other\", \(etag)", "*"] {
                let again = try await client.execute(uri: "/v1/config", method: .get, headers: [.ifNoneMatch: condition])
                #expect(again.status == .notModified, "If-None-Match: \(condition)")
                #expect(again.headers[.eTag] == etag)
                #expect(again.body.readableBytes == 0)
            }
            let other = try await client.execute(uri: "/v1/config", method: .get, headers: [.ifNoneMatch: "\"other\""])
            #expect(other.status == .ok)
            #expect(Data(other.body.readableBytesView) == body)
        }
        let (etag, body) = try #require(first.withLock { $0 })
        try await TestApp.run(.sqlite, preset: "handz", adjust: { $0.preset.copy["conversion.title"] = "Keep this (changed)" }) { client, _ in
            let stale = try await client.execute(uri: "/v1/config", method: .get, headers: [.ifNoneMatch: etag])
            #expect(stale.status == .ok)
            #expect(stale.headers[.eTag] != etag)
            #expect(Data(stale.body.readableBytesView) != body)
            #expect(try JSONDecoder().decode(PublicConfiguration.self, from: Data(stale.body.readableBytesView)).copy["conversion.title"] == "Keep this (changed)")
        }
    }

    /// The SDK keeps the tag beside the document: a second load, and the next launch's, ask with
    /// `If-None-Match` and keep their copy on the 304; after the preset's copy changes, the same
    /// question gets the new document and its words reach the app.
    @Test func theSDKRevalidatesItsCachedConfiguration() async throws {
        let device = try TestDevice()
        defer { device.remove() }
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, _ in
            let port = try #require(server.port)
            let client = try device.launch(port: port)
            let loaded = try await client.loadConfiguration()
            _ = try await client.loadConfiguration()
            #expect(try await client.loadConfiguration() == loaded)
            let relaunched = try device.launch(port: port)
            #expect(try await relaunched.loadConfiguration() == loaded)
            #expect(device.transport.answers == ["GET /v1/config 200", "GET /v1/config 304", "GET /v1/config 304", "GET /v1/config 304"])
            #expect(await relaunched.text("conversion.title", "") == loaded.copy["conversion.title"])
        }
        device.transport.reset()
        try await TestApp.run(.sqlite, preset: "handz", setup: .live, adjust: { $0.preset.copy["conversion.title"] = "Keep this (changed)" }) { server, _ in
            let port = try #require(server.port)
            let client = try device.launch(port: port)
            let changed = try await client.loadConfiguration()
            #expect(changed.copy["conversion.title"] == "Keep this (changed)")
            #expect(await client.text("conversion.title", "") == "Keep this (changed)")
            _ = try await client.loadConfiguration()
            #expect(device.transport.answers == ["GET /v1/config 200", "GET /v1/config 304"])
        }
    }
}
