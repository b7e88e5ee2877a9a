import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/auth/password/*`: forgot, reset and change.
struct PasswordController {
    let passwords: PasswordService
    let reset: PasswordResetService
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>, signedIn: SignedInRoutes) {
        router.on(Endpoints.forgotPassword, use: forgot)
        router.on(Endpoints.resetPassword, use: resetPassword)
        signedIn.on(Endpoints.changePassword, use: change)
    }

    @Sendable func forgot(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(EmailRequest.self, request)
        try await reset.forgot(email: body.email, client: input.client(request, context))
        return JSONBody.empty(.accepted)
    }

    @Sendable func resetPassword(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(PasswordResetRequest.self, request)
        try await reset.reset(token: body.token, password: body.password, client: input.client(request, context))
        return try JSONBody.response(EmptyObject())
    }

    @Sendable func change(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(PasswordChangeRequest.self, request)
        let result = try await passwords.changePassword(
            context.signedIn, current: body.currentPassword, new: body.newPassword,
            signOutOthers: body.signOutOtherSessions ?? false, client: input.client(request, context))
        return try JSONBody.response(result)
    }
}

/// `{}`.
struct EmptyObject: Encodable {}
