import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird
import NIOCore

/// `/v1/auth/*` for email and password, sessions and tokens, and `GET /v1/me`.
struct AuthController {
    let auth: AuthService
    let tokens: TokenService
    let resolver: ClientAddressResolver
    let bodyLimit: Int

    func register(on router: Router<GatehouseRequestContext>) {
        let noStore: HTTPFields = [.cacheControl: "no-store"]
        router.post("/v1/auth/signup") { request, context in
            let body = try await request.decodeJSON(EmailPasswordRequest.self, limit: bodyLimit)
            let result = try await auth.signup(
                email: body.email, password: body.password, client: client(request, context.peerAddress),
                idempotencyKey: try request.idempotencyKey, captchaToken: body.captchaToken)
            return try JSONBody.response(result, status: .created, headers: noStore)
        }
        router.post("/v1/auth/login") { request, context in
            let body = try await request.decodeJSON(EmailPasswordRequest.self, limit: bodyLimit)
            let result = try await auth.login(
                email: body.email, password: body.password, client: client(request, context.peerAddress), captchaToken: body.captchaToken)
            return try JSONBody.response(result, headers: noStore)
        }
        router.post("/v1/auth/refresh") { request, context in
            let body = try await request.decodeJSON(RefreshRequest.self, limit: bodyLimit)
            let result = try await auth.refresh(body.refreshToken, client: client(request, context.peerAddress))
            return try JSONBody.response(result, headers: noStore)
        }

        let signedIn = router.group()
            .add(middleware: AccessTokenMiddleware(tokens: tokens, auth: auth))
            .group(context: AuthenticatedContext.self)
        signedIn.post("/v1/auth/logout") { request, context in
            let body = try await request.decodeJSON(LogoutRequest.self, limit: bodyLimit)
            try await auth.logout(context.identity, scope: body.scope, client: client(request, context.peerAddress))
            return JSONBody.empty()
        }
        signedIn.get("/v1/auth/sessions") { _, context in
            try JSONBody.response(try await auth.sessions(context.identity))
        }
        signedIn.delete("/v1/auth/sessions/:id") { request, context in
            try await auth.revokeSession(
                context.identity, id: try context.parameters.require("id"), client: client(request, context.peerAddress))
            return JSONBody.empty()
        }
        signedIn.post("/v1/auth/password/change") { request, context in
            let body = try await request.decodeJSON(PasswordChangeRequest.self, limit: bodyLimit)
            let result = try await auth.changePassword(
                context.signedIn, current: body.currentPassword, new: body.newPassword,
                signOutOthers: body.signOutOtherSessions ?? false, client: client(request, context.peerAddress))
            return try JSONBody.response(result)
        }
        signedIn.get("/v1/me") { _, context in
            try JSONBody.response(try await auth.me(context.signedIn))
        }
    }

    func client(_ request: Request, _ peer: SocketAddress?) -> ClientInfo {
        resolver.client(request, peer)
    }
}

extension ClientAddressResolver {
    /// The caller's address (through trusted proxies) and user agent.
    func client(_ request: Request, _ peer: SocketAddress?) -> ClientInfo {
        ClientInfo(
            ip: clientIP(peer: peer?.ipAddress, forwardedFor: request.headers[.xForwardedFor]),
            userAgent: request.headers[.userAgent])
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
