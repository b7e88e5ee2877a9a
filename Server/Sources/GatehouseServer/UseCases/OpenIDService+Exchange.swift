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

/// The token endpoint (RFC 6749 §3.2): client authentication, then the grant.
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
            // A try of the secret is reserved from this address before it is compared: wrong
            // secrets lock the address out of this client for a while (issue 60).
            let attempt = try await oauthLimit { try await throttle.reserveClientSecretAttempt(client.id, client: caller) }
            guard let secret = credentials.secret, let stored = client.secretHash,
                constantTimeEquals(StoredSecret.hash(secret), stored)
            else { throw OAuthProtocolError.invalidClient }
            try await throttle.clearKeyAttempts(attempt)
        }
        // A public client's id is public: counted per client and address, so that nobody can
        // use up its users' allowance; a confidential client's callers share its limit.
        let key = client.isPublic ? "oauth_client:\(client.id):\(caller.ip ?? "-")" : "oauth_client:\(client.id)"
        try await oauthLimit { try await throttle.limit(key, limit: client.rateLimitPerMinute, windowSeconds: 60) }
        return client
    }

    /// A limit's 429 in OAuth's shape.
    private func oauthLimit<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as GatehouseError where error.code == .rateLimited {
            throw OAuthProtocolError(status: 429, error: "rate_limited", description: error.message, retryAfter: error.retryAfter)
        }
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

    /// `authorization_code`. The client and the code's binding (its client, redirect URI and
    /// PKCE verifier) are checked before anything else: another client's code is left as it is,
    /// and only the code's own client, proving its binding, can set off the reuse handling.
    /// The code is used once, by one conditional statement; a code that met a wrong redirect
    /// URI or verifier is spent. A second use revokes what the first issued. The session is
    /// opened by `SessionIssuer.carry`, which holds the browser's session and re-checks the
    /// consent inside this write.
    private func exchange(_ form: [String: String], client: OAuthClient, caller: ClientInfo) async throws -> OAuthTokenResponse {
        guard let code = form["code"], isBase64URLText(code, lengths: 43...43) else { throw OAuthProtocolError.invalidGrant("The code is not valid.") }
        let hash = StoredSecret.hash(code)
        let sessionID = SessionID.timeOrdered(at: clock.now)
        let outcome = try await sessions.signingIn(client: caller) { admitted in
            try await unitOfWork.run(client: caller) { work -> Exchange in
                // Its client never changes: read before the use.
                guard let found = try await work.tx.oauthCode(hash: hash), found.kind == .authorization, found.clientID == client.id else {
                    return .refused(.invalidGrant("The code is not valid or has expired."))
                }
                let bound =
                    form["redirect_uri"] == found.redirectURI
                    && PKCE.matches(
                        verifier: form["code_verifier"] ?? "", challenge: found.codeChallenge ?? "", sha256: { Array(SHA256.hash(data: $0)) })
                guard let used = try await work.tx.useOAuthCode(hash: hash, kind: .authorization, issuing: sessionID, at: work.now) else {
                    guard bound, let spent = try await work.tx.oauthCode(hash: hash), spent.usedAt != nil else {
                        return .refused(.invalidGrant("The code is not valid or has expired."))
                    }
                    if let issued = spent.issuedSessionID, try await work.tx.revokeSession(issued, reason: .oauthCodeReuse, at: work.now) {
                        try await work.audit(.oauthCodeReuse, .sessionRevoked, user: spent.userID, session: issued, details: ["client_id": spent.clientID])
                    }
                    return .reused
                }
                guard form["redirect_uri"] == used.redirectURI else { return .refused(.invalidGrant("redirect_uri differs from the authorization request's.")) }
                guard bound else { return .refused(.invalidGrant("The PKCE code_verifier does not match.")) }
                let carried = try await sessions.carry(
                    work.narrowed { $0 }, from: used.sessionID, of: used.userID, id: sessionID, door: .oauthCode, client: client, scopes: used.scopes,
                    refreshable: used.scopes.contains(OAuthScope.offlineAccess.rawValue), admitted: admitted)
                switch carried {
                case .sourceEnded: return .refused(.invalidGrant("The sign-in behind this code has ended."))
                case .noConsent: return .refused(.invalidGrant("The person withdrew their consent to this client."))
                case .opened(let session, let user, let refresh):
                    try await work.audit(
                        .oauthTokenIssued, user: user.id, session: session.id,
                        details: ["client_id": client.id, "grant_type": "authorization_code", "scope": session.scope ?? "", "door": SessionDoor.oauthCode.rawValue])
                    return .issued(user, session, used, refresh: refresh)
                }
            }
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
        // An empty `scope` asks for nothing: refused, as an unknown one is.
        let asked = form["scope"].map(OAuthScope.words) ?? registered
        guard !asked.isEmpty, Set(asked).isSubset(of: Set(registered)) else {
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
}
