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

    static let prefix = "auth/v1"

    /// Every operation this controller serves with both keys set, as `METHOD /path` in
    /// OpenAPI's spelling: what docs/openapi.yaml and the router are checked against.
    static let operations = [
        "GET /auth/v1/verify", "GET /auth/v1/settings", "GET /auth/v1/.well-known/jwks.json", "POST /auth/v1/signup", "POST /auth/v1/token",
        "POST /auth/v1/otp", "POST /auth/v1/resend", "GET /auth/v1/reauthenticate", "POST /auth/v1/reauthenticate", "POST /auth/v1/verify", "POST /auth/v1/recover", "GET /auth/v1/user", "PUT /auth/v1/user",
        "POST /auth/v1/logout", "POST /auth/v1/factors", "POST /auth/v1/factors/{factor_id}/challenge", "POST /auth/v1/factors/{factor_id}/verify",
        "DELETE /auth/v1/factors/{factor_id}", "GET /auth/v1/admin/users", "POST /auth/v1/admin/users", "GET /auth/v1/admin/users/{id}",
        "PUT /auth/v1/admin/users/{id}", "DELETE /auth/v1/admin/users/{id}",
    ]

    func register(on router: Router<GatehouseRequestContext>) {
        // Followed from a mail in a browser, which sends no apikey (Supabase's gateway leaves it
        // open too): every answer, a refusal included, is a redirect.
        router.group(RouterPath(Self.prefix)).get("verify") { request, context in
            let query = request.uri.queryParameters
            let redirectTo = query["redirect_to"].map(String.init)
            let location: String
            do {
                location = try await compat.verifyLink(
                    token: try Self.required(query["token"].map(String.init), "token"), type: try Self.required(query["type"].map(String.init), "type"),
                    redirectTo: redirectTo, client: input.client(request, context))
            } catch {
                location = compat.verifyFailure(GoTrueError(errors.mapAndLog(error, logger: context.logger)), redirectTo: redirectTo)
            }
            var headers = noStore
            headers[.location] = location
            return Response(status: .seeOther, headers: headers)
        }
        let api = router.group(RouterPath(Self.prefix))
            .add(middleware: GoTrueErrorMiddleware(errors: errors))
            .add(middleware: APIKeyMiddleware(keys: [anonKey] + [serviceRoleKey].compactMap { $0 }))
        api.get("settings") { _, _ in try JSONBody.response(GoTrueSettings(self.methods)) }
        api.get(".well-known/jwks.json") { _, _ in
            try JSONBody.response(self.keys.jwks, headers: [.cacheControl: "public, max-age=300"])
        }
        api.post("signup") { request, context in
            let body = try await input.body(GoTrueSignup.self, request)
            return try JSONBody.response(try await compat.signup(body, client: input.client(request, context)), headers: noStore)
        }
        api.post("token", use: token)
        api.post("otp") { request, context in
            let body = try await input.body(GoTrueEmailRequest.self, request)
            try await compat.otp(
                email: try Self.required(body.email, "email"), createUser: body.createUser ?? true,
                redirectTo: request.uri.queryParameters["redirect_to"].map(String.init), pkce: try body.pkce(), client: input.client(request, context))
            return try JSONBody.response([String: String]())
        }
        api.post("resend") { request, _ in
            let body = try await input.body(GoTrueEmailRequest.self, request)
            try await compat.resend(type: try Self.required(body.type, "type"), email: try Self.required(body.email, "email"))
            return try JSONBody.response(["message_id": String?.none])
        }
        api.post("verify") { request, context in
            let body = try await input.body(GoTrueVerifyRequest.self, request)
            let session = try await compat.verify(
                type: body.type, token: body.token, tokenHash: body.tokenHash, email: body.email, client: input.client(request, context))
            return try JSONBody.response(session, headers: noStore)
        }
        api.post("recover") { request, context in
            let body = try await input.body(GoTrueEmailRequest.self, request)
            try await compat.recover(email: try Self.required(body.email, "email"), pkce: try body.pkce(), client: input.client(request, context))
            return try JSONBody.response([String: String]())
        }
        api.get("user") { request, _ in
            try JSONBody.response(try await compat.user(try await signedIn(request)), headers: noStore)
        }
        api.put("user") { request, context in
            let signedIn = try await signedIn(request)
            let body = try await input.body(GoTrueUserUpdate.self, request)
            return try JSONBody.response(
                try await compat.updateUser(signedIn, body, client: input.client(request, context)), headers: noStore)
        }
        api.post("logout") { request, context in
            let signedIn = try await signedIn(request)
            try await compat.logout(
                signedIn, scope: request.uri.queryParameters["scope"].map(String.init), client: input.client(request, context))
            return JSONBody.empty()
        }
        // GoTrue's verb is GET; POST is served too.
        for method in [HTTPRequest.Method.get, .post] {
            api.on("reauthenticate", method: method) { request, context in
                try await compat.reauthenticate(try await signedIn(request), client: input.client(request, context))
                return try JSONBody.response([String: String]())
            }
        }
        api.post("factors") { request, context in
            let signedIn = try await signedIn(request)
            let body = try await input.body(GoTrueEnrollRequest.self, request)
            return try JSONBody.response(try await compat.enroll(signedIn, body, client: input.client(request, context)), headers: noStore)
        }
        api.post("factors/:factor_id/challenge") { request, context in
            let signedIn = try await signedIn(request)
            return try JSONBody.response(try await compat.challenge(signedIn, factor: try context.parameters.require("factor_id")), headers: noStore)
        }
        api.post("factors/:factor_id/verify") { request, context in
            let signedIn = try await signedIn(request)
            let body = try await input.body(GoTrueFactorVerifyRequest.self, request)
            return try JSONBody.response(
                try await compat.verifyFactor(signedIn, factor: try context.parameters.require("factor_id"), body, client: input.client(request, context)),
                headers: noStore)
        }
        api.delete("factors/:factor_id") { request, context in
            let signedIn = try await signedIn(request)
            return try JSONBody.response(
                try await compat.unenroll(signedIn, factor: try context.parameters.require("factor_id"), client: input.client(request, context)))
        }
        if let serviceRoleKey { registerAdmin(on: api, key: serviceRoleKey) }
    }

    private func registerAdmin(on api: RouterGroup<GatehouseRequestContext>, key: AdminKey) {
        let admin = api.group("admin/users").add(middleware: BearerKeyMiddleware(key: key, name: "service role key", attempts: keyAttempts))
        admin.get { request, _ in
            let query = request.uri.queryParameters
            guard let page = Int(query["page"].map(String.init) ?? "1"), let perPage = Int(query["per_page"].map(String.init) ?? "50")
            else {
                throw GatehouseError.invalidRequest("page and per_page must be numbers.")
            }
            let (list, total) = try await compat.listUsers(page: page, perPage: perPage)
            var headers = noStore
            headers[.totalCount] = String(total)
            headers[.link] = GoTrueUserList.links(path: request.uri.path, page: page, perPage: perPage, total: total)
            return try JSONBody.response(list, headers: headers)
        }
        admin.post { request, _ in
            let body = try await input.body(GoTrueAdminUser.self, request)
            return try JSONBody.response(try await compat.createUser(body), headers: noStore)
        }
        admin.get(":id") { _, context in
            try JSONBody.response(try await compat.getUser(try context.parameters.require("id")), headers: noStore)
        }
        admin.put(":id") { request, context in
            let body = try await input.body(GoTrueAdminUser.self, request)
            return try JSONBody.response(try await compat.updateUser(try context.parameters.require("id"), body), headers: noStore)
        }
        admin.delete(":id") { _, context in
            try await compat.deleteUser(try context.parameters.require("id"))
            return try JSONBody.response([String: String]())
        }
    }

    /// `POST /token?grant_type=…`.
    @Sendable func token(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueTokenRequest.self, request)
        let client = input.client(request, context)
        let session: GoTrueSession
        switch request.uri.queryParameters["grant_type"].map(String.init) {
        case "password":
            session = try await compat.passwordGrant(
                email: try Self.required(body.email, "email"), password: try Self.required(body.password, "password"),
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

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
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

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let mapped = errors.mapAndLog(error, logger: context.logger)
            let refusal = GoTrueError(mapped)
            var headers: HTTPFields = noStore
            headers[.supabaseErrorCode] = refusal.code
            if let retryAfter = mapped.retryAfter { headers[.retryAfter] = String(retryAfter) }
            let versioned = request.headers[.supabaseAPIVersion].map(GoTrueError.isVersioned) ?? false
            if versioned { headers[.supabaseAPIVersion] = GoTrueError.version }
            let status = HTTPResponse.Status(code: refusal.status)
            if versioned { return try JSONBody.response(refusal.versionedBody, status: status, headers: headers) }
            return try JSONBody.response(refusal.legacyBody, status: status, headers: headers)
        }
    }
}

/// A Gatehouse error in GoTrue's terms: its `error_code` where GoTrue has one for the same
/// refusal (and GoTrue's status for it), Gatehouse's own code otherwise.
struct GoTrueError: Sendable {
    var status: Int
    var code: String
    var message: String
    var reasons: [String]?

    /// The API version whose error shape this server speaks when asked.
    static let version = "2024-01-01"

    static func isVersioned(_ header: String) -> Bool {
        // Dates compare as text in this form; anything else is GoTrue's initial version.
        header.count == 10 && header.allSatisfy { $0.isNumber || $0 == "-" } && header >= version
    }

    /// Gatehouse code → (GoTrue code, GoTrue's status; nil keeps Gatehouse's).
    static let names: [ErrorCode: (String, Int?)] = [
        .invalidCredentials: ("invalid_credentials", 400), .emailInUse: ("user_already_exists", 422),
        .weakPassword: ("weak_password", 422), .invalidEmail: ("email_address_invalid", 400),
        .rateLimited: ("over_request_rate_limit", 429), .tooManyAttempts: ("over_request_rate_limit", 429),
        .invalidRefreshToken: ("refresh_token_not_found", 400), .sessionRevoked: ("session_not_found", 403),
        .unauthorized: ("no_authorization", 401), .tokenExpired: ("bad_jwt", 403), .accountDisabled: ("user_banned", 403),
        .methodDisabled: ("provider_disabled", 403), .tokenInvalid: ("otp_expired", 403), .codeExhausted: ("otp_expired", 403),
        .resetTokenExpired: ("otp_expired", 403), .invalidIDToken: ("bad_oauth_callback", 400),
        .invalidRequest: ("validation_failed", 400), .mfaRequired: ("insufficient_aal", 403),
        .reauthenticationRequired: ("reauthentication_needed", 400), .identityInUse: ("email_exists", 422),
        .captchaRequired: ("captcha_failed", 400), .forbidden: ("not_admin", 403), .emailNotFound: ("user_not_found", 404),
        .notFound: ("user_not_found", 404), .payloadTooLarge: ("request_entity_too_large", 413),
        .internalError: ("unexpected_failure", 500), .invalidDisplayName: ("validation_failed", 422),
        .invalidHandle: ("validation_failed", 422), .invalidAvatarURL: ("validation_failed", 422),
        .invalidCode: ("mfa_verification_failed", 422), .tooManyFactors: ("too_many_enrolled_mfa_factors", 422),
    ]

    init(_ error: GatehouseError) {
        // A link or code that expired is `token_expired` at 400 in Gatehouse (401 is an access
        // token's): GoTrue answers it as it answers an invalid link.
        let linkExpired = error.code == .tokenExpired && error.status == 400
        let name = Self.names[linkExpired ? .tokenInvalid : error.code]
        code = name?.0 ?? error.code.rawValue
        status = name?.1 ?? error.status
        message = error.message
        reasons = error.reasons
    }

    private struct Versioned: Encodable {
        var code: String
        var msg: String
        var weakPassword: Reasons?
        enum CodingKeys: String, CodingKey { case code, msg, weakPassword = "weak_password" }
    }

    private struct Legacy: Encodable {
        var code: Int
        var errorCode: String
        var msg: String
        var weakPassword: Reasons?
        enum CodingKeys: String, CodingKey { case code, msg, errorCode = "error_code", weakPassword = "weak_password" }
    }

    private struct Reasons: Encodable {
        var reasons: [String]
    }

    private var weakPassword: Reasons? { code == "weak_password" ? Reasons(reasons: reasons ?? []) : nil }

    var versionedBody: some Encodable { Versioned(code: code, msg: message, weakPassword: weakPassword) }
    var legacyBody: some Encodable { Legacy(code: status, errorCode: code, msg: message, weakPassword: weakPassword) }
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
