import Foundation
import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird
import NIOCore

/// The OpenID provider's machine-facing routes (issue 45): discovery, the token endpoint,
/// userinfo, revocation and introspection (forms in, RFC 6749 errors out), and the app's own
/// calls beside them: the hand-over and the person's connected clients.
struct OAuthController {
    static let operations = OAuthRoutes.all.map(\.operation)

    let openID: OpenIDService
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>, signedIn: SignedInRoutes) {
        router.on(OAuthRoutes.discovery, use: discovery)
        router.on(OAuthRoutes.token, use: token)
        router.on(OAuthRoutes.userinfo, use: userinfo)
        router.on(OAuthRoutes.userinfoPost, use: userinfo)
        router.on(OAuthRoutes.revoke, use: revoke)
        router.on(OAuthRoutes.introspect, use: introspect)
        signedIn.on(Endpoints.handover, use: handover)
        signedIn.on(Endpoints.connections, use: connections)
        signedIn.on(Endpoints.revokeConnection, use: revokeConnection)
    }

    /// OpenID Connect Discovery 1.0 and RFC 8414, from the issuer (the public URL).
    var document: JSONValue {
        let base = openID.issuer
        func list(_ values: [String]) -> JSONValue { .array(values.map(JSONValue.string)) }
        return .object([
            "issuer": .string(base), "authorization_endpoint": .string(base + OAuthRoutes.authorize.path),
            "token_endpoint": .string(base + OAuthRoutes.token.path), "userinfo_endpoint": .string(base + OAuthRoutes.userinfo.path),
            "jwks_uri": .string(base + Endpoints.jwks.path.template), "revocation_endpoint": .string(base + OAuthRoutes.revoke.path),
            "introspection_endpoint": .string(base + OAuthRoutes.introspect.path),
            "end_session_endpoint": .string(base + OAuthRoutes.logout.path),
            "response_types_supported": list(["code"]), "response_modes_supported": list(["query"]),
            "grant_types_supported": list(["authorization_code", "refresh_token", "client_credentials"]),
            "subject_types_supported": list(["public"]), "id_token_signing_alg_values_supported": list([KeyRing.algorithm]),
            "scopes_supported": list(OAuthScope.allCases.map(\.rawValue)),
            "token_endpoint_auth_methods_supported": list(["client_secret_basic", "client_secret_post", "none"]),
            "revocation_endpoint_auth_methods_supported": list(["client_secret_basic", "client_secret_post", "none"]),
            "introspection_endpoint_auth_methods_supported": list(["client_secret_basic", "client_secret_post"]),
            "code_challenge_methods_supported": list(["S256"]),
            "claims_supported": list(["sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "amr", "acr", "at_hash", "sid", "email", "email_verified", "name"]),
            "acr_values_supported": list([AssuranceLevel.aal1.rawValue, AssuranceLevel.aal2.rawValue]), "prompt_values_supported": list(["none", "login", "consent"]),
            "authorization_response_iss_parameter_supported": .bool(true), "request_parameter_supported": .bool(false),
            "request_uri_parameter_supported": .bool(false),
        ])
    }

    @Sendable func discovery(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(document, headers: [.cacheControl: "public, max-age=3600"])
    }

    @Sendable func token(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await answering {
            let (form, credentials) = try await read(request)
            return try JSONBody.response(
                try await openID.token(form, credentials: credentials, caller: input.client(request, context)),
                headers: [.cacheControl: "no-store", .pragma: "no-cache"])
        }
    }

    @Sendable func userinfo(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await answering {
            let header = request.headers[.authorization] ?? ""
            let bearer = header.lowercased().hasPrefix("bearer ") ? String(header.dropFirst(7)) : nil
            return try JSONBody.response(try await openID.userinfo(bearer: bearer), headers: [.cacheControl: "no-store"])
        }
    }

    @Sendable func revoke(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await answering {
            let (form, credentials) = try await read(request)
            try await openID.revoke(form, credentials: credentials, caller: input.client(request, context))
            return Response(status: .ok, headers: [.cacheControl: "no-store"])
        }
    }

    @Sendable func introspect(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await answering {
            let (form, credentials) = try await read(request)
            return try JSONBody.response(
                try await openID.introspect(form, credentials: credentials, caller: input.client(request, context)), headers: [.cacheControl: "no-store"])
        }
    }

    @Sendable func handover(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(HandoverRequest.self, request)
        return try JSONBody.response(
            try await openID.handover(context.signedIn, request: body, client: input.client(request, context)), headers: noStore)
    }

    @Sendable func connections(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try JSONBody.response(try await openID.connections(context.signedIn), headers: noStore)
    }

    @Sendable func revokeConnection(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await openID.revokeConnection(context.signedIn, clientID: try context.parameters.require("client"), client: input.client(request, context))
        return JSONBody.empty()
    }

    // MARK: Plumbing

    /// A form body (`application/x-www-form-urlencoded`, RFC 6749 §3.2) and the client's
    /// credentials: HTTP Basic (`client_secret_basic`, each part form-encoded) or the form's
    /// `client_id` and `client_secret`. Both at once is refused (§2.3.1).
    private func read(_ request: Request) async throws -> ([String: String], ClientCredentials) {
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
            throw OAuthProtocolError.invalidRequest("The body must be application/x-www-form-urlencoded.")
        }
        let (form, repeated) = PagesController.parseFormNamingRepeats(String(buffer: try await request.collectBody(limit: input.bodyLimit)))
        // RFC 6749 §3.1, §3.2: a parameter sent twice is refused, not read one way or the other.
        if let name = repeated.sorted().first { throw OAuthProtocolError.invalidRequest("\(name) was sent more than once.") }
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("basic ") else {
            return (form, ClientCredentials(clientID: form["client_id"], secret: form["client_secret"]))
        }
        guard form["client_secret"] == nil, let decoded = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
            let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { throw OAuthProtocolError.invalidClient }
        func decode(_ part: Substring) -> String? { String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
        guard let id = decode(text[..<colon]), let secret = decode(text[text.index(after: colon)...]),
            form["client_id"].map({ $0 == id }) ?? true
        else { throw OAuthProtocolError.invalidClient }
        return (form, ClientCredentials(clientID: id, secret: secret))
    }

    /// RFC 6749's error shape for `OAuthProtocolError`; `WWW-Authenticate` on a 401.
    private func answering(_ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch let error as OAuthProtocolError {
            var headers: HTTPFields = [.cacheControl: "no-store"]
            // RFC 6750 §3 for the bearer side, RFC 6749 §5.2 for client authentication.
            switch (error.status, error.error) {
            case (401, "invalid_token"): headers[.wwwAuthenticate] = "Bearer error=\"invalid_token\""
            case (401, "invalid_request"): headers[.wwwAuthenticate] = "Bearer"
            case (403, "insufficient_scope"): headers[.wwwAuthenticate] = "Bearer error=\"insufficient_scope\", scope=\"openid\""
            case (401, _): headers[.wwwAuthenticate] = "Basic realm=\"gatehouse\""
            default: break
            }
            if let retry = error.retryAfter { headers[.retryAfter] = String(retry) }
            return try JSONBody.response(
                ["error": error.error, "error_description": error.description],
                status: HTTPResponse.Status(code: error.status), headers: headers)
        }
    }
}

extension HTTPField.Name {
    static let pragma = HTTPField.Name("Pragma")!
}
