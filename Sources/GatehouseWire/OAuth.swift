/// `POST /admin/v1/oauth/clients`: a relying party of Gatehouse's OpenID provider (issue 45).
/// A public client (`public: true`) has no secret and proves itself with PKCE alone; a
/// confidential one gets a secret, shown once.
public struct OAuthClientRequest: Codable, Sendable, Hashable {
    public var name: String
    /// Exact URIs the code may be sent to: compared byte for byte, no prefixes or wildcards.
    public var redirectURIs: [String]
    /// Where `GET /oauth/logout` may send the browser afterwards (exact, like `redirect_uris`).
    public var postLogoutRedirectURIs: [String]?
    /// What the client may ask for: `openid`, `email`, `profile`, `offline_access`, and the
    /// app's own API scopes (`api:read`), which `client_credentials` tokens carry.
    public var scopes: [String]
    public var isPublic: Bool
    /// A client of the app's own (its web dashboard): no consent page.
    public var firstParty: Bool?
    /// The `aud` of the access tokens this client gets: the resource server that accepts them.
    /// The client's own id when absent.
    public var audience: String?
    /// Where a hand-over from the app sends the browser to start its sign-in (OpenID Connect's
    /// "initiating login from a third party"); a client without one cannot be handed over to.
    public var initiateLoginURI: String?
    /// Requests a minute at the token, revocation and introspection endpoints: a confidential
    /// client's callers share it, a public client's are counted per address; 600 when absent.
    public var rateLimitPerMinute: Int?

    public init(
        name: String, redirectURIs: [String], postLogoutRedirectURIs: [String]? = nil, scopes: [String], isPublic: Bool,
        firstParty: Bool? = nil, audience: String? = nil, initiateLoginURI: String? = nil, rateLimitPerMinute: Int? = nil
    ) {
        self.name = name
        self.redirectURIs = redirectURIs
        self.postLogoutRedirectURIs = postLogoutRedirectURIs
        self.scopes = scopes
        self.isPublic = isPublic
        self.firstParty = firstParty
        self.audience = audience
        self.initiateLoginURI = initiateLoginURI
        self.rateLimitPerMinute = rateLimitPerMinute
    }

    enum CodingKeys: String, CodingKey {
        case name, scopes, audience
        case redirectURIs = "redirect_uris"
        case postLogoutRedirectURIs = "post_logout_redirect_uris"
        case isPublic = "public"
        case firstParty = "first_party"
        case initiateLoginURI = "initiate_login_uri"
        case rateLimitPerMinute = "rate_limit_per_minute"
    }
}

/// A registered client as the admin API shows it. `client_secret` is present once: in the
/// answer that made it (creation, rotation); only its hash is kept.
public struct OAuthClientPayload: Codable, Sendable, Hashable {
    public var clientID: String
    public var clientSecret: String?
    public var name: String
    public var redirectURIs: [String]
    public var postLogoutRedirectURIs: [String]
    public var scopes: [String]
    public var isPublic: Bool
    public var firstParty: Bool
    public var audience: String?
    public var initiateLoginURI: String?
    public var rateLimitPerMinute: Int
    /// RFC 3339.
    public var createdAt: String

    public init(
        clientID: String, clientSecret: String? = nil, name: String, redirectURIs: [String], postLogoutRedirectURIs: [String], scopes: [String],
        isPublic: Bool, firstParty: Bool, audience: String?, initiateLoginURI: String?, rateLimitPerMinute: Int, createdAt: String
    ) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.name = name
        self.redirectURIs = redirectURIs
        self.postLogoutRedirectURIs = postLogoutRedirectURIs
        self.scopes = scopes
        self.isPublic = isPublic
        self.firstParty = firstParty
        self.audience = audience
        self.initiateLoginURI = initiateLoginURI
        self.rateLimitPerMinute = rateLimitPerMinute
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case name, scopes, audience
        case clientID = "client_id"
        case clientSecret = "client_secret"
        case redirectURIs = "redirect_uris"
        case postLogoutRedirectURIs = "post_logout_redirect_uris"
        case isPublic = "public"
        case firstParty = "first_party"
        case initiateLoginURI = "initiate_login_uri"
        case rateLimitPerMinute = "rate_limit_per_minute"
        case createdAt = "created_at"
    }
}

/// `GET /admin/v1/oauth/clients`.
public struct OAuthClientList: Codable, Sendable, Hashable {
    public var clients: [OAuthClientPayload]
    public init(clients: [OAuthClientPayload]) { self.clients = clients }
}

/// `POST /v1/oauth/handover`: the client whose web surface the app opens signed in.
public struct HandoverRequest: Codable, Sendable, Hashable {
    public var clientID: String
    public init(clientID: String) { self.clientID = clientID }
    enum CodingKeys: String, CodingKey {
        case clientID = "client_id"
    }
}

/// A one-time URL that signs a browser in as the caller's account, good once for 60 seconds.
public struct HandoverResponse: Codable, Sendable, Hashable {
    public var url: String
    /// RFC 3339.
    public var expiresAt: String
    public init(url: String, expiresAt: String) {
        self.url = url
        self.expiresAt = expiresAt
    }
    enum CodingKeys: String, CodingKey {
        case url
        case expiresAt = "expires_at"
    }
}

/// A client the person let in: what it may read, since when, and how many of its sessions live.
public struct ConnectedClient: Codable, Sendable, Hashable {
    public var clientID: String
    public var name: String
    public var scopes: [String]
    /// RFC 3339; nil for a first-party client used without a consent.
    public var grantedAt: String?
    public var sessions: Int
    public init(clientID: String, name: String, scopes: [String], grantedAt: String?, sessions: Int) {
        self.clientID = clientID
        self.name = name
        self.scopes = scopes
        self.grantedAt = grantedAt
        self.sessions = sessions
    }
    enum CodingKeys: String, CodingKey {
        case name, scopes, sessions
        case clientID = "client_id"
        case grantedAt = "granted_at"
    }
}

/// `GET /v1/me/connections`.
public struct ConnectedClientList: Codable, Sendable, Hashable {
    public var connections: [ConnectedClient]
    public init(connections: [ConnectedClient]) { self.connections = connections }
}

/// The claims of an access token the OpenID provider issues (RFC 9068, `typ: at+jwt`): for a
/// person (`sid`, `sub` the account) or, with `client_credentials`, for the client itself
/// (`sub` the client's id, no `sid`).
public struct OAuthAccessTokenClaims: Codable, Sendable, Hashable {
    public var iss: String
    public var sub: String
    public var aud: String
    public var exp: Int64
    public var iat: Int64
    public var nbf: Int64?
    public var jti: String
    public var clientID: String
    /// Space-separated.
    public var scope: String
    public var sid: String?
    public var authTime: Int64?
    public var acr: String?

    public init(
        iss: String, sub: String, aud: String, exp: Int64, iat: Int64, nbf: Int64?, jti: String, clientID: String, scope: String,
        sid: String?, authTime: Int64?, acr: String?
    ) {
        self.iss = iss
        self.sub = sub
        self.aud = aud
        self.exp = exp
        self.iat = iat
        self.nbf = nbf
        self.jti = jti
        self.clientID = clientID
        self.scope = scope
        self.sid = sid
        self.authTime = authTime
        self.acr = acr
    }

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, nbf, jti, scope, sid, acr
        case clientID = "client_id"
        case authTime = "auth_time"
    }
}

/// An OpenID Connect ID token's claims.
public struct IDTokenClaims: Codable, Sendable, Hashable {
    public var iss: String
    public var sub: String
    public var aud: String
    public var exp: Int64
    public var iat: Int64
    public var authTime: Int64
    public var nonce: String?
    public var amr: [String]
    public var acr: String
    public var atHash: String
    public var sid: String
    public var email: String?
    public var emailVerified: Bool?
    public var name: String?

    public init(
        iss: String, sub: String, aud: String, exp: Int64, iat: Int64, authTime: Int64, nonce: String?, amr: [String], acr: String,
        atHash: String, sid: String, email: String?, emailVerified: Bool?, name: String?
    ) {
        self.iss = iss
        self.sub = sub
        self.aud = aud
        self.exp = exp
        self.iat = iat
        self.authTime = authTime
        self.nonce = nonce
        self.amr = amr
        self.acr = acr
        self.atHash = atHash
        self.sid = sid
        self.email = email
        self.emailVerified = emailVerified
        self.name = name
    }

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, nonce, amr, acr, sid, email, name
        case authTime = "auth_time"
        case atHash = "at_hash"
        case emailVerified = "email_verified"
    }
}

/// A consent in the export: the client, the scopes, when.
public struct ExportedOAuthConsent: Codable, Sendable, Hashable {
    public var clientID: String
    public var scopes: [String]
    /// RFC 3339.
    public var grantedAt: String
    public init(clientID: String, scopes: [String], grantedAt: String) {
        self.clientID = clientID
        self.scopes = scopes
        self.grantedAt = grantedAt
    }
    enum CodingKeys: String, CodingKey {
        case scopes
        case clientID = "client_id"
        case grantedAt = "granted_at"
    }
}

/// A one-time code in the export (`authorization` or `handover`): for which client and when.
public struct ExportedOAuthCode: Codable, Sendable, Hashable {
    public var kind: String
    public var clientID: String
    /// RFC 3339.
    public var createdAt: String
    public var usedAt: String?
    public init(kind: String, clientID: String, createdAt: String, usedAt: String?) {
        self.kind = kind
        self.clientID = clientID
        self.createdAt = createdAt
        self.usedAt = usedAt
    }
    enum CodingKeys: String, CodingKey {
        case kind
        case clientID = "client_id"
        case createdAt = "created_at"
        case usedAt = "used_at"
    }
}
