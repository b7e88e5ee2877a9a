import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// The ways into an account: sign-up and login with a password, an anonymous start, Apple and
/// Google, and magic links.
struct SignInController {
    let passwords: PasswordService
    let profiles: ProfileService
    let providers: ProviderSignInService
    let magicLinks: MagicLinkService
    let authenticator: Authenticator
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>) {
        router.on(Endpoints.signUp, use: signup)
        router.on(Endpoints.logIn, use: login)
        router.on(Endpoints.signInAnonymously, use: anonymous)
        router.on(Endpoints.signInWithApple, use: signInWithApple)
        router.on(Endpoints.signInWithGoogle, use: signInWithGoogle)
        router.on(Endpoints.sendMagicLink, use: requestMagicLink)
        router.on(Endpoints.verifyMagicLink, use: verifyMagicLink)
    }

    @Sendable func signInWithApple(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await provider(.apple, request, context)
    }

    @Sendable func signInWithGoogle(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await provider(.google, request, context)
    }

    @Sendable func signup(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(EmailPasswordRequest.self, request)
        let result = try await passwords.signup(
            email: body.email, password: body.password, client: input.client(request, context),
            idempotencyKey: try request.idempotencyKey, captchaToken: body.captchaToken)
        // 201 for the account made (or a replay of it); a replay meeting a second factor is 200.
        return try JSONBody.response(result, status: result.challenge == nil ? .created : .ok, headers: noStore)
    }

    @Sendable func login(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(EmailPasswordRequest.self, request)
        let result = try await passwords.login(
            email: body.email, password: body.password, client: input.client(request, context), captchaToken: body.captchaToken)
        return try JSONBody.response(result, headers: noStore)
    }

    @Sendable func anonymous(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let result = try await profiles.anonymous(client: input.client(request, context), idempotencyKey: try request.idempotencyKey)
        return try JSONBody.response(result, status: .created, headers: noStore)
    }

    func provider(_ provider: Provider, _ request: Request, _ context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(ProviderSignInRequest.self, request)
        return try JSONBody.response(try await providers.signIn(provider, body, client: input.client(request, context)), headers: noStore)
    }

    @Sendable func requestMagicLink(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        // Signed in as an anonymous account, the link upgrades that account.
        let upgrading = try await request.optionalUser(authenticator)
        let body = try await input.body(MagicLinkRequest.self, request)
        try await magicLinks.request(
            email: body.email, redirectTo: body.redirectTo, client: input.client(request, context), upgrading: upgrading)
        return JSONBody.empty(.accepted)
    }

    @Sendable func verifyMagicLink(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(MagicLinkVerifyRequest.self, request)
        let result = try await magicLinks.verify(token: body.token, email: body.email, code: body.code, client: input.client(request, context))
        return try JSONBody.response(result, headers: noStore)
    }
}
