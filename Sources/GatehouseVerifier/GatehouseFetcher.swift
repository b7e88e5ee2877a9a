#if Verifier
import AsyncHTTPClient
import Foundation
import NIOCore

/// How the verifier reads Gatehouse's public documents (`/.well-known/jwks.json`,
/// `/v1/config`). The default uses AsyncHTTPClient with a short timeout.
public struct GatehouseFetcher: Sendable {
    /// Reads the body at a URL, throwing when the request fails.
    public let get: @Sendable (URL) async throws -> Data

    /// Makes a fetcher from your own closure, e.g. one that answers fixed documents in tests.
    public init(get: @escaping @Sendable (URL) async throws -> Data) {
        self.get = get
    }

    /// Thrown by ``GatehouseFetcher/http(_:timeout:)`` when Gatehouse answers with a status
    /// outside 200–299.
    public struct BadStatus: Error, CustomStringConvertible {
        /// The HTTP status code Gatehouse answered with.
        public var status: UInt
        /// Makes the error for the `status` Gatehouse answered with.
        public init(status: UInt) { self.status = status }
        /// A short sentence with the status, for logs.
        public var description: String { "Gatehouse answered HTTP \(status)" }
    }

    /// GET with `client`, failing on a non-2xx answer or after `timeout`; bodies up to 1 MiB.
    public static func http(_ client: HTTPClient = .shared, timeout: TimeAmount = .seconds(5)) -> GatehouseFetcher {
        GatehouseFetcher { url in
            var request = HTTPClientRequest(url: url.absoluteString)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await client.execute(request, timeout: timeout)
            guard (200..<300).contains(response.status.code) else { throw BadStatus(status: response.status.code) }
            return Data(buffer: try await response.body.collect(upTo: 1 << 20))
        }
    }
}
#endif
