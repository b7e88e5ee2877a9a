import Foundation

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
    /// The app's own claims, as its `CUSTOM_ACCESS_TOKEN` hook answered them (issue 63): a JSON
    /// object of at most `AppClaims.maxBytes`, whose names are none of `AppClaims.reservedNames`.
    public var app: [String: JSONValue]?

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
        case app
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

/// The rules for the claims an app's `CUSTOM_ACCESS_TOKEN` hook adds under a token's `app`
/// claim (issue 63), in one place for the server that signs them and the verifier that reads them.
public enum AppClaims {
    /// The most compact JSON (sorted keys) the `app` object may take, in bytes: Firebase's
    /// custom-claims bound, so a token stays small enough for a header.
    public static let maxBytes = 1_000

    /// Names an app's claim may not take: the registered claims (RFC 7519) and every claim
    /// Gatehouse or its Supabase shape signs, so no reader can take an app's claim for one of
    /// them.
    public static let reservedNames: Set<String> = [
        "iss", "sub", "aud", "exp", "nbf", "iat", "jti", "sid", "is_anonymous", "plan", "plan_expires_at", "email_verified",
        "phone_verified", "amr", "aal", "role", "email", "phone", "app_metadata", "user_metadata", "session_id", "app", "client_id",
        "scope", "auth_time", "acr", "azp", "nonce",
    ]

    /// Why `claims` may not be signed, or nil when they may.
    public static func problem(_ claims: [String: JSONValue]) -> String? {
        if let name = claims.keys.sorted().first(where: reservedNames.contains) { return "'\(name)' is a reserved claim name" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(claims) else { return "the claims are not JSON" }
        guard data.count <= maxBytes else { return "the claims take \(data.count) bytes of JSON; at most \(maxBytes)" }
        return nil
    }
}
