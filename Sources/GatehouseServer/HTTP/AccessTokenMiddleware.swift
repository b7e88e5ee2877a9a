import GatehouseCore
import HTTPTypes
import Hummingbird

/// Verifies `Authorization: Bearer <access token>` for the routes behind it and records who
/// it belongs to; `AuthenticatedContext` then refuses requests without one.
struct AccessTokenMiddleware: RouterMiddleware {
    typealias Context = GatehouseRequestContext
    let tokens: TokenService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let token = request.bearerToken else { throw GatehouseError.unauthorized() }
        var context = context
        context.identity = try await tokens.verify(token)
        return try await next(request, context)
    }
}

extension Request {
    /// The token of an `Authorization: Bearer …` header.
    var bearerToken: String? {
        guard let header = headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}
