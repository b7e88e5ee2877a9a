import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/auth/email/*`: sending and following the verification link.
struct EmailVerificationController {
    let verification: EmailVerificationService
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>, signedIn: SignedInRoutes) {
        router.on(Endpoints.verifyEmail, use: verify)
        signedIn.on(Endpoints.resendVerification, use: resend)
    }

    @Sendable func verify(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(TokenRequest.self, request)
        return try JSONBody.response(try await verification.verify(token: body.token))
    }

    @Sendable func resend(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await verification.resend(context.user)
        return JSONBody.empty(.accepted)
    }
}
