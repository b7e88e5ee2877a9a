import Foundation
import GatehouseWire

/// Where the SDK talks to and how. Validated on creation: a Gatehouse server is reached over
/// HTTPS, except on loopback during development (decision 26).
public struct ClientConfiguration: Sendable, Equatable {
    /// The server's base URL, e.g. `https://auth.example.com`.
    public let baseURL: URL

    public init(baseURL: URL) throws(GatehouseClientError) {
        guard let scheme = baseURL.scheme?.lowercased(), let host = baseURL.host, !host.isEmpty else {
            throw GatehouseClientError(code: .invalidRequest, message: "The Gatehouse URL must be absolute, like https://auth.example.com.")
        }
        switch scheme {
        case "https":
            break
        case "http" where Self.isLoopback(host):
            break
        case "http":
            throw GatehouseClientError(
                code: .invalidRequest, message: "The Gatehouse URL must use https:// (http:// is allowed only for localhost).")
        default:
            throw GatehouseClientError(code: .invalidRequest, message: "The Gatehouse URL must use https://.")
        }
        self.baseURL = baseURL
    }

    /// `localhost`, `127.0.0.0/8` and `::1`.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        if bare == "localhost" || bare == "::1" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) else { return false }
        return octets[0] == "127"
    }
}

/// Every failure the SDK reports: the server's code and message, or a local one.
public struct GatehouseClientError: Error, Sendable, Equatable {
    /// Open: the server may add codes; compare with the `ErrorCode` constants.
    public var code: ErrorCode
    /// The server's message, fit to show a person.
    public var message: String
    /// Seconds to wait before retrying, when the server said so.
    public var retryAfter: Int?

    public init(code: ErrorCode, message: String, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }
}
