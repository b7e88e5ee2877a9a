import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/mfa/*` (the signed-in account's second factors) and `/v1/auth/mfa/verify` (a sign-in's
/// challenge, or a Bearer's step-up).
struct MFAController {
    let mfa: MFAService
    let authenticator: Authenticator
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>, signedIn: SignedInRoutes) {
        router.on(Endpoints.verifyMFA, use: verify)
        signedIn.on(Endpoints.enrollMFAFactor, use: enroll)
        signedIn.on(Endpoints.confirmMFAFactor, use: confirm)
        signedIn.on(Endpoints.mfaFactors, use: list)
        signedIn.on(Endpoints.renameMFAFactor, use: rename)
        signedIn.on(Endpoints.deleteMFAFactor, use: delete)
        signedIn.on(Endpoints.regenerateRecoveryCodes, use: regenerate)
    }

    @Sendable func verify(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(MFAVerifyRequest.self, request)
        // A challenge needs no Bearer (the sign-in has none yet); a step-up is the Bearer's.
        let signedIn = body.challengeID == nil ? try await request.optionalSignedIn(authenticator) : nil
        return try JSONBody.response(try await mfa.verify(body, signedIn: signedIn, client: input.client(request, context)), headers: noStore)
    }

    @Sendable func enroll(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(MFAEnrollRequest.self, request)
        return try JSONBody.response(
            try await mfa.enroll(context.signedIn, body, client: input.client(request, context)), status: .created, headers: noStore)
    }

    @Sendable func confirm(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(MFACodeRequest.self, request)
        return try JSONBody.response(
            try await mfa.confirm(
                context.signedIn, id: try context.parameters.require("id"), code: body.code, client: input.client(request, context)),
            headers: noStore)
    }

    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try JSONBody.response(try await mfa.list(context.signedIn), headers: noStore)
    }

    @Sendable func rename(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(MFARenameRequest.self, request)
        return try JSONBody.response(
            try await mfa.rename(context.signedIn, id: try context.parameters.require("id"), name: body.name), headers: noStore)
    }

    @Sendable func delete(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await mfa.delete(context.signedIn, id: try context.parameters.require("id"), client: input.client(request, context))
        return JSONBody.empty()
    }

    @Sendable func regenerate(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try JSONBody.response(try await mfa.regenerateRecoveryCodes(context.signedIn, client: input.client(request, context)), headers: noStore)
    }
}
