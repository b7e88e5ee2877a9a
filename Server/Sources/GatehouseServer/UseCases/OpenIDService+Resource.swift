import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The resource side: userinfo, revocation (RFC 7009) and introspection (RFC 7662).
extension OpenIDService {
    /// The person and session behind a provider access token whose session is still live.
    private func holder(of token: String) async throws -> (OAuthAccessTokenClaims, User, Session)? {
        guard let claims = await tokens.verifyAccessToken(token), let sid = claims.sid.flatMap(SessionID.init),
            let (session, user) = try await store.sessionAndUser(id: sid), session.clientID == claims.clientID,
            session.userID.description == claims.sub, !user.isDisabled, session.isLive(at: clock.now, settings: preset.tokens)
        else { return nil }
        return (claims, user, session)
    }

    /// `GET /oauth/userinfo`: the claims the token's scopes allow.
    func userinfo(bearer: String?) async throws -> [String: JSONValue] {
        guard let bearer else { throw OAuthProtocolError(status: 401, error: "invalid_request", description: "An access token is required.") }
        guard let (claims, user, _) = try await holder(of: bearer) else {
            throw OAuthProtocolError.invalidToken("The access token is not valid.")
        }
        let scopes = Set(OAuthScope.words(claims.scope))
        guard scopes.contains(OAuthScope.openid.rawValue) else {
            throw OAuthProtocolError(status: 403, error: "insufficient_scope", description: "The token lacks the openid scope.")
        }
        var info: [String: JSONValue] = ["sub": .string(user.id.description)]
        if scopes.contains(OAuthScope.email.rawValue), let email = user.email {
            info["email"] = .string(email)
            info["email_verified"] = .bool(user.emailVerified)
        }
        if scopes.contains(OAuthScope.profile.rawValue), let name = user.displayName { info["name"] = .string(name) }
        return info
    }

    /// `POST /oauth/revoke` (RFC 7009): a refresh or access token of this client's ends its
    /// session. Anything else is answered the same (200), so the answer tells nothing.
    func revoke(_ form: [String: String], credentials: ClientCredentials, caller: ClientInfo) async throws {
        let client = try await authenticate(credentials, caller: caller)
        guard let token = form["token"], !token.isEmpty else { throw OAuthProtocolError.invalidRequest("token is required.") }
        var sessionID: SessionID?
        if let claims = await tokens.verifyAccessToken(token), claims.clientID == client.id {
            sessionID = claims.sid.flatMap(SessionID.init)
        } else if let record = try await store.refreshToken(hash: StoredSecret.hash(token)),
            try await store.session(id: record.sessionID)?.clientID == client.id
        {
            sessionID = record.sessionID
        }
        guard let sessionID, let session = try await store.session(id: sessionID) else { return }
        try await unitOfWork.run(client: caller) { work in
            if try await work.tx.revokeSession(sessionID, reason: .oauthTokenRevoked, at: work.now) {
                try await work.audit(.oauthTokenRevoked, user: session.userID, session: sessionID, details: ["client_id": client.id])
            }
        }
    }

    /// `POST /oauth/introspect` (RFC 7662), for confidential clients: whether a token of this
    /// provider is active now, and what it carries.
    func introspect(_ form: [String: String], credentials: ClientCredentials, caller: ClientInfo) async throws -> [String: JSONValue] {
        let client = try await authenticate(credentials, caller: caller)
        guard !client.isPublic else { throw OAuthProtocolError.invalidClient }
        guard let token = form["token"], !token.isEmpty else { throw OAuthProtocolError.invalidRequest("token is required.") }
        let inactive: [String: JSONValue] = ["active": .bool(false)]
        if let claims = await tokens.verifyAccessToken(token) {
            // A client reads its own tokens, and a resource server those meant for it.
            guard claims.clientID == client.id || claims.aud == client.tokenAudience else { return inactive }
            if claims.sid != nil, try await holder(of: token) == nil { return inactive }
            // A client's own token ends with the client.
            if claims.sid == nil, try await self.client(claims.clientID) == nil { return inactive }
            var answer: [String: JSONValue] = [
                "active": .bool(true), "token_type": .string("access_token"), "client_id": .string(claims.clientID),
                "scope": .string(claims.scope), "sub": .string(claims.sub), "aud": .string(claims.aud), "iss": .string(claims.iss),
                "exp": .number(Double(claims.exp)), "iat": .number(Double(claims.iat)),
            ]
            if let sid = claims.sid { answer["sid"] = .string(sid) }
            return answer
        }
        guard let record = try await store.refreshToken(hash: StoredSecret.hash(token)), record.rotatedAt == nil, record.expiresAt > clock.now,
            let (session, user) = try await store.sessionAndUser(id: record.sessionID), let owner = session.clientID, owner == client.id,
            !user.isDisabled,
            session.isLive(at: clock.now, settings: preset.tokens)
        else { return inactive }
        return [
            "active": .bool(true), "token_type": .string("refresh_token"), "client_id": .string(owner), "scope": .string(session.scope ?? ""),
            "sub": .string(user.id.description), "exp": .number(Double(record.expiresAt.unixSeconds)), "iss": .string(issuer),
        ]
    }
}
