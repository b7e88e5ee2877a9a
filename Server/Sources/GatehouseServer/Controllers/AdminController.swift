import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Hummingbird

/// `/admin/v1`: operator calls, behind the admin key.
struct AdminController {
    let users: OperatorService
    let imports: ImportService
    let keys: KeyRing
    let operatorKeys: OperatorKeysService
    let adminKey: AdminKey
    let keyAttempts: OperatorKeyAttempts
    let operatorMail: OperatorMailService
    let clients: OperatorClientsService
    let bodyLimit: Int

    func register(on router: Router<GatehouseRequestContext>) {
        let admin = router.group().add(middleware: BearerKeyMiddleware(key: adminKey, attempts: keyAttempts))
        admin.on(Endpoints.adminUsers, use: adminUsers)
        admin.on(Endpoints.adminUser, use: adminUser)
        admin.on(Endpoints.adminDisableUser, use: adminDisableUser)
        admin.on(Endpoints.adminEnableUser, use: adminEnableUser)
        admin.on(Endpoints.adminDeleteUser, use: adminDeleteUser)
        admin.on(Endpoints.adminSetPlan, use: adminSetPlan)
        admin.on(Endpoints.adminSetMetadata, use: adminSetMetadata)
        admin.on(Endpoints.adminMFAFactors, use: adminMFAFactors)
        admin.on(Endpoints.adminDeleteMFAFactor, use: adminDeleteMFAFactor)
        admin.on(Endpoints.adminCreateGrant, use: adminCreateGrant)
        admin.on(Endpoints.adminGrants, use: adminGrants)
        admin.on(Endpoints.adminRevokeGrant, use: adminRevokeGrant)
        admin.on(Endpoints.adminEvents, use: adminEvents)
        admin.on(Endpoints.adminAudit, use: adminAudit)
        admin.on(Endpoints.adminTestMail, use: adminTestMail)
        admin.on(Endpoints.adminImportFirebase, use: adminImportFirebase)
        admin.on(Endpoints.adminImportSupabase, use: adminImportSupabase)
        admin.on(Endpoints.adminKeys, use: adminKeys)
        admin.on(Endpoints.adminRotateKeys, use: adminRotateKeys)
        admin.on(Endpoints.adminCreateOAuthClient, use: adminCreateOAuthClient)
        admin.on(Endpoints.adminOAuthClients, use: adminOAuthClients)
        admin.on(Endpoints.adminRotateOAuthClientSecret, use: adminRotateOAuthClientSecret)
        admin.on(Endpoints.adminDeleteOAuthClient, use: adminDeleteOAuthClient)
    }

    // MARK: The OpenID provider's clients

    @Sendable func adminCreateOAuthClient(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(OAuthClientRequest.self, limit: self.bodyLimit)
        return try JSONBody.response(try await clients.create(body, by: OperatorService.operatorActor, client: nil), status: .created, headers: noStore)
    }

    @Sendable func adminOAuthClients(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(try await clients.list())
    }

    @Sendable func adminRotateOAuthClientSecret(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(
            try await clients.rotateSecret(try context.parameters.require("client"), by: OperatorService.operatorActor, client: nil), headers: noStore)
    }

    @Sendable func adminDeleteOAuthClient(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await clients.delete(try context.parameters.require("client"), by: OperatorService.operatorActor, client: nil)
        return JSONBody.empty()
    }

    @Sendable func adminUsers(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let limitText = query["limit"].map(String.init)
        guard let limit = Int(limitText ?? "50") else { throw GatehouseError.invalidRequest("The limit must be a number.") }
        return try JSONBody.response(
            try await self.users.list(
                search: query["q"].map(String.init), cursor: query["before"].map(String.init), limit: limit))
    }

    @Sendable func adminUser(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(try await self.users.show(try context.parameters.require("id")))
    }

    @Sendable func adminDisableUser(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(DisableUserRequest.self, limit: self.bodyLimit)
        return try JSONBody.response(try await self.users.disable(try context.parameters.require("id"), reason: body.reason))
    }

    @Sendable func adminEnableUser(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(try await self.users.enable(try context.parameters.require("id")))
    }

    @Sendable func adminDeleteUser(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await self.users.delete(try context.parameters.require("id"))
        return JSONBody.empty()
    }

    @Sendable func adminSetPlan(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(PlanOverrideRequest.self, limit: self.bodyLimit)
        return try JSONBody.response(try await self.users.setPlanOverride(try context.parameters.require("id"), plan: body.plan))
    }

    /// Merges the body's objects into the account's metadata (`OperatorService.setMetadata`:
    /// top level, `null` removes a key, 4096 bytes each) and answers the account as
    /// `GET /admin/v1/users/{id}` does.
    @Sendable func adminSetMetadata(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(AdminMetadataRequest.self, limit: self.bodyLimit)
        let reference = try context.parameters.require("id")
        try await self.users.setMetadata(reference, userMetadata: body.userMetadata, appMetadata: body.appMetadata)
        return try JSONBody.response(try await self.users.show(reference))
    }

    @Sendable func adminMFAFactors(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(try await self.users.factors(try context.parameters.require("id")))
    }

    @Sendable func adminDeleteMFAFactor(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await self.users.removeFactor(try context.parameters.require("id"), factor: try context.parameters.require("factor"))
        return JSONBody.empty()
    }

    @Sendable func adminCreateGrant(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(GrantRequest.self, limit: self.bodyLimit)
        return try JSONBody.response(
            GrantResponse(grant: try await self.users.createGrant(try context.parameters.require("id"), body)), status: .created)
    }

    @Sendable func adminGrants(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(try await self.users.grants(try context.parameters.require("id")))
    }

    @Sendable func adminRevokeGrant(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await self.users.revokeGrant(try context.parameters.require("id"), grant: try context.parameters.require("grant"))
        return JSONBody.empty()
    }

    @Sendable func adminEvents(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let page = try PageQuery(
            limit: query["limit"].map(String.init), default: 100, range: 1...1000, cursor: query["after"].map(String.init),
            allowsNegative: false)
        let found = try await self.users.events(user: nil, page)
        return try JSONBody.response(
            EventList(events: found.rows.map(EventEntry.init), nextCursor: found.rows.last?.sequence.map { String($0) } ?? page.cursorText))
    }

    @Sendable func adminAudit(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        // The limit is checked first, then the user, then the cursor.
        var page = try PageQuery(limit: query["limit"].map(String.init), default: 100, range: 1...500, cursor: nil, allowsNegative: true)
        var user: UserID?
        if let text = query["user_id"].map(String.init) {
            guard let parsed = UserID(text) else { throw GatehouseError.invalidRequest("The user_id is not valid.") }
            user = parsed
        }
        try page.readCursor(query["before"].map(String.init), allowsNegative: true)
        let found = try await self.users.audit(user: user, page)
        return try JSONBody.response(
            AuditList(events: found.rows.map(AuditEntry.init), nextCursor: found.more ? found.rows.last?.sequence.map { String($0) } : nil))
    }

    @Sendable func adminTestMail(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(MailTestRequest.self, limit: self.bodyLimit)
        let id = try await self.operatorMail.sendTest(to: body.to, by: OperatorService.operatorActor, client: nil)
        return try JSONBody.response(MailQueued(id: id.uuidString.lowercased()), status: .accepted)
    }

    @Sendable func adminImportFirebase(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(FirebaseImportRequest.self, limit: self.bodyLimit)
        return try JSONBody.response(try await self.imports.firebase(body))
    }

    @Sendable func adminImportSupabase(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(SupabaseImportRequest.self, limit: self.bodyLimit)
        return try JSONBody.response(try await self.imports.supabase(body))
    }

    @Sendable func adminKeys(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(self.keys.jwks)
    }

    @Sendable func adminRotateKeys(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await self.operatorKeys.rotate(by: OperatorService.operatorActor, client: nil)
        return try JSONBody.response(self.keys.jwks)
    }
}

/// Lets a request through only with `Authorization: Bearer <key>`: the admin key, or the
/// service key of the app's backends (none configured: nobody passes).
struct BearerKeyMiddleware: RouterMiddleware {
    typealias Context = GatehouseRequestContext
    let key: AdminKey?
    var name = "admin key"
    /// For the operator's keys (admin, service role): each try is reserved against the client's
    /// address before the key is compared (finding 7 of issue 40: forty wrong keys all answered
    /// 401). nil for the app backend's service key and the metrics token, called at volume from
    /// one address.
    var attempts: OperatorKeyAttempts? = nil

    func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        let reserved = try await attempts?.reserve(name, request, context)
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer "),
            key?.matches(String(header.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)) == true
        else {
            throw GatehouseError.unauthorized("The \(name) is missing or wrong.")
        }
        if let reserved { try await attempts?.throttle.clearKeyAttempts(reserved) }
        return try await next(request, context)
    }
}

/// What `BearerKeyMiddleware` needs to count an operator key's tries per client address.
struct OperatorKeyAttempts: Sendable {
    let throttle: Throttle
    let resolver: ClientAddressResolver

    func reserve(_ name: String, _ request: Request, _ context: GatehouseRequestContext) async throws -> String {
        try await throttle.reserveKeyAttempt(name, client: resolver.client(request, context.peerAddress))
    }
}
