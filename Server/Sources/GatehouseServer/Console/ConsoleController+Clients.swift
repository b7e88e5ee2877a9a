import Foundation
import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// The OpenID provider's clients in the console (issue 45), over `OperatorClientsService` as the
/// admin API's `/admin/v1/oauth/clients` is. Registering a client and rotating its secret are
/// the two forms answered with a page rather than a redirect: the new secret is on that answer
/// (`no-store`) and in no URL, cookie or later page. Deleting answers with a redirect.
extension ConsoleController {
    @Sendable func clientsList(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await page(request, context) { try await clientsPage() }
    }

    @Sendable func createClient(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await action(request, context, onError: { try await clientsPage() }) { session, form, client in
            let made = try await clients.create(ConsoleViews.clientRequest(form), by: ConsoleService.actor, client: client)
            return try await showingSecret(of: made, notice: "client_created", session: session, status: .created)
        }
    }

    /// A confidential client's new secret; the old one stops working at once.
    @Sendable func rotateClientSecret(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await action(request, context, onError: { try await clientsPage() }) { session, _, client in
            let rotated = try await clients.rotateSecret(try context.parameters.require("client"), by: ConsoleService.actor, client: client)
            return try await showingSecret(of: rotated, notice: "client_secret_rotated", session: session, status: .ok)
        }
    }

    /// Deletes the client (its codes, consents and sessions go with it) when the form's
    /// confirmation is exactly its id.
    @Sendable func deleteClient(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await action(request, context, onError: { try await clientsPage() }) { _, form, client in
            let id = try context.parameters.require("client")
            guard form["confirm"] ?? "" == id else {
                throw ConsoleService.Refusal(code: "confirmation_mismatch", message: "Type \(id) exactly to delete this client.")
            }
            try await clients.delete(id, by: ConsoleService.actor, client: client)
            return redirect("/admin/clients", notice: "client_deleted")
        }
    }

    private func clientsPage(shown: OAuthClientPayload? = nil) async throws -> ConsoleViews.Page {
        views.clients(try await clients.list(), shown: shown)
    }

    /// The clients page with `client`'s new secret on it, this once.
    private func showingSecret(
        of client: OAuthClientPayload, notice: String, session: ConsoleCookies.Session, status: HTTPResponse.Status
    ) async throws -> Response {
        var page = try await clientsPage(shown: client)
        page.notice = notice
        return render(page, session: session, status: status)
    }
}
