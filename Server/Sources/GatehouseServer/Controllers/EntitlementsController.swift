import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/entitlements`, gate checks, credits, trials and usage meters.
struct EntitlementsController {
    let entitlements: EntitlementService
    let usage: UsageService
    /// The app backends' key for `/v1/usage/{meter}`; nil when none is configured.
    let serviceKey: AdminKey?
    let authenticator: Authenticator
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>, signedIn: SignedInRoutes) {
        router.on(Endpoints.entitlements, use: snapshot)
        router.on(Endpoints.checkEntitlement, use: check)
        signedIn.on(Endpoints.spendCredit, use: spend)
        signedIn.on(Endpoints.startTrial, use: startTrial)
        // From the app's own backend, with the service key: the end user is named in the body.
        router.group().add(middleware: BearerKeyMiddleware(key: serviceKey, name: "service key")).on(Endpoints.recordUsage, use: use)
    }

    /// A guest (no token) gets the guest snapshot and nothing is stored; a bad token is refused.
    @Sendable func snapshot(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let user = try await request.optionalUser(authenticator)
        return try JSONBody.response(try await entitlements.snapshot(user), headers: noStore)
    }

    @Sendable func check(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let signedIn = try await request.optionalSignedIn(authenticator)
        let body = try await input.body(EntitlementCheckRequest.self, request)
        return try JSONBody.response(
            try await entitlements.check(signedIn, action: body.action, context: body.context ?? [:]), headers: noStore)
    }

    @Sendable func spend(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(CreditSpendRequest.self, request)
        return try JSONBody.response(try await entitlements.spend(context.user, credit: try context.parameters.require("name"), request: body))
    }

    @Sendable func startTrial(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try JSONBody.response(try await entitlements.startTrial(context.user))
    }

    @Sendable func use(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(UsageRequest.self, request)
        return try JSONBody.response(try await usage.use(try context.parameters.require("meter"), request: body), headers: noStore)
    }
}
