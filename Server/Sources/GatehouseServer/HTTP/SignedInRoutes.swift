import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// The routes that need a signed-in user. Each handler is mounted on the router behind the
/// access-token check: `Authorization: Bearer <access token>` verified, its session still live
/// and its account enabled (revocation takes effect at once), then the handler is called with an
/// `AuthenticatedContext`, which cannot be made without that check, so a handler behind it cannot
/// forget it.
///
/// The check runs inside the route's own handler, after the router has matched, as a group's
/// middleware did, but without a middleware layer and a context-transforming responder around
/// every signed-in route: each was a chain of calls through Hummingbird's responders that Swift ran
/// as hops through the event loop's job queue (issue 61 step 22, BENCHMARKS.md).
struct SignedInRoutes {
    let router: Router<GatehouseRequestContext>
    let authenticator: Authenticator

    /// Mounts `handler` at `endpoint`'s method and path behind the access-token check.
    @discardableResult
    func on<Body, Answer>(
        _ endpoint: Endpoint<Body, Answer>, use handler: @escaping @Sendable (Request, AuthenticatedContext) async throws -> Response
    ) -> Self {
        let authenticator = self.authenticator
        let checked: @Sendable (Request, GatehouseRequestContext) async throws -> Response = { request, context in
            guard let signedIn = try await request.optionalSignedIn(authenticator) else { throw GatehouseError.unauthorized() }
            return try await handler(request, AuthenticatedContext(context, signedIn: signedIn))
        }
        router.on(endpoint, use: checked)
        return self
    }
}

extension Request {
    /// The user of an optional Bearer token, as `SignedInRoutes` checks it; `nil` without
    /// one (a guest, or a call made before any account exists). A bad token is still refused.
    func optionalUser(_ authenticator: Authenticator) async throws -> User? {
        try await optionalSignedIn(authenticator)?.user
    }

    /// Who an optional Bearer token signs in, with its session; `nil` without one.
    func optionalSignedIn(_ authenticator: Authenticator) async throws -> SignedIn? {
        guard let token = bearerToken else { return nil }
        return try await authenticator.signedIn(token: token)
    }

    /// The token of an `Authorization: Bearer …` header.
    var bearerToken: String? {
        guard let header = headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        // HTTP's optional whitespace is spaces and tabs. Trimmed on the bytes: Foundation's
        // `trimmingCharacters(in:)` went through NSString and was 7 % of a `/v1/me` (BENCHMARKS.md).
        var token = parts[1].utf8[...]
        while let first = token.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { token = token.dropFirst() }
        while let last = token.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { token = token.dropLast() }
        return token.isEmpty ? nil : String(decoding: token, as: UTF8.self)
    }
}
