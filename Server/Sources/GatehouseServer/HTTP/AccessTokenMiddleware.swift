import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// Verifies `Authorization: Bearer <access token>` for the routes behind it, checks that its
/// session is still live and its account enabled (revocation takes effect at once), and
/// records who it is; `AuthenticatedContext` then refuses requests without one.
struct AccessTokenMiddleware: RouterMiddleware {
    typealias Context = GatehouseRequestContext
    let authenticator: Authenticator

    func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        guard let token = request.bearerToken else { throw GatehouseError.unauthorized() }
        var context = context
        context.signedIn = try await authenticator.signedIn(token: token)
        return try await next(request, context)
    }
}

extension Request {
    /// The user of an optional Bearer token, as `AccessTokenMiddleware` checks it; `nil` without
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
