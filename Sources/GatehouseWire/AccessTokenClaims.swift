/// The claims of a Gatehouse access token (contract: Session object), as the server signs them
/// and as `GatehouseVerifier` reads them. The server sets every claim; the verifier accepts a
/// token without the optional ones (and reads a missing `plan` as `free`).
public struct AccessTokenClaims: Codable, Sendable, Equatable {
    public var iss: String
    public var aud: String
    public var sub: String
    public var sid: String
    public var iat: Int64?
    public var nbf: Int64?
    public var exp: Int64
    public var isAnonymous: Bool?
    public var plan: PlanState?
    public var emailVerified: Bool?
    /// Whether the account's phone number was proved with a code (`phone_verified`, issue 43).
    public var phoneVerified: Bool?
    public var planExpiresAt: Int64?
    /// How the session's holder signed in (RFC 8176's idea, the contract's shape): methods
    /// `password`, `magic_link`, `apple`, `google`, `anonymous`, `passkey`, then `totp` or
    /// `recovery_code`, each with its Unix time.
    public var amr: [AuthenticationMethodReference]?
    /// `aal1` (one factor) or `aal2` (a second factor verified, at sign-in or by a step-up).
    public var aal: AssuranceLevel?
    /// Supabase's claims (issue 46), in tokens issued through `/auth/v1`, and in every token
    /// where the preset's `tokens.supabase_claims` is on (`role`, `email`, `app_metadata`
    /// there): what a Supabase app's row-level security and `getClaims()` read.
    /// `authenticated` for every signed-in account, anonymous ones too (as GoTrue's).
    public var role: String?
    /// The account's address, or "" without one.
    public var email: String?
    /// The account's number without `+` (GoTrue's form), or "".
    public var phone: String?
    /// `provider`, `providers` and what operators set.
    public var appMetadata: [String: JSONValue]?
    /// What the holder keeps (`/auth/v1` tokens only).
    public var userMetadata: [String: JSONValue]?
    /// The session's id again, under GoTrue's name (`/auth/v1` tokens only).
    public var sessionID: String?

    public enum CodingKeys: String, CodingKey {
        case iss, aud, sub, sid, iat, nbf, exp, plan, amr, aal
        case isAnonymous = "is_anonymous"
        case emailVerified = "email_verified"
        case phoneVerified = "phone_verified"
        case planExpiresAt = "plan_expires_at"
        case role, email, phone
        case appMetadata = "app_metadata"
        case userMetadata = "user_metadata"
        case sessionID = "session_id"
    }

    public init(
        iss: String, aud: String, sub: String, sid: String, iat: Int64?, nbf: Int64?, exp: Int64, isAnonymous: Bool?, plan: PlanState?,
        emailVerified: Bool?, planExpiresAt: Int64?, amr: [AuthenticationMethodReference]? = nil, aal: AssuranceLevel? = nil,
        phoneVerified: Bool? = nil
    ) {
        self.phoneVerified = phoneVerified
        self.aal = aal
        self.iss = iss
        self.aud = aud
        self.sub = sub
        self.sid = sid
        self.iat = iat
        self.nbf = nbf
        self.exp = exp
        self.isAnonymous = isAnonymous
        self.plan = plan
        self.emailVerified = emailVerified
        self.planExpiresAt = planExpiresAt
        self.amr = amr
    }
}

/// One entry of an access token's `amr`: a way the holder proved who they are, and when.
public struct AuthenticationMethodReference: Codable, Sendable, Equatable {
    public var method: String
    /// Unix seconds.
    public var timestamp: Int64
    public init(method: String, timestamp: Int64) {
        self.method = method
        self.timestamp = timestamp
    }
    enum CodingKeys: String, CodingKey { case method, timestamp }
}
