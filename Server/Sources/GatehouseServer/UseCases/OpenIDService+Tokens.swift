import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The token endpoint's answer (RFC 6749 §5.1, OpenID Connect §3.1.3.3).
struct OAuthTokenResponse: Encodable, Sendable {
    var accessToken: String
    var tokenType = "Bearer"
    var expiresIn: Int
    var refreshToken: String?
    var idToken: String?
    var scope: String

    enum CodingKeys: String, CodingKey {
        case scope
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case refreshToken = "refresh_token"
        case idToken = "id_token"
    }
}

/// How a client proved itself at the token, revocation and introspection endpoints.
struct ClientCredentials: Sendable {
    var clientID: String?
    var secret: String?
}

extension OpenIDService {
    // MARK: Clients

    /// The client behind `credentials`: a confidential client by its secret (constant-time
    /// against the stored hash), a public one by its id alone (it must not send a secret). Its
    /// per-minute limit is counted before anything else is done.
    func authenticate(_ credentials: ClientCredentials, caller: ClientInfo) async throws -> OAuthClient {
        guard let client = try await client(credentials.clientID) else { throw OAuthProtocolError.invalidClient }
        if client.isPublic {
            guard credentials.secret == nil else { throw OAuthProtocolError.invalidClient }
        } else {
            guard let secret = credentials.secret, let stored = client.secretHash,
                constantTimeEquals(StoredSecret.hash(secret), stored)
            else { throw OAuthProtocolError.invalidClient }
        }
        // A public client's id is public: counted per client and address, so that nobody can
        // use up its users' allowance; a confidential client's callers share its limit.
        let key = client.isPublic ? "oauth_client:\(client.id):\(caller.ip ?? "-")" : "oauth_client:\(client.id)"
        do {
            try await throttle.limit(key, limit: client.rateLimitPerMinute, windowSeconds: 60)
        } catch let error as GatehouseError where error.code == .rateLimited {
            throw OAuthProtocolError(
                status: 429, error: "rate_limited", description: "Too many requests from this client.", retryAfter: error.retryAfter)
        }
        return client
    }

    // MARK: The token endpoint

    func token(_ form: [String: String], credentials: ClientCredentials, caller: ClientInfo) async throws -> OAuthTokenResponse {
        let client = try await authenticate(credentials, caller: caller)
        switch form["grant_type"] {
        case "authorization_code": return try await exchange(form, client: client, caller: caller)
        case "refresh_token": return try await refresh(form, client: client, caller: caller)
        case "client_credentials": return try await clientCredentials(form, client: client, caller: caller)
        case nil: throw OAuthProtocolError.invalidRequest("grant_type is required.")
        default: throw OAuthProtocolError(status: 400, error: "unsupported_grant_type", description: "This grant type is not served.")
        }
    }

    private enum Exchange: Sendable {
        case issued(User, Session, OAuthCode, refresh: String?)
        case refused(OAuthProtocolError)
        /// The code had been used: the session its first use opened is revoked.
        case reused
    }

    /// `authorization_code`: the code is used once, by one conditional statement, whether or not
    /// what comes with it checks out (a code that met a wrong verifier is spent). A second use
    /// revokes what the first issued.
    private func exchange(_ form: [String: String], client: OAuthClient, caller: ClientInfo) async throws -> OAuthTokenResponse {
        guard let code = form["code"], isBase64URLText(code, lengths: 43...43) else { throw OAuthProtocolError.invalidGrant("The code is not valid.") }
        let hash = StoredSecret.hash(code)
        let sessionID = SessionID.random()
        let outcome = try await unitOfWork.run(client: caller) { work -> Exchange in
            guard let used = try await work.tx.useOAuthCode(hash: hash, kind: .authorization, issuing: sessionID, at: work.now) else {
                guard let spent = try await work.tx.oauthCode(hash: hash), spent.usedAt != nil, spent.kind == .authorization else {
                    return .refused(.invalidGrant("The code is not valid or has expired."))
                }
                if let issued = spent.issuedSessionID, try await work.tx.revokeSession(issued, reason: .oauthCodeReuse, at: work.now) {
                    try await work.audit(.oauthCodeReuse, .sessionRevoked, user: spent.userID, session: issued, details: ["client_id": spent.clientID])
                }
                return .reused
            }
            guard used.clientID == client.id else { return .refused(.invalidGrant("The code was issued to another client.")) }
            guard form["redirect_uri"] == used.redirectURI else { return .refused(.invalidGrant("redirect_uri differs from the authorization request's.")) }
            guard let verifier = form["code_verifier"], let challenge = used.codeChallenge,
                PKCE.matches(verifier: verifier, challenge: challenge, sha256: { Array(SHA256.hash(data: $0)) })
            else { return .refused(.invalidGrant("The PKCE code_verifier does not match.")) }
            guard let (browser, user) = try await work.tx.holdSession(used.sessionID, of: used.userID), !user.isDisabled,
                browser.isLive(at: work.now, settings: preset.tokens)
            else { return .refused(.invalidGrant("The sign-in behind this code has ended.")) }
            let session = Session(
                id: sessionID, userID: user.id, provider: browser.provider, createdAt: work.now, expiresAt: browser.expiresAt,
                userAgent: work.client?.userAgent, ipAddress: work.client?.ip, method: browser.method, assurance: browser.assurance,
                secondFactor: browser.secondFactor, secondFactorAt: browser.secondFactorAt, clientID: client.id,
                scope: used.scopes.joined(separator: " "), authTime: browser.authTime ?? browser.createdAt)
            try await work.tx.insertSession(session)
            var refresh: String?
            if used.scopes.contains(OAuthScope.offlineAccess.rawValue) {
                refresh = tokens.tokens.newRefreshToken()
                try await work.tx.insertRefreshToken(
                    RefreshTokenRecord(
                        hash: StoredSecret.hash(refresh!), sessionID: session.id, issuedAt: work.now,
                        expiresAt: work.now.addingTimeInterval(TimeInterval(preset.tokens.refreshTokenTTLSeconds))))
            }
            try await work.audit(
                .oauthTokenIssued, user: user.id, session: session.id,
                details: ["client_id": client.id, "grant_type": "authorization_code", "scope": session.scope ?? ""])
            return .issued(user, session, used, refresh: refresh)
        }
        switch outcome {
        case .refused(let error): throw error
        case .reused: throw OAuthProtocolError.invalidGrant("The code was used already; what it issued is revoked.")
        case .issued(let user, let session, let code, let refresh):
            return try await answer(client: client, user: user, session: session, scopes: code.scopes, nonce: code.nonce, refresh: refresh)
        }
    }

    /// `refresh_token`: the same rotation and reuse detection as the app's sessions
    /// (`RefreshChains`), for this client's sessions only.
    private func refresh(_ form: [String: String], client: OAuthClient, caller: ClientInfo) async throws -> OAuthTokenResponse {
        guard let token = form["refresh_token"], !token.isEmpty else { throw OAuthProtocolError.invalidRequest("refresh_token is required.") }
        // A wider scope is refused before the token rotates (a refused rotation would leave the
        // client holding a token whose successor it never got).
        // An empty `scope` is no scope parameter.
        let asked = form["scope"].map(OAuthScope.words).flatMap { $0.isEmpty ? nil : $0 }
        if let asked, let record = try await store.refreshToken(hash: StoredSecret.hash(token)),
            let session = try await store.session(id: record.sessionID), session.clientID == client.id,
            !Set(asked).isSubset(of: Set(OAuthScope.words(session.scope)))
        {
            throw OAuthProtocolError(status: 400, error: "invalid_scope", description: "A refresh cannot widen the scope.")
        }
        let outcome: RefreshChains.Outcome
        do {
            outcome = try await unitOfWork.run(client: caller) { work in
                let outcome = try await chains.rotate(work.narrowed { $0 }, token: token, owner: .client(client.id))
                if case .issued(let user, let session, _) = outcome {
                    try await work.audit(
                        .oauthTokenIssued, user: user.id, session: session.id, details: ["client_id": client.id, "grant_type": "refresh_token"])
                }
                return outcome
            }
        } catch is GatehouseError {
            throw OAuthProtocolError.invalidGrant("The refresh token is not valid.")
        }
        guard case .issued(let user, let session, let successor) = outcome else {
            throw OAuthProtocolError.invalidGrant("The refresh token was used already; the session is revoked.")
        }
        // A narrower scope is granted as asked, for this answer's tokens.
        let granted = OAuthScope.words(session.scope)
        let scopes = asked.map { words in granted.filter(words.contains) } ?? granted
        return try await answer(client: client, user: user, session: session, scopes: scopes, nonce: nil, refresh: successor)
    }

    /// `client_credentials`: a confidential client's token for itself, with its API scopes.
    private func clientCredentials(_ form: [String: String], client: OAuthClient, caller: ClientInfo) async throws -> OAuthTokenResponse {
        guard !client.isPublic else {
            throw OAuthProtocolError(status: 400, error: "unauthorized_client", description: "A public client cannot use client_credentials.")
        }
        let registered = client.scopes.filter(OAuthScope.isAPIScope)
        guard !registered.isEmpty else {
            throw OAuthProtocolError(status: 400, error: "unauthorized_client", description: "This client has no API scopes for client_credentials.")
        }
        let asked = form["scope"].map(OAuthScope.words) ?? registered
        guard Set(asked).isSubset(of: Set(registered)) else {
            throw OAuthProtocolError(status: 400, error: "invalid_scope", description: "Ask for API scopes this client registered.")
        }
        let (access, expiresIn) = try await tokens.accessToken(client: client, subject: client.id, session: nil, scopes: asked)
        try await unitOfWork.run(client: caller) { work in
            try await work.audit(
                .oauthTokenIssued, user: nil, details: ["client_id": client.id, "grant_type": "client_credentials", "scope": asked.joined(separator: " ")])
        }
        return OAuthTokenResponse(accessToken: access, expiresIn: expiresIn, scope: asked.joined(separator: " "))
    }

    private func answer(
        client: OAuthClient, user: User, session: Session, scopes: [String], nonce: String?, refresh: String?
    ) async throws -> OAuthTokenResponse {
        let (access, expiresIn) = try await tokens.accessToken(client: client, subject: user.id.description, session: session, scopes: scopes)
        let id = scopes.contains(OAuthScope.openid.rawValue)
            ? try await tokens.idToken(client: client, user: user, session: session, scopes: scopes, nonce: nonce, accessToken: access) : nil
        return OAuthTokenResponse(
            accessToken: access, expiresIn: expiresIn, refreshToken: refresh, idToken: id, scope: scopes.joined(separator: " "))
    }

    // MARK: The resource side

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

    // MARK: RP-initiated logout

    /// `GET /oauth/logout`: with an ID token this provider issued (`id_token_hint`, expired or
    /// not), the browser's sign-in at the provider and the client's session of that ID token
    /// end; the browser goes to a registered `post_logout_redirect_uri` (exact), with `state`.
    /// Nil `location` shows the "signed out" page.
    func logout(_ query: [String: String], browser: (User, Session)?, caller: ClientInfo) async throws -> String? {
        guard let hint = query["id_token_hint"], let claims = await tokens.verifyIDTokenHint(hint),
            let client = try await client(claims.aud), query["client_id"].map({ $0 == client.id }) ?? true
        else { throw OAuthProtocolError.invalidRequest("A valid id_token_hint is required to sign out.") }
        var location: String?
        if let target = query["post_logout_redirect_uri"] {
            guard client.postLogoutRedirectURIs.contains(target) else {
                throw OAuthProtocolError.invalidRequest("post_logout_redirect_uri is not one this client registered.")
            }
            location = Self.append(to: target, [("state", query["state"])])
        }
        let user = UserID(claims.sub)
        try await unitOfWork.run(client: caller) { work in
            var ended: [SessionID] = []
            if let sid = SessionID(claims.sid), let session = try await work.tx.session(id: sid), session.userID == user,
                try await work.tx.revokeSession(sid, reason: .oauthLogout, at: work.now)
            {
                ended.append(sid)
            }
            if let (person, session) = browser, person.id == user, try await work.tx.revokeSession(session.id, reason: .oauthLogout, at: work.now) {
                ended.append(session.id)
            }
            if !ended.isEmpty {
                try await work.audit(.oauthLogout, user: user, details: ["client_id": client.id, "sessions": String(ended.count)])
            }
        }
        return location
    }
}
