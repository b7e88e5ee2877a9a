import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/auth/phone/*` and `/v1/me/phone`: signing in with a code by SMS, and the signed-in
/// account's number (issue 43).
struct PhoneController {
    let phone: PhoneService
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>, signedIn: SignedInRoutes) {
        router.on(Endpoints.sendPhoneCode, use: sendCode)
        router.on(Endpoints.verifyPhoneCode, use: verifyCode)
        signedIn.on(Endpoints.addPhone, use: add)
        signedIn.on(Endpoints.verifyPhone, use: confirm)
        signedIn.on(Endpoints.removePhone, use: remove)
    }

    /// 202, the same for any number.
    @Sendable func sendCode(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(PhoneCodeRequest.self, request)
        try await phone.sendCode(phone: body.phone, captchaToken: body.captchaToken, client: input.client(request, context))
        return JSONBody.empty(.accepted)
    }

    @Sendable func verifyCode(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(PhoneVerifyRequest.self, request)
        return try JSONBody.response(
            try await phone.verify(phone: body.phone, code: body.code, client: input.client(request, context)), headers: noStore)
    }

    /// 202: a code went to the new number.
    @Sendable func add(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(PhoneChangeRequest.self, request)
        try await phone.add(context.signedIn, phone: body.phone, captchaToken: body.captchaToken, client: input.client(request, context))
        return JSONBody.empty(.accepted)
    }

    @Sendable func confirm(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(PhoneCodeProof.self, request)
        return try JSONBody.response(
            try await phone.confirm(context.signedIn, code: body.code, client: input.client(request, context)), headers: noStore)
    }

    @Sendable func remove(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await phone.remove(context.signedIn, client: input.client(request, context))
        return JSONBody.empty()
    }
}
