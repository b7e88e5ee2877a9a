import Foundation
import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird
import Logging

/// `/auth/v1`: Supabase Auth's (GoTrue's) paths, bodies and errors, for apps that ship
/// supabase-swift, supabase-js or supabase-py. Mounted when `GATEHOUSE_SUPABASE_ANON_KEY` is
/// set; its admin routes when `GATEHOUSE_SUPABASE_SERVICE_ROLE_KEY` is set too.
struct SupabaseController {
    let compat: SupabaseCompatService
    let authenticator: Authenticator
    let keys: KeyRing
    let methods: SignInMethods
    let anonKey: AdminKey
    let serviceRoleKey: AdminKey?
    let errors: ErrorMiddleware
    let input: HTTPInput
    let keyAttempts: OperatorKeyAttempts

    /// Every operation this controller serves with both keys set, as `METHOD /path` in
    /// OpenAPI's spelling: what docs/openapi.yaml and the router are checked against.
    static let operations = GoTrueRoutes.all.map(\.operation)

    func register(on router: Router<GatehouseRequestContext>) {
        router.on(GoTrueRoutes.verifyLink, use: verifyLink)
        let api = router.group()
            .add(middleware: GoTrueErrorMiddleware(errors: errors))
            .add(middleware: APIKeyMiddleware(keys: [anonKey] + [serviceRoleKey].compactMap { $0 }))
        api.on(GoTrueRoutes.settings, use: settings)
        api.on(GoTrueRoutes.jwks, use: jwks)
        api.on(GoTrueRoutes.signup, use: signup)
        api.on(GoTrueRoutes.token, use: token)
        api.on(GoTrueRoutes.otp, use: otp)
        api.on(GoTrueRoutes.resend, use: resend)
        api.on(GoTrueRoutes.verify, use: verify)
        api.on(GoTrueRoutes.recover, use: recover)
        api.on(GoTrueRoutes.user, use: user)
        api.on(GoTrueRoutes.updateUser, use: updateUser)
        api.on(GoTrueRoutes.logout, use: logout)
        api.on(GoTrueRoutes.reauthenticate, use: reauthenticate)
        api.on(GoTrueRoutes.reauthenticatePost, use: reauthenticate)
        api.on(GoTrueRoutes.enroll, use: enroll)
        api.on(GoTrueRoutes.challenge, use: challenge)
        api.on(GoTrueRoutes.verifyFactor, use: verifyFactor)
        api.on(GoTrueRoutes.unenroll, use: unenroll)
        for route in GoTrueRoutes.unknown { api.on(route, use: unknownPath) }
        guard let serviceRoleKey else { return }
        let admin = api.group().add(middleware: BearerKeyMiddleware(key: serviceRoleKey, name: "service role key", attempts: keyAttempts))
        admin.on(GoTrueRoutes.adminUsers, use: adminUsers)
        admin.on(GoTrueRoutes.adminCreateUser, use: adminCreateUser)
        admin.on(GoTrueRoutes.adminUser, use: adminUser)
        admin.on(GoTrueRoutes.adminUpdateUser, use: adminUpdateUser)
        admin.on(GoTrueRoutes.adminDeleteUser, use: adminDeleteUser)
        SupabaseAdminHandlers(compat: compat, input: input).register(on: admin)
    }

    @Sendable func unknownPath(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        throw GoTrueError(status: 404, .notFound, "No API route matches \(request.method.rawValue) \(request.uri.path).")
    }

    // MARK: Handlers

    @Sendable func verifyLink(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let redirectTo = query["redirect_to"].map(String.init)
        let location: String
        do {
            location = try await compat.verifyLink(
                token: try Self.required(query["token"].map(String.init), "token"), type: try Self.required(query["type"].map(String.init), "type"),
                redirectTo: redirectTo, client: input.client(request, context))
        } catch {
            location = compat.verifyFailure(GoTrueError(error, errors: errors, logger: context.logger), redirectTo: redirectTo)
        }
        var headers = noStore
        headers[.location] = location
        return Response(status: .seeOther, headers: headers)
    }

    @Sendable func settings(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(GoTrueSettings(self.methods))
    }

    @Sendable func jwks(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(self.keys.jwks, headers: [.cacheControl: "public, max-age=300"])
    }

    @Sendable func signup(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueSignup.self, request)
        if let phone = body.phone, body.email == nil {
            return try JSONBody.response(try await compat.phoneSignup(body, phone: phone, client: input.client(request, context)), headers: noStore)
        }
        return try JSONBody.response(try await compat.signup(body, client: input.client(request, context)), headers: noStore)
    }

    @Sendable func otp(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueEmailRequest.self, request)
        if let phone = body.phone, body.email == nil {
            guard body.channel == nil || body.channel == "sms" else {
                throw GatehouseError.invalidRequest("Codes go by SMS only: channel must be sms.")
            }
            try await compat.phoneOTP(
                phone: phone, createUser: body.createUser ?? true, captchaToken: body.security?.captchaToken,
                client: input.client(request, context))
            return try JSONBody.response(["message_id": String?.none])
        }
        try await compat.otp(
            email: try Self.required(body.email, "email"), createUser: body.createUser ?? true,
            redirectTo: request.uri.queryParameters["redirect_to"].map(String.init), pkce: try body.pkce(), client: input.client(request, context))
        return try JSONBody.response([String: String]())
    }

    @Sendable func resend(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueEmailRequest.self, request)
        if let phone = body.phone, body.email == nil {
            try await compat.resendSMS(
                type: try Self.required(body.type, "type"), phone: phone, captchaToken: body.security?.captchaToken, client: input.client(request, context))
            return try JSONBody.response(["message_id": String?.none])
        }
        try await compat.resend(type: try Self.required(body.type, "type"), email: try Self.required(body.email, "email"))
        return try JSONBody.response(["message_id": String?.none])
    }

    @Sendable func verify(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueVerifyRequest.self, request)
        // A number change's code confirms for the account whose session came with it, when one
        // did (GoTrue's clients send the anon key instead, which names no account).
        let asker = body.type == "phone_change" ? try? await request.optionalSignedIn(authenticator)?.user.id : nil
        let session = try await compat.verify(
            type: body.type, token: body.token, tokenHash: body.tokenHash, email: body.email, phone: body.phone, asker: asker,
            client: input.client(request, context))
        return try JSONBody.response(session, headers: noStore)
    }

    @Sendable func recover(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueEmailRequest.self, request)
        try await compat.recover(email: try Self.required(body.email, "email"), pkce: try body.pkce(), client: input.client(request, context))
        return try JSONBody.response([String: String]())
    }

    @Sendable func user(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(try await compat.user(try await signedIn(request)), headers: noStore)
    }

    @Sendable func updateUser(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let signedIn = try await signedIn(request)
        let body = try await input.body(GoTrueUserUpdate.self, request)
        return try JSONBody.response(try await compat.updateUser(signedIn, body, client: input.client(request, context)), headers: noStore)
    }

    @Sendable func logout(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let signedIn = try await signedIn(request)
        try await compat.logout(signedIn, scope: request.uri.queryParameters["scope"].map(String.init), client: input.client(request, context))
        return JSONBody.empty()
    }

    @Sendable func reauthenticate(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await compat.reauthenticate(try await signedIn(request), client: input.client(request, context))
        return try JSONBody.response([String: String]())
    }

    @Sendable func enroll(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let signedIn = try await signedIn(request)
        let body = try await input.body(GoTrueEnrollRequest.self, request)
        return try JSONBody.response(try await compat.enroll(signedIn, body, client: input.client(request, context)), headers: noStore)
    }

    @Sendable func challenge(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let signedIn = try await signedIn(request)
        return try JSONBody.response(try await compat.challenge(signedIn, factor: try context.parameters.require("factor_id")), headers: noStore)
    }

    @Sendable func verifyFactor(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let signedIn = try await signedIn(request)
        let body = try await input.body(GoTrueFactorVerifyRequest.self, request)
        return try JSONBody.response(
            try await compat.verifyFactor(signedIn, factor: try context.parameters.require("factor_id"), body, client: input.client(request, context)),
            headers: noStore)
    }

    @Sendable func unenroll(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let signedIn = try await signedIn(request)
        return try JSONBody.response(
            try await compat.unenroll(signedIn, factor: try context.parameters.require("factor_id"), client: input.client(request, context)))
    }

    // MARK: Admin handlers (the service role key)

    @Sendable func adminUsers(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        // GoTrue reads an empty value as none (supabase-py's `list_users()` sends `?page=&per_page=`);
        // a parameter given twice is refused, not read from its first copy.
        func number(_ name: String, _ fallback: Int) -> Int? {
            let given = query.getAll(name)
            guard given.count <= 1 else { return nil }
            guard let text = given.first, !text.isEmpty else { return fallback }
            return Int(text)
        }
        guard let page = number("page", 1), let perPage = number("per_page", 50) else {
            throw GatehouseError.invalidRequest("page and per_page must be numbers, each given once.")
        }
        let (list, total) = try await compat.listUsers(page: page, perPage: perPage)
        var headers = noStore
        headers[.totalCount] = String(total)
        headers[.link] = GoTrueUserList.links(path: request.uri.path, page: page, perPage: perPage, total: total)
        return try JSONBody.response(list, headers: headers)
    }

    @Sendable func adminCreateUser(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueAdminUser.self, request)
        return try JSONBody.response(try await compat.createUser(body), headers: noStore)
    }

    @Sendable func adminUser(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(try await compat.getUser(try context.parameters.require("id")), headers: noStore)
    }

    @Sendable func adminUpdateUser(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueAdminUser.self, request)
        return try JSONBody.response(try await compat.updateUser(try context.parameters.require("id"), body), headers: noStore)
    }

    @Sendable func adminDeleteUser(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await compat.deleteUser(try context.parameters.require("id"))
        return try JSONBody.response([String: String]())
    }

    /// `POST /token?grant_type=…`.
    @Sendable func token(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueTokenRequest.self, request)
        let client = input.client(request, context)
        let session: GoTrueSession
        switch request.uri.queryParameters["grant_type"].map(String.init) {
        case "password":
            session = try await compat.passwordGrant(
                email: body.phone == nil ? try Self.required(body.email, "email") : body.email, phone: body.phone,
                password: try Self.required(body.password, "password"),
                captchaToken: body.security?.captchaToken, client: client)
        case "refresh_token":
            session = try await compat.refreshGrant(try Self.required(body.refreshToken, "refresh_token"), client: client)
        case "id_token":
            session = try await compat.idTokenGrant(
                provider: try Self.required(body.provider, "provider"), idToken: try Self.required(body.idToken, "id_token"),
                nonce: body.nonce, client: client)
        case "pkce":
            session = try await compat.pkceGrant(
                authCode: try Self.required(body.authCode, "auth_code"), verifier: try Self.required(body.codeVerifier, "code_verifier"),
                client: client)
        default:
            throw GatehouseError.invalidRequest("grant_type must be password, refresh_token, id_token or pkce.")
        }
        return try JSONBody.response(session, headers: noStore)
    }

    /// The user of the request's access token (`Authorization: Bearer …`).
    private func signedIn(_ request: Request) async throws -> SignedIn {
        guard let signedIn = try await request.optionalSignedIn(authenticator) else { throw GatehouseError.unauthorized() }
        return signedIn
    }

    private static func required(_ value: String?, _ name: String) throws -> String {
        guard let value, !value.isEmpty else { throw GatehouseError.invalidRequest("The field '\(name)' is required.") }
        return value
    }
}

/// Refuses a request whose `apikey` header (Supabase's project key, publishable or service role)
/// is missing or not one of this server's, in constant time.
struct APIKeyMiddleware: RouterMiddleware {
    typealias Context = GatehouseRequestContext
    let keys: [AdminKey]

    func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        guard let presented = request.headers[.apiKey] else {
            throw GatehouseError.unauthorized("No API key found in request.")
        }
        // Every key is compared, so the time taken does not say which one came close.
        let matches = keys.map { $0.matches(presented) }
        guard matches.contains(true) else { throw GatehouseError.unauthorized("Invalid API key.") }
        return try await next(request, context)
    }
}

/// Answers errors in GoTrue's shapes: `{"code": <status>, "error_code", "msg"}` by default, and
/// `{"code": <error_code>, "msg"}` with `X-Supabase-Api-Version` echoed when the client sends
/// a version from 2024-01-01 on (as supabase-swift, supabase-js and supabase-py do).
struct GoTrueErrorMiddleware: RouterMiddleware {
    typealias Context = GatehouseRequestContext
    let errors: ErrorMiddleware

    func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let refusal = GoTrueError(error, errors: errors, logger: context.logger)
            var headers: HTTPFields = noStore
            headers[.supabaseErrorCode] = refusal.code
            if let retryAfter = refusal.retryAfter { headers[.retryAfter] = String(retryAfter) }
            let versioned = request.headers[.supabaseAPIVersion].map(GoTrueError.isVersioned) ?? false
            if versioned { headers[.supabaseAPIVersion] = GoTrueError.version }
            let status = HTTPResponse.Status(code: refusal.status)
            if versioned { return try JSONBody.response(refusal.versionedBody, status: status, headers: headers) }
            return try JSONBody.response(refusal.legacyBody, status: status, headers: headers)
        }
    }
}

extension HTTPField.Name {
    /// Supabase's project key header.
    static let apiKey = Self("apikey")!
    /// Which error shape a Supabase client reads.
    static let supabaseAPIVersion = Self("X-Supabase-Api-Version")!
    /// GoTrue's error code, repeated as a header.
    static let supabaseErrorCode = Self("x-sb-error-code")!
    /// How many items all the pages of a list hold.
    static let totalCount = Self("X-Total-Count")!
    /// RFC 8288 links; here a list's next and last pages.
    static let link = Self("Link")!
}
