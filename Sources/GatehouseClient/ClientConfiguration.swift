import Foundation
import GatehouseWire

/// Where the SDK talks to and how. Validated on creation: a Gatehouse server is reached over
/// HTTPS, except on loopback during development (decision 26).
public struct ClientConfiguration: Sendable, Equatable {
    /// The server's base URL, e.g. `https://auth.example.com`.
    public let baseURL: URL
    /// Refresh the access token when less than this is left of it.
    public var refreshAhead: TimeInterval = 60
    /// Silent restore on launch tries this many times before settling (OKLah US-ONB-003).
    public var restoreAttempts = 3
    /// A call whose refresh fails for want of network retries it this many more times.
    public var networkRetries = 2
    /// The first wait between retries; each next one doubles.
    public var retryDelay: TimeInterval = 0.5

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
    /// The server's structured details (a gate decision, a merge token, attempts left).
    public var details: [String: JSONValue]?
    /// Every rule that failed, e.g. for `weak_password`.
    public var reasons: [String]?
    /// The HTTP status, when the server answered.
    public var status: Int?

    public init(
        code: ErrorCode, message: String, retryAfter: Int? = nil, details: [String: JSONValue]? = nil, reasons: [String]? = nil,
        status: Int? = nil
    ) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.details = details
        self.reasons = reasons
        self.status = status
    }

    /// The server could not be reached; nothing changed on the device.
    public var isNetworkFailure: Bool { code == .networkUnavailable }
}

extension ErrorCode {
    /// SDK-local: the server could not be reached.
    public static let networkUnavailable: ErrorCode = "network_unavailable"
    /// SDK-local: the call needs a signed-in person.
    public static let notSignedIn: ErrorCode = "not_signed_in"
    /// SDK-local: the server's answer was not what the contract says.
    public static let invalidResponse: ErrorCode = "invalid_response"
}
