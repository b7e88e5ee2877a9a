import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/me`: the signed-in account itself (read, change, delete, export, choose a suggested
/// name), and `/v1/handles/{handle}`, whether a handle is free.
struct MeController {
    let profiles: ProfileService
    let account: AccountService
    let export: ExportService
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>, signedIn: SignedInRoutes) {
        router.on(Endpoints.handleAvailability, use: handle)
        signedIn.on(Endpoints.me, use: me)
        signedIn.on(Endpoints.updateProfile, use: patch)
        signedIn.on(Endpoints.deleteAccount, use: delete)
        signedIn.on(Endpoints.chooseAnonymousName, use: chooseName)
        signedIn.on(Endpoints.exportData, use: export)
    }

    @Sendable func handle(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(try await profiles.availability(try context.parameters.require("handle")))
    }

    @Sendable func me(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try JSONBody.response(try await profiles.me(context.signedIn))
    }

    @Sendable func patch(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(ProfilePatch.self, request)
        return try JSONBody.response(try await profiles.patch(context.signedIn, body))
    }

    @Sendable func delete(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(DeleteAccountRequest.self, request)
        try await account.delete(context.signedIn, body, client: input.client(request, context))
        return JSONBody.empty()
    }

    @Sendable func chooseName(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(AnonymousNameRequest.self, request)
        return try JSONBody.response(try await profiles.chooseName(context.signedIn, name: body.name))
    }

    @Sendable func export(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try JSONBody.response(try await self.export.export(context.signedIn), headers: noStore)
    }
}
