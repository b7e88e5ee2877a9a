import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Hummingbird

/// `/admin/v1`: operator calls, behind the admin key.
struct AdminController {
    let users: UserAdminService
    let imports: ImportService
    let mfa: MFAService
    let keys: KeyRing
    let adminKey: AdminKey
    let keyAttempts: OperatorKeyAttempts
    let testMail: TestMailService
    let bodyLimit: Int
    let metrics: ServerMetrics
    /// How long a retired signing key stays published: the longest access-token life plus leeway.
    let retiredKeyPublishSeconds: Int

    func register(on router: Router<GatehouseRequestContext>) {
        let admin = router.group().add(middleware: BearerKeyMiddleware(key: adminKey, attempts: keyAttempts))
        admin.on(Endpoints.adminUsers) { request, _ in
            let query = request.uri.queryParameters
            let limitText = query["limit"].map(String.init)
            guard let limit = Int(limitText ?? "50") else { throw GatehouseError.invalidRequest("The limit must be a number.") }
            return try JSONBody.response(
                try await self.users.list(
                    search: query["q"].map(String.init), cursor: query["before"].map(String.init), limit: limit))
        }
        admin.on(Endpoints.adminUser) { _, context in
            try JSONBody.response(try await self.users.show(try context.parameters.require("id")))
        }
        admin.on(Endpoints.adminDisableUser) { request, context in
            let body = try await request.decodeJSON(DisableUserRequest.self, limit: self.bodyLimit)
            return try JSONBody.response(try await self.users.disable(try context.parameters.require("id"), reason: body.reason))
        }
        admin.on(Endpoints.adminEnableUser) { _, context in
            try JSONBody.response(try await self.users.enable(try context.parameters.require("id")))
        }
        admin.on(Endpoints.adminDeleteUser) { _, context in
            try await self.users.delete(try context.parameters.require("id"))
            return JSONBody.empty()
        }
        admin.on(Endpoints.adminSetPlan) { request, context in
            let body = try await request.decodeJSON(PlanOverrideRequest.self, limit: self.bodyLimit)
            return try JSONBody.response(try await self.users.setPlanOverride(try context.parameters.require("id"), plan: body.plan))
        }
        admin.on(Endpoints.adminMFAFactors) { _, context in
            try JSONBody.response(try await self.mfa.adminFactors(try context.parameters.require("id")))
        }
        admin.on(Endpoints.adminDeleteMFAFactor) { _, context in
            try await self.mfa.adminRemove(try context.parameters.require("id"), factor: try context.parameters.require("factor"))
            return JSONBody.empty()
        }
        admin.on(Endpoints.adminEvents) { request, _ in
            let query = request.uri.queryParameters
            let page = try PageQuery(
                limit: query["limit"].map(String.init), default: 100, range: 1...1000, cursor: query["after"].map(String.init),
                allowsNegative: false)
            return try JSONBody.response(try await self.users.events(page))
        }
        admin.on(Endpoints.adminAudit) { request, _ in
            let query = request.uri.queryParameters
            // The limit is checked first, then the user, then the cursor.
            var page = try PageQuery(limit: query["limit"].map(String.init), default: 100, range: 1...500, cursor: nil, allowsNegative: true)
            var user: UserID?
            if let text = query["user_id"].map(String.init) {
                guard let parsed = UserID(text) else { throw GatehouseError.invalidRequest("The user_id is not valid.") }
                user = parsed
            }
            try page.readCursor(query["before"].map(String.init), allowsNegative: true)
            return try JSONBody.response(try await self.users.audit(user: user, page))
        }
        admin.on(Endpoints.adminTestMail) { request, _ in
            let body = try await request.decodeJSON(MailTestRequest.self, limit: self.bodyLimit)
            let id = try await self.testMail.send(to: body.to)
            return try JSONBody.response(MailQueued(id: id.uuidString.lowercased()), status: .accepted)
        }
        admin.on(Endpoints.adminImportFirebase) { request, _ in
            let body = try await request.decodeJSON(FirebaseImportRequest.self, limit: self.bodyLimit)
            return try JSONBody.response(try await self.imports.firebase(body))
        }
        admin.on(Endpoints.adminImportSupabase) { request, _ in
            let body = try await request.decodeJSON(SupabaseImportRequest.self, limit: self.bodyLimit)
            return try JSONBody.response(try await self.imports.supabase(body))
        }
        admin.on(Endpoints.adminKeys) { _, _ in
            try JSONBody.response(self.keys.jwks)
        }
        admin.on(Endpoints.adminRotateKeys) { _, _ in
            try await self.keys.rotate(keepPublishedFor: self.retiredKeyPublishSeconds)
            self.metrics.keyRotation()
            return try JSONBody.response(self.keys.jwks)
        }
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

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
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
