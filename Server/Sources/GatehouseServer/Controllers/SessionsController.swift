import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/auth/refresh`, `/v1/auth/logout` and `/v1/auth/sessions`.
struct SessionsController {
    let sessions: SessionService
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>, signedIn: SignedInRoutes) {
        router.on(Endpoints.refresh, use: refresh)
        signedIn.on(Endpoints.logOut, use: logout)
        signedIn.on(Endpoints.sessions, use: list)
        signedIn.on(Endpoints.revokeSession, use: revoke)
    }

    @Sendable func refresh(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(RefreshRequest.self, request)
        return try JSONBody.response(try await sessions.refresh(body.refreshToken, client: input.client(request, context)), headers: noStore)
    }

    @Sendable func logout(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(LogoutRequest.self, request)
        let scope = body.scope ?? .local
        try await sessions.logout(context.identity, scope: scope, client: input.client(request, context))
        return JSONBody.empty()
    }

    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try JSONBody.response(try await sessions.list(context.identity))
    }

    @Sendable func revoke(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await sessions.revoke(context.identity, id: try context.parameters.require("id"), client: input.client(request, context))
        return JSONBody.empty()
    }
}
