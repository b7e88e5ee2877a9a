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
    /// The longest wait between two retries, however many failed before.
    public var maxRetryDelay: TimeInterval = 60
    /// After a refresh that failed without the server ending the session (no network, a 500),
    /// the SDK refreshes again in the background this many times, with backoff, until one
    /// succeeds; a call that needs a token starts again after that. 0 turns the background
    /// retries off.
    public var refreshRetries = 20
    /// Where the links in Gatehouse's mails point (the server's `GATEHOUSE_PUBLIC_URL`), when it
    /// is not `baseURL`. An app with associated domains for it gets those links as universal
    /// links; `handle(url:)` accepts them.
    public var publicURL: URL?
    /// The app's own URLs the hosted magic-link page opens with `?token=` added: the preset's
    /// `open_app_url` (e.g. `hannahhealth://auth`) and any `redirect_to` the app passes to
    /// `sendMagicLink`. `handle(url:)` also knows `open_app_url` from a loaded configuration;
    /// listing it here makes a link work before that.
    public var appLinks: [URL] = []
    /// The app's own words for the first launch with no network (decision 25), before the
    /// server's copy was ever loaded: `BundledCopy.preset("handz")` for a shipped preset. The
    /// server's copy replaces it once `/v1/config` has been read; without either, the SDK shows
    /// plain neutral English.
    public var bundledCopy: [String: String] = [:]

    /// Makes a configuration for a URL read at run time, with the default tunables. Throws
    /// ``GatehouseClientError`` with code `invalid_request` when the URL is not absolute or not
    /// `https` (`http` is accepted for loopback only).
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

    /// For a URL the app writes down itself, where it keeps its settings (a global, a property):
    /// a URL that is not valid for `init(baseURL:)` stops the app at once, as a programmer's
    /// mistake, instead of making every use site handle an error.
    ///
    /// ```swift
    /// let configuration = ClientConfiguration("https://auth.example.com")
    /// ```
    public init(_ baseURL: StaticString) {
        guard let url = URL(string: "\(baseURL)") else { preconditionFailure("Not a URL: \(baseURL)") }
        do {
            try self.init(baseURL: url)
        } catch {
            preconditionFailure(error.message)
        }
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

/// Every failure the SDK reports: the server's code and message, or a local one. Its
/// `localizedDescription` is the message, so `Text(error.localizedDescription)` shows the
/// server's words.
public struct GatehouseClientError: Error, LocalizedError, Sendable, Equatable {
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

    /// Makes an error, for previews, tests and transport doubles; the SDK makes its own from the
    /// server's answers.
    ///
    /// - Parameters:
    ///   - code: The machine-readable code (an `ErrorCode` constant, or a new one as a string).
    ///   - message: The words shown to the person, as `localizedDescription`.
    ///   - retryAfter: Seconds to wait before retrying; nil when there is no advice.
    ///   - details: Structured details, as the server sends under `details`.
    ///   - reasons: Every rule that failed (for `weak_password`).
    ///   - status: The HTTP status; nil for an error made on the device.
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

    /// The message (the server's, in the preset's words), for `localizedDescription`.
    public var errorDescription: String? { message }
}

/// The codes the SDK reports itself, never sent by the server.
extension ErrorCode {
    /// SDK-local: the server could not be reached.
    public static let networkUnavailable: ErrorCode = "network_unavailable"
    /// SDK-local: the call needs a signed-in person.
    public static let notSignedIn: ErrorCode = "not_signed_in"
    /// SDK-local: the server's answer was not what the contract says.
    public static let invalidResponse: ErrorCode = "invalid_response"
    /// SDK-local: a gate was asked for before the preset's configuration was ever loaded, and it
    /// cannot be loaded now.
    public static let configurationUnavailable: ErrorCode = "configuration_unavailable"
    /// SDK-local: the person closed the device's passkey sheet; nothing was sent. Show nothing.
    public static let passkeyCancelled: ErrorCode = "passkey_cancelled"
    /// SDK-local: the device could not make or use a passkey (none saved for this app, no
    /// passcode set, the association file not yet fetched); nothing was sent.
    public static let passkeyUnavailable: ErrorCode = "passkey_unavailable"
}
