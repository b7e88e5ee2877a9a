import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The OpenID provider's clients, as operators register them (issue 45): the admin API
/// (`/admin/v1/oauth/clients`) and the console are presenters over it. Every action is audited with `by`, like the other operator actions.
struct OperatorClientsService: Sendable {
    typealias Stores = any OAuthClientStore & OAuthGrantStore & SessionStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    /// The `aud` of the app's own access tokens: no client's tokens may carry it, so that the
    /// app's routes never take a client's token for one of theirs.
    let appAudience: String
    let clock: any WallClock

    static let maximumURIs = 20
    /// Clients registered before issue 46 have ids of this prefix; newer ones a lowercase UUID,
    /// the form GoTrue's OAuth server gives (and Supabase's admin clients check).
    static let clientIDPrefix = "gh_"

    /// Whether `text` has the form of a client's id, old or new.
    static func looksLikeClientID(_ text: String) -> Bool {
        text.hasPrefix(clientIDPrefix) || UUID(uuidString: text) != nil
    }

    func find(_ id: String) async throws -> OAuthClient {
        guard let found = try await store.oauthClient(id: id) else { throw GatehouseError.notFound("No such client.") }
        return found
    }

    /// `POST /admin/v1/oauth/clients`: the secret of a confidential client is in this answer
    /// only; the store keeps its SHA-256.
    func create(_ request: OAuthClientRequest, by actor: String, client caller: ClientInfo?) async throws -> OAuthClientPayload {
        let name = request.name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...100).contains(name.count) else { throw GatehouseError.invalidRequest("Give the client a name of up to 100 characters.") }
        let scopes = OAuthScope.words(request.scopes.joined(separator: " "))
        // A backend that only uses client_credentials (API scopes alone) signs nobody in.
        let signsPeopleIn = scopes.contains { OAuthScope(rawValue: $0) != nil }
        try Self.checkURIs(request.redirectURIs, field: "redirect_uris", required: signsPeopleIn || request.isPublic)
        try Self.checkURIs(request.postLogoutRedirectURIs ?? [], field: "post_logout_redirect_uris", required: false)
        if let start = request.initiateLoginURI { try Self.checkURIs([start], field: "initiate_login_uri", required: true) }
        guard !scopes.isEmpty, scopes.allSatisfy({ OAuthScope(rawValue: $0) != nil || OAuthScope.isAPIScope($0) }) else {
            throw GatehouseError.invalidRequest(
                "scopes are openid, email, profile, offline_access, or API scopes of lowercase letters, digits and :._- (e.g. api:read).")
        }
        if request.isPublic, scopes.contains(where: OAuthScope.isAPIScope) {
            throw GatehouseError.invalidRequest("API scopes are for confidential clients (client_credentials); a public client has none.")
        }
        if let audience = request.audience {
            // Not the app's own audience, and not a client's id (another client's tokens carry
            // its id as their audience by default).
            guard (1...200).contains(audience.count), audience == audience.trimmingCharacters(in: .whitespacesAndNewlines),
                audience != appAudience, !Self.looksLikeClientID(audience)
            else {
                throw GatehouseError.invalidRequest("audience must name a resource server: not the app's own token audience, nor a client's id.")
            }
        }
        let limit = request.rateLimitPerMinute ?? OAuthClient.defaultRateLimitPerMinute
        guard (1...100_000).contains(limit) else { throw GatehouseError.invalidRequest("rate_limit_per_minute is between 1 and 100000.") }
        let secret = request.isPublic ? nil : Self.newSecret()
        let record = OAuthClient(
            id: UUIDText.lowercase(SecureRandom.uuid()), name: name, secretHash: secret.map { StoredSecret.hash($0) }, isPublic: request.isPublic,
            firstParty: request.firstParty ?? false, redirectURIs: request.redirectURIs, postLogoutRedirectURIs: request.postLogoutRedirectURIs ?? [],
            scopes: scopes, audience: request.audience, initiateLoginURI: request.initiateLoginURI, rateLimitPerMinute: limit, createdAt: clock.now)
        try await unitOfWork.run(client: caller) { work in
            try await work.tx.insertOAuthClient(record)
            try await work.audit(
                .oauthClientCreated, user: nil,
                details: ["by": actor, "client_id": record.id, "public": String(record.isPublic), "first_party": String(record.firstParty)])
        }
        return Self.payload(record, secret: secret)
    }

    /// `GET /admin/v1/oauth/clients`.
    func list() async throws -> OAuthClientList {
        OAuthClientList(clients: try await store.oauthClients().map { Self.payload($0, secret: nil) })
    }

    /// A client's name and redirect URIs, under the rules of its registration; its codes, consents
    /// and sessions stay (a code is still exchanged only at the redirect URI it was issued for).
    func update(_ id: String, name: String?, redirectURIs: [String]?, by actor: String, client caller: ClientInfo?) async throws -> OAuthClientPayload {
        let found = try await find(id)
        let newName = (name ?? found.name).trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...100).contains(newName.count) else { throw GatehouseError.invalidRequest("Give the client a name of up to 100 characters.") }
        let uris = redirectURIs ?? found.redirectURIs
        let signsPeopleIn = found.scopes.contains { OAuthScope(rawValue: $0) != nil }
        try Self.checkURIs(uris, field: "redirect_uris", required: signsPeopleIn || found.isPublic)
        try await unitOfWork.run(client: caller) { work in
            guard try await work.tx.updateOAuthClient(id: id, name: newName, redirectURIs: uris) else { throw GatehouseError.notFound("No such client.") }
            try await work.audit(.oauthClientUpdated, user: nil, details: ["by": actor, "client_id": id])
        }
        var updated = found
        (updated.name, updated.redirectURIs) = (newName, uris)
        return Self.payload(updated, secret: nil)
    }

    /// `POST /admin/v1/oauth/clients/{client}/secret`: a new secret, shown once; the old one
    /// stops working at once.
    func rotateSecret(_ id: String, by actor: String, client caller: ClientInfo?) async throws -> OAuthClientPayload {
        guard let found = try await store.oauthClient(id: id) else { throw GatehouseError.notFound("No such client.") }
        guard !found.isPublic else { throw GatehouseError.invalidRequest("A public client has no secret.") }
        let secret = Self.newSecret()
        try await unitOfWork.run(client: caller) { work in
            guard try await work.tx.replaceOAuthClientSecret(id: id, hash: StoredSecret.hash(secret)) else {
                throw GatehouseError.notFound("No such client.")
            }
            try await work.audit(.oauthClientSecretRotated, user: nil, details: ["by": actor, "client_id": id])
        }
        return Self.payload(found, secret: secret)
    }

    /// `DELETE /admin/v1/oauth/clients/{client}`: the client's codes and consents go, and every
    /// session it holds ends, in one transaction.
    func delete(_ id: String, by actor: String, client caller: ClientInfo?) async throws {
        try await unitOfWork.run(client: caller) { work in
            let ended = try await work.tx.revokeClientSessions(clientID: id, of: nil, reason: .oauthClientDeleted, at: work.now)
            guard try await work.tx.deleteOAuthClient(id: id) else { throw GatehouseError.notFound("No such client.") }
            try await work.audit(.oauthClientDeleted, user: nil, details: ["by": actor, "client_id": id, "sessions": String(ended.count)])
        }
    }

    /// 256 random bits.
    private static func newSecret() -> String { "ghs_" + randomToken(bytes: 32) }

    /// Exact URIs without fragments: `https`, `http` only on a loopback host (RFC 8252 §7.3),
    /// or an app's private-use scheme with a dot (`com.example.app:/callback`, §7.1). A URI is
    /// compared byte for byte, so nothing in it may stand for more than itself or read two
    /// ways (issue 60): no wildcard (`*`), no whitespace or control character, no backslash, no
    /// user information (`evil@app.example`), no percent-encoded host.
    static func checkURIs(_ uris: [String], field: String, required: Bool) throws {
        guard !required || !uris.isEmpty, uris.count <= maximumURIs else {
            throw GatehouseError.invalidRequest("\(field) needs 1 to \(maximumURIs) URIs.")
        }
        for uri in uris {
            let plain = uri.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F && !"*\\\"<>^`{|}".unicodeScalars.contains($0) }
            guard plain else {
                throw GatehouseError.invalidRequest("\(field): '\(uri)' may not hold wildcards, spaces, control characters or backslashes.")
            }
            guard uri.count <= 2000, let components = URLComponents(string: uri), let scheme = components.scheme?.lowercased(),
                components.fragment == nil, components.user == nil, components.password == nil, !(components.percentEncodedHost ?? "").contains("%")
            else { throw GatehouseError.invalidRequest("\(field): '\(uri)' is not an absolute URI without a fragment or user information.") }
            let host = components.host?.lowercased() ?? ""
            let allowed =
                switch scheme {
                case "https": !host.isEmpty
                case "http": ["localhost", "127.0.0.1", "[::1]", "::1"].contains(host)
                case "javascript", "data", "file", "vbscript": false
                default: scheme.contains(".")
                }
            guard allowed else {
                throw GatehouseError.invalidRequest("\(field): '\(uri)' must be https, http on a loopback host, or an app's reverse-DNS scheme.")
            }
        }
    }

    static func payload(_ client: OAuthClient, secret: String?) -> OAuthClientPayload {
        OAuthClientPayload(
            clientID: client.id, clientSecret: secret, name: client.name, redirectURIs: client.redirectURIs,
            postLogoutRedirectURIs: client.postLogoutRedirectURIs, scopes: client.scopes, isPublic: client.isPublic,
            firstParty: client.firstParty, audience: client.audience, initiateLoginURI: client.initiateLoginURI,
            rateLimitPerMinute: client.rateLimitPerMinute, createdAt: client.createdAt.rfc3339)
    }
}
