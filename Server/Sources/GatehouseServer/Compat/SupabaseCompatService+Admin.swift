import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// `/auth/v1`'s service-role calls: GoTrue's admin API on Gatehouse's operator actions
/// (`OperatorService`, `OperatorClientsService`), so each is audited with `by` as any
/// operator's is.
extension SupabaseCompatService {
    static let serviceRole = "service_role"

    /// `GET /admin/users?page=&per_page=`: GoTrue counts pages from 1; Gatehouse's list walks
    /// its cursor to the page asked for. `total` is every account's count, for GoTrue's
    /// `X-Total-Count` and `Link` headers (what supabase-swift and supabase-js page with).
    func listUsers(page: Int, perPage: Int) async throws -> (list: GoTrueUserList, total: Int) {
        guard page >= 1, (1...200).contains(perPage) else {
            throw GatehouseError.invalidRequest("page must be 1 or more and per_page 1 to 200.")
        }
        let total = try await store.userCount()
        var cursor: String?
        var listed: AdminUserList?
        for _ in 1...page {
            if listed != nil, cursor == nil { return (GoTrueUserList(users: [], aud: GoTrueUser.audience), total) }
            listed = try await users.list(search: nil, cursor: cursor, limit: perPage)
            cursor = listed?.nextCursor
        }
        var found: [GoTrueUser] = []
        for entry in listed?.users ?? [] {
            if let id = UserID(entry.user.id) { found.append(try await goTrueUser(id: id)) }
        }
        return (GoTrueUserList(users: found, aud: GoTrueUser.audience), total)
    }

    /// `POST /admin/users`: `user_metadata` (the profile's keys to the profile, the rest kept as
    /// they are) and `app_metadata` set with the account.
    func createUser(_ body: GoTrueAdminUser) async throws -> GoTrueUser {
        guard let email = body.email else { throw GatehouseError.invalidRequest("An email address is needed.") }
        let name = GoTrueMetadata.patch(from: body.userMetadata)?.displayName
        let user = try await passwords.createByOperator(
            email: email, password: body.password, passwordHash: body.passwordHash, emailConfirmed: body.emailConfirm ?? false,
            displayName: name, userMetadata: body.userMetadata ?? [:], appMetadata: body.appMetadata ?? [:])
        return try await goTrueUser(user)
    }

    func getUser(_ id: String) async throws -> GoTrueUser {
        try await goTrueUser(id: try userID(id))
    }

    /// `PUT /admin/users/{id}`: a password, an address (`email`, unverified unless
    /// `email_confirm`), `email_confirm` alone, a ban (`ban_duration`, `none` lifts it), and
    /// both metadata objects (merged at the top level).
    func updateUser(_ id: String, _ body: GoTrueAdminUser) async throws -> GoTrueUser {
        let userID = try userID(id)
        guard let user = try await store.user(id: userID) else { throw Self.noUser }
        try GoTrueMetadata.checkSize(body.userMetadata, kind: .user)
        try GoTrueMetadata.checkSize(body.appMetadata, kind: .app)
        if let password = body.password { try await passwords.setByOperator(user, password: password) }
        if let email = body.email ?? (body.emailConfirm == true ? user.email : nil) {
            do {
                try await users.changeEmail(id, to: email, verified: body.emailConfirm ?? false, by: Self.serviceRole)
            } catch let error as GatehouseError where error.code == .emailInUse {
                throw GoTrueError(status: 422, .emailExists, "A user with this email address has already been registered")
            }
        }
        if let ban = body.banDuration {
            if ban == "none" {
                _ = try await users.enable(id, by: Self.serviceRole)
            } else {
                _ = try await users.disable(id, reason: "banned with ban_duration \(ban)", by: Self.serviceRole)
            }
        }
        if var patch = GoTrueMetadata.patch(from: body.userMetadata), let fresh = try await store.user(id: userID) {
            // The profile's keys here; the object itself below, as the operator's write.
            patch.userMetadata = nil
            _ = try await profiles.patch(user: fresh, patch, by: .operator)
        }
        try await users.setMetadata(id, userMetadata: body.userMetadata, appMetadata: body.appMetadata, by: Self.serviceRole)
        return try await goTrueUser(id: userID)
    }

    func deleteUser(_ id: String) async throws {
        _ = try userID(id)
        try await users.delete(id, by: Self.serviceRole)
    }

    // MARK: Second factors

    /// `GET /admin/users/{id}/factors`: every factor, confirmed or not (never a secret).
    func factors(of id: String) async throws -> [GoTrueFactor] {
        let userID = try userID(id)
        guard try await store.user(id: userID) != nil else { throw Self.noUser }
        return try await store.mfaFactors(of: userID).map(GoTrueFactor.init)
    }

    /// `DELETE /admin/users/{id}/factors/{factor}`: support's removal (`OperatorService`), audited
    /// and mailed to the account as any operator's is.
    func deleteFactor(of id: String, factor: String) async throws -> [String: String] {
        let userID = try userID(id)
        guard let uuid = UUID(uuidString: factor), try await store.mfaFactors(of: userID).contains(where: { $0.id == uuid }) else {
            throw GoTrueError(status: 404, .mfaFactorNotFound, "Factor not found")
        }
        try await users.removeFactor(id, factor: factor, by: Self.serviceRole)
        return ["id": uuid.uuidString.lowercased()]
    }

    // MARK: OAuth clients

    /// `GET /admin/oauth/clients`: every client of the OpenID provider, without secrets.
    func oauthClients() async throws -> GoTrueOAuthClientList {
        let clients = try await clients.list().clients
        return GoTrueOAuthClientList(clients: clients.map { GoTrueOAuthClient($0) }, aud: GoTrueUser.audience)
    }

    /// `POST /admin/oauth/clients`: a client of the provider, confidential unless
    /// `token_endpoint_auth_method` is `none`; the secret is in this answer only.
    func createOAuthClient(_ body: GoTrueOAuthClientRequest, client: ClientInfo) async throws -> GoTrueOAuthClient {
        let isPublic = body.tokenEndpointAuthMethod == "none" || body.clientType == "public"
        let scopes = OAuthScope.words(body.scope ?? "openid email profile")
        let request = OAuthClientRequest(
            name: body.clientName ?? "", redirectURIs: body.redirectURIs ?? [], scopes: scopes, isPublic: isPublic)
        return GoTrueOAuthClient(try await clients.create(request, by: Self.serviceRole, client: client))
    }

    func oauthClient(_ id: String) async throws -> GoTrueOAuthClient {
        GoTrueOAuthClient(OperatorClientsService.payload(try await knownClient(id), secret: nil))
    }

    /// `PUT /admin/oauth/clients/{id}`: its `client_name` and `redirect_uris`; other fields are
    /// refused (400), not dropped.
    func updateOAuthClient(_ id: String, _ body: GoTrueOAuthClientRequest, client: ClientInfo) async throws -> GoTrueOAuthClient {
        _ = try await knownClient(id)
        guard body.scope == nil, body.clientType == nil, body.tokenEndpointAuthMethod == nil else {
            throw GatehouseError.invalidRequest("Only client_name and redirect_uris can be changed; register a new client for the rest.")
        }
        guard body.clientName != nil || body.redirectURIs != nil else { throw GatehouseError.invalidRequest("No fields provided for update") }
        return GoTrueOAuthClient(
            try await clients.update(id, name: body.clientName, redirectURIs: body.redirectURIs, by: Self.serviceRole, client: client))
    }

    /// `POST /admin/oauth/clients/{id}/regenerate_secret`.
    func regenerateSecret(_ id: String, client: ClientInfo) async throws -> GoTrueOAuthClient {
        let found = try await knownClient(id)
        guard !found.isPublic else { throw GatehouseError.invalidRequest("Cannot regenerate secret for public client") }
        return GoTrueOAuthClient(try await clients.rotateSecret(id, by: Self.serviceRole, client: client))
    }

    /// `DELETE /admin/oauth/clients/{id}`: its codes, consents and sessions end with it.
    func deleteOAuthClient(_ id: String, client: ClientInfo) async throws {
        _ = try await knownClient(id)
        try await clients.delete(id, by: Self.serviceRole, client: client)
    }

    private func knownClient(_ id: String) async throws -> OAuthClient {
        do {
            return try await clients.find(id)
        } catch let error as GatehouseError where error.code == .notFound {
            throw GoTrueError(status: 404, .oauthClientNotFound, "OAuth client not found")
        }
    }
}
