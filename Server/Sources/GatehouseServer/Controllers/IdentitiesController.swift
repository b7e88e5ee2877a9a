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
        signedIn.on(Endpoints.linkApple) { request, context in try await link(.apple, request, context) }
        signedIn.on(Endpoints.linkGoogle) { request, context in try await link(.google, request, context) }
        // The literal paths are listed because the router does not fall back from a literal
        // segment (`email`, taken by the POST routes) to a parameter.
        for (endpoint, provider) in [(Endpoints.unlinkEmail, "email"), (Endpoints.unlinkApple, "apple"), (Endpoints.unlinkGoogle, "google")] {
            signedIn.on(endpoint) { request, context in try await unlink(provider, request, context) }
        }
        signedIn.on(Endpoints.unlinkIdentity) { request, context in
            try await unlink(try context.parameters.require("provider"), request, context)
        }
        signedIn.on(Endpoints.merge, use: merge)
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
