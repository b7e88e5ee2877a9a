import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/passkeys/*`: the passkey ceremonies (a Bearer optional for registration) and the
/// signed-in account's passkeys.
struct PasskeysController {
    let passkeys: PasskeyService
    let authenticator: Authenticator
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>, signedIn: SignedInRoutes) {
        router.on(Endpoints.passkeyRegistrationOptions, use: registrationOptions)
        router.on(Endpoints.verifyPasskeyRegistration, use: verifyRegistration)
        router.on(Endpoints.passkeyAuthenticationOptions, use: authenticationOptions)
        router.on(Endpoints.verifyPasskeyAuthentication, use: signIn)
        signedIn.on(Endpoints.passkeys, use: list)
        signedIn.on(Endpoints.renamePasskey, use: rename)
        signedIn.on(Endpoints.deletePasskey, use: delete)
    }

    @Sendable func registrationOptions(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let signedIn = try await request.optionalSignedIn(authenticator)
        let body = try await input.body(PasskeyOptionsRequest.self, request)
        return try JSONBody.response(
            try await passkeys.registrationOptions(signedIn, email: body.email, client: input.client(request, context)), headers: noStore)
    }

    /// 200 `{passkey}` for a signed-in account, 201 `{user, session}` for a sign-up.
    @Sendable func verifyRegistration(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let signedIn = try await request.optionalSignedIn(authenticator)
        let body = try await input.body(PasskeyRegistrationRequest.self, request)
        let result = try await passkeys.verifyRegistration(signedIn, body, client: input.client(request, context))
        return try JSONBody.response(result, status: signedIn == nil ? .created : .ok, headers: noStore)
    }

    @Sendable func authenticationOptions(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(PasskeyOptionsRequest.self, request)
        return try JSONBody.response(
            try await passkeys.authenticationOptions(email: body.email, client: input.client(request, context)), headers: noStore)
    }

    @Sendable func signIn(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(PasskeyAssertionRequest.self, request)
        return try JSONBody.response(try await passkeys.signIn(body, client: input.client(request, context)), headers: noStore)
    }

    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try JSONBody.response(try await passkeys.list(context.signedIn), headers: noStore)
    }

    @Sendable func rename(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(PasskeyRenameRequest.self, request)
        return try JSONBody.response(
            try await passkeys.rename(context.signedIn, id: try context.parameters.require("id"), name: body.name), headers: noStore)
    }

    @Sendable func delete(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await passkeys.delete(context.signedIn, id: try context.parameters.require("id"), client: input.client(request, context))
        return JSONBody.empty()
    }
}
