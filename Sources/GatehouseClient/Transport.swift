import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP exchange, as the SDK needs it.
public struct HTTPRequest: Sendable, Equatable {
    /// The HTTP method, uppercased (`GET`, `POST`, …).
    public var method: String
    /// The absolute URL: the contract's path resolved against ``ClientConfiguration/baseURL``.
    public var url: URL
    /// Header fields by name: `Accept`, and `Content-Type`, `Authorization` (the bearer access
    /// token: keep it out of logs) and `Idempotency-Key` when they apply.
    public var headers: [String: String]
    /// The JSON body; nil for a call without one.
    public var body: Data?

    /// Makes a request, e.g. to check what a transport double was sent.
    public init(method: String, url: URL, headers: [String: String] = [:], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// The server's answer to an ``HTTPRequest``, whatever its status.
public struct HTTPResponse: Sendable, Equatable {
    /// The HTTP status code. Outside 200–299 the call throws ``GatehouseClientError`` with the
    /// error the body carries.
    public var status: Int
    /// Header fields, with lowercased names: the SDK looks up `retry-after` as written.
    public var headers: [String: String]
    /// The body's bytes; empty when there is none.
    public var body: Data

    /// Makes a response, e.g. a transport double's canned answer.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// How requests reach the server. Throwing means the server was not reached (no network, a
/// timeout); any answer, even a 500, is a response.
public protocol HTTPTransport: Sendable {
    /// Sends the request and returns the server's answer, whatever its status. Throw only when
    /// the server was not reached; the call then fails with `network_unavailable`.
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
}

/// The default transport: `URLSession`, no cookies, no cache.
public struct URLSessionTransport: HTTPTransport {
    let session: URLSession

    /// Makes a transport on an ephemeral `URLSession`. `timeout` is in seconds, per request
    /// (`timeoutIntervalForRequest`).
    public init(timeout: TimeInterval = 20) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    /// Sends the request with `URLSession` and lowercases the answer's header names; throws
    /// `URLSession`'s error when the server was not reached.
    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = request.body
        let (data, response) = try await session.data(for: urlRequest)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return HTTPResponse(status: http.statusCode, headers: headers, body: data)
    }
}
