import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/auth/identities/*` and `/v1/auth/merge`: the sign-ins of the signed-in account.
struct IdentitiesController {
    let providers: ProviderSignInService
    let profiles: ProfileService
    let input: HTTPInput

    func register(signedIn: SignedInRoutes) {
        signedIn.on(Endpoints.linkEmail, use: linkEmail)
        signedIn.on(Endpoints.linkApple, use: linkApple)
        signedIn.on(Endpoints.linkGoogle, use: linkGoogle)
        // The literal paths are listed because the router does not fall back from a literal
        // segment (`email`, taken by the POST routes) to a parameter.
        signedIn.on(Endpoints.unlinkEmail, use: unlinkEmail)
        signedIn.on(Endpoints.unlinkApple, use: unlinkApple)
        signedIn.on(Endpoints.unlinkGoogle, use: unlinkGoogle)
        signedIn.on(Endpoints.unlinkIdentity, use: unlinkIdentity)
        signedIn.on(Endpoints.merge, use: merge)
    }

    @Sendable func unlinkEmail(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await unlink("email", request, context)
    }

    @Sendable func unlinkApple(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await unlink("apple", request, context)
    }

    @Sendable func unlinkGoogle(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await unlink("google", request, context)
    }

    @Sendable func linkApple(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await link(.apple, request, context)
    }

    @Sendable func linkGoogle(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await link(.google, request, context)
    }

    @Sendable func unlinkIdentity(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await unlink(try context.parameters.require("provider"), request, context)
    }

    @Sendable func linkEmail(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(EmailPasswordRequest.self, request)
        return try JSONBody.response(
            try await providers.linkEmail(context.signedIn, email: body.email, password: body.password, client: input.client(request, context)))
    }

    func link(_ provider: Provider, _ request: Request, _ context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(ProviderSignInRequest.self, request)
        return try JSONBody.response(try await providers.link(context.signedIn, provider, body, client: input.client(request, context)))
    }

    func unlink(_ provider: String, _ request: Request, _ context: AuthenticatedContext) async throws -> Response {
        try await providers.unlink(context.signedIn, provider: provider, client: input.client(request, context))
        return JSONBody.empty()
    }

    @Sendable func merge(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(MergeRequest.self, request)
        return try JSONBody.response(try await profiles.merge(context.signedIn, token: body.mergeToken))
    }
}
