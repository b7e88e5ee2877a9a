import Foundation
import GatehouseCore
import GatehouseWire

// The client's calls: one contract call, its answer decoded, a 401 refreshed once.
extension Gatehouse {
    enum Auth {
        /// No token.
        case none
        /// A token when signed in, none otherwise (guest snapshot, analytics).
        case optional
        /// Signed in, or `not_signed_in`.
        case required
    }

    /// One contract call with a body, decoded as the endpoint's answer; a 401 refreshes once and
    /// retries once. `parameters` fill the path's `{parameter}`s in order.
    func call<Body: Encodable, Response: Decodable>(
        _ endpoint: Endpoint<Body, Response>, _ parameters: String..., body: Body, auth: Auth, headers: [String: String] = [:]
    ) async throws(GatehouseClientError) -> Response {
        try Self.decode(await exchange(endpoint.method, endpoint.path.expand(parameters), body: body, auth: auth, headers: headers))
    }

    /// One contract call without a body, decoded as the endpoint's answer.
    func call<Response: Decodable>(
        _ endpoint: Endpoint<NoBody, Response>, _ parameters: String..., auth: Auth, headers: [String: String] = [:]
    ) async throws(GatehouseClientError) -> Response {
        try Self.decode(await exchange(endpoint.method, endpoint.path.expand(parameters), body: nil, auth: auth, headers: headers))
    }

    /// A contract call with a body and nothing to read in the answer (202, 204).
    func call<Body: Encodable>(
        _ endpoint: Endpoint<Body, NoContent>, _ parameters: String..., body: Body, auth: Auth, headers: [String: String] = [:]
    ) async throws(GatehouseClientError) {
        _ = try await exchange(endpoint.method, endpoint.path.expand(parameters), body: body, auth: auth, headers: headers)
    }

    /// A contract call without a body and nothing to read in the answer.
    func call(_ endpoint: Endpoint<NoBody, NoContent>, _ parameters: String..., auth: Auth, headers: [String: String] = [:])
        async throws(GatehouseClientError)
    {
        _ = try await exchange(endpoint.method, endpoint.path.expand(parameters), body: nil, auth: auth, headers: headers)
    }

    /// The answer as the server sent it, for a caller that keeps the bytes (the export, the
    /// cached configuration) or does not read them.
    func exchange<Response>(_ endpoint: Endpoint<NoBody, Response>, auth: Auth, headers: [String: String] = [:])
        async throws(GatehouseClientError) -> HTTPResponse
    {
        try await exchange(endpoint.method, endpoint.path.expand(), body: nil, auth: auth, headers: headers)
    }

    func exchange<Body: Encodable, Response>(_ endpoint: Endpoint<Body, Response>, body: Body, auth: Auth)
        async throws(GatehouseClientError) -> HTTPResponse
    {
        try await exchange(endpoint.method, endpoint.path.expand(), body: body, auth: auth)
    }

    static func decode<Response: Decodable>(_ response: HTTPResponse) throws(GatehouseClientError) -> Response {
        guard let value = try? JSONDecoder().decode(Response.self, from: response.body) else { throw invalidResponse }
        return value
    }

    private func exchange(_ method: HTTPMethodName, _ path: String, body: (any Encodable)?, auth: Auth, headers: [String: String] = [:])
        async throws(GatehouseClientError) -> HTTPResponse
    {
        var token: String?
        if auth != .none { loadSavedSession() }
        switch auth {
        case .none: break
        case .optional: if stored != nil { token = try await validAccessToken() }
        case .required: token = try await validAccessToken()
        }
        var response = try await send(method, path, body: body, token: token, headers: headers)
        if response.status == 401, let used = token, [.unauthorized, .tokenExpired].contains(Self.error(from: response).code) {
            // The token was refused (expired early, keys rotated, clock skew): refresh once, retry once.
            switch await refresh(replacing: used) {
            case .success(let fresh):
                response = try await send(method, path, body: body, token: fresh, headers: headers)
            case .failure(let error):
                throw error
            }
        }
        // 304 answers a conditional request (`If-None-Match`): the caller's copy is current.
        let notModified = response.status == 304 && headers["If-None-Match"] != nil
        guard (200..<300).contains(response.status) || notModified else { throw Self.error(from: response) }
        return response
    }

    /// The refresh's exchange: no token and no retry; the caller reads the answer itself.
    func send<Body: Encodable, Response>(_ endpoint: Endpoint<Body, Response>, body: Body)
        async throws(GatehouseClientError) -> HTTPResponse
    {
        try await send(endpoint.method, endpoint.path.expand(), body: body, token: nil)
    }

    /// The raw exchange; throws `network_unavailable` when the server was not reached.
    private func send(_ method: HTTPMethodName, _ path: String, body: (any Encodable)?, token: String?, headers extra: [String: String] = [:])
        async throws(GatehouseClientError) -> HTTPResponse
    {
        var headers = extra
        headers["Accept"] = "application/json"
        var data: Data?
        if let body {
            data = try? JSONEncoder().encode(body)
            headers["Content-Type"] = "application/json"
        }
        if let token { headers["Authorization"] = "Bearer \(token)" }
        let url = URL(string: path, relativeTo: configuration.baseURL)?.absoluteURL ?? configuration.baseURL
        do {
            return try await transport.send(HTTPRequest(method: method.rawValue, url: url, headers: headers, body: data))
        } catch {
            throw GatehouseClientError(code: .networkUnavailable, message: "You're offline. Check your connection and try again.")
        }
    }

    static func error(from response: HTTPResponse) -> GatehouseClientError {
        if let body = try? JSONDecoder().decode(ErrorBody.self, from: response.body) {
            let retry = body.error.retryAfter ?? response.headers["retry-after"].flatMap { Int($0) }
            return GatehouseClientError(
                code: body.error.code, message: body.error.message, retryAfter: retry, details: body.error.details,
                reasons: body.error.reasons, status: response.status)
        }
        return GatehouseClientError(
            code: response.status >= 500 ? .internalError : .invalidResponse,
            message: "Something went wrong on our end. Please try again in a few minutes.", status: response.status)
    }

    static let notSignedIn = GatehouseClientError(code: .notSignedIn, message: "Please sign in first.")
    static let invalidResponse = GatehouseClientError(code: .invalidResponse, message: "The server's answer could not be read.")
}
