import Foundation
import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// The service role's routes of `/auth/v1` added with issue 46: a user's second factors,
/// invitations, generated links and the OpenID provider's clients. Mounted by
/// `SupabaseController` behind the service role key.
struct SupabaseAdminHandlers {
    let compat: SupabaseCompatService
    let input: HTTPInput

    func register(on admin: RouterGroup<GatehouseRequestContext>) {
        admin.on(GoTrueRoutes.adminFactors, use: factors)
        admin.on(GoTrueRoutes.adminDeleteFactor, use: deleteFactor)
        admin.on(GoTrueRoutes.invite, use: invite)
        admin.on(GoTrueRoutes.generateLink, use: generateLink)
        admin.on(GoTrueRoutes.oauthClients, use: oauthClients)
        admin.on(GoTrueRoutes.createOAuthClient, use: createOAuthClient)
        admin.on(GoTrueRoutes.oauthClient, use: oauthClient)
        admin.on(GoTrueRoutes.updateOAuthClient, use: updateOAuthClient)
        admin.on(GoTrueRoutes.deleteOAuthClient, use: deleteOAuthClient)
        admin.on(GoTrueRoutes.regenerateSecret, use: regenerateSecret)
    }

    @Sendable func factors(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(try await compat.factors(of: try context.parameters.require("id")), headers: noStore)
    }

    @Sendable func deleteFactor(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(
            try await compat.deleteFactor(of: try context.parameters.require("id"), factor: try context.parameters.require("factor_id")))
    }

    @Sendable func invite(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueInvite.self, request)
        let user = try await compat.invite(
            body, redirectTo: request.uri.queryParameters["redirect_to"].map(String.init), client: input.client(request, context))
        return try JSONBody.response(user, headers: noStore)
    }

    @Sendable func generateLink(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueGenerateLink.self, request)
        let link = try await compat.generateLink(body, redirectTo: request.uri.queryParameters["redirect_to"].map(String.init))
        return try JSONBody.response(link, headers: noStore)
    }

    @Sendable func oauthClients(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let list = try await compat.oauthClients()
        var headers = noStore
        headers[.totalCount] = String(list.clients.count)
        return try JSONBody.response(list, headers: headers)
    }

    @Sendable func createOAuthClient(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueOAuthClientRequest.self, request)
        let created = try await compat.createOAuthClient(body, client: input.client(request, context))
        return try JSONBody.response(created, status: .created, headers: noStore)
    }

    @Sendable func oauthClient(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(try await compat.oauthClient(try context.parameters.require("client_id")), headers: noStore)
    }

    @Sendable func updateOAuthClient(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(GoTrueOAuthClientRequest.self, request)
        let updated = try await compat.updateOAuthClient(try context.parameters.require("client_id"), body, client: input.client(request, context))
        return try JSONBody.response(updated, headers: noStore)
    }

    @Sendable func deleteOAuthClient(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await compat.deleteOAuthClient(try context.parameters.require("client_id"), client: input.client(request, context))
        return Response(status: .noContent, headers: noStore)
    }

    @Sendable func regenerateSecret(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let rotated = try await compat.regenerateSecret(try context.parameters.require("client_id"), client: input.client(request, context))
        return try JSONBody.response(rotated, headers: noStore)
    }
}
