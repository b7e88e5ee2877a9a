import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/auth/email/*`, `/v1/auth/password/forgot|reset` and `/v1/auth/magic-link*`: the JSON
/// side of the flows that run through a person's inbox.
struct EmailController {
    let emails: EmailFlowService
    let auth: AuthService
    let tokens: TokenService
    let resolver: ClientAddressResolver
    let bodyLimit: Int

    func register(on router: Router<GatehouseRequestContext>) {
        let noStore: HTTPFields = [.cacheControl: "no-store"]
        router.post("/v1/auth/email/verify") { request, _ in
            let body = try await request.decodeJSON(TokenRequest.self, limit: bodyLimit)
            return try JSONBody.response(try await emails.verifyEmail(token: body.token))
        }
        router.post("/v1/auth/password/forgot") { request, context in
            let body = try await request.decodeJSON(EmailRequest.self, limit: bodyLimit)
            try await emails.forgotPassword(email: body.email, client: resolver.client(request, context.peerAddress))
            return JSONBody.empty(.accepted)
        }
        router.post("/v1/auth/password/reset") { request, context in
            let body = try await request.decodeJSON(PasswordResetRequest.self, limit: bodyLimit)
            try await emails.resetPassword(token: body.token, password: body.password, client: resolver.client(request, context.peerAddress))
            return try JSONBody.response(EmptyObject())
        }
        router.post("/v1/auth/magic-link") { request, context in
            let body = try await request.decodeJSON(MagicLinkRequest.self, limit: bodyLimit)
            // Signed in as an anonymous account, the link upgrades that account.
            try await emails.requestMagicLink(
                email: body.email, redirectTo: body.redirectTo, client: resolver.client(request, context.peerAddress),
                upgrading: try await request.optionalUser(tokens: tokens, auth: auth))
            return JSONBody.empty(.accepted)
        }
        router.post("/v1/auth/magic-link/verify") { request, context in
            let body = try await request.decodeJSON(MagicLinkVerifyRequest.self, limit: bodyLimit)
            let result = try await emails.verifyMagicLink(
                token: body.token, email: body.email, code: body.code, client: resolver.client(request, context.peerAddress))
            return try JSONBody.response(result, headers: noStore)
        }

        let signedIn = router.group()
            .add(middleware: AccessTokenMiddleware(tokens: tokens, auth: auth))
            .group(context: AuthenticatedContext.self)
        signedIn.post("/v1/auth/email/verification") { _, context in
            try await emails.resendVerification(context.signedIn.user)
            return JSONBody.empty(.accepted)
        }
    }
}

/// `{}`.
struct EmptyObject: Encodable {}
