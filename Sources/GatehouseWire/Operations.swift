/// `GET /health`.
public struct HealthResponse: Codable, Sendable, Hashable {
    /// `ok` or `unavailable`.
    public var status: String
    /// The newest migration the database has applied; nil when it does not answer.
    public var schemaVersion: Int?

    /// A health answer: `status`, and the database's schema version when it answered.
    public init(status: String, schemaVersion: Int? = nil) {
        self.status = status
        self.schemaVersion = schemaVersion
    }

    enum CodingKeys: String, CodingKey {
        case status
        case schemaVersion = "schema_version"
    }
}

/// One public key of `GET /.well-known/jwks.json` (RFC 7517).
public struct JSONWebKey: Codable, Sendable, Hashable {
    public var kty: String
    public var crv: String?
    public var x: String?
    public var y: String?
    public var kid: String
    public var alg: String
    public var use: String

    public init(kty: String, crv: String?, x: String?, y: String?, kid: String, alg: String, use: String) {
        self.kty = kty
        self.crv = crv
        self.x = x
        self.y = y
        self.kid = kid
        self.alg = alg
        self.use = use
    }

    enum CodingKeys: String, CodingKey {
        case kty, crv, x, y, kid, alg, use
    }
}

/// `GET /.well-known/jwks.json`.
public struct JSONWebKeySet: Codable, Sendable, Hashable {
    public var keys: [JSONWebKey]
    public init(keys: [JSONWebKey]) { self.keys = keys }

    enum CodingKeys: String, CodingKey {
        case keys
    }
}
