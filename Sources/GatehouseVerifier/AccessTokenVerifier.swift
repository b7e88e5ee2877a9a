#if Verifier
import Crypto
import Foundation
import GatehouseCore
import GatehouseWire

/// Who a Gatehouse access token speaks for, once verified.
public struct GatehouseUser: Sendable, Equatable {
    /// The user's Gatehouse id (the token's `sub`), to key this user's data by.
    public var userID: String
    /// The Gatehouse session the token was issued to (the token's `sid`).
    public var sessionID: String
    /// The plan state when the token was issued (`free`, `trial`, `pro`, …).
    public var plan: PlanState
    /// When that plan ends by the clock unless something new arrives (decision 20).
    public var planExpiresAt: Date?
    /// Whether the token is for an anonymous account (`is_anonymous`; false when the claim is absent).
    public var isAnonymous: Bool
    /// Whether the account's email was verified when the token was issued (`email_verified`; false
    /// when the claim is absent).
    public var emailVerified: Bool
    /// Whether the account's phone number was proved with a code (`phone_verified`; false when
    /// the claim is absent). A verified number passes the preset's verification rules as a
    /// verified address does.
    public var phoneVerified: Bool = false
    /// When the token expires (its `exp`); ``AccessTokenVerifier`` still accepts it for the leeway
    /// (30 s by default) after that.
    public var expiresAt: Date
    /// `aal1`, or `aal2` once the session verified a second factor.
    public var assuranceLevel: AssuranceLevel = .aal1
    /// The token's `amr`: how and when each factor was proved.
    public var authenticationMethods: [AuthenticationMethodReference] = []
    /// Supabase's claims, where the token has them (tokens `/auth/v1` issues, and every token
    /// with the preset's `tokens.supabase_claims` on): `role` (`authenticated`), the account's
    /// `email` ("" without one), and `app_metadata`, what operators set (roles, a tenant),
    /// which the holder cannot change. nil where the token has none.
    public var role: String? = nil
    /// The account's address as the token's Supabase `email` claim says it ("" without one);
    /// nil where the token has no such claim.
    public var email: String? = nil
    /// What operators set on the account (`app_metadata`: roles, a tenant), which the holder
    /// cannot change: the object to base an app's own access rules on. nil where the token has none.
    public var appMetadata: [String: JSONValue]? = nil
    /// The holder's own metadata, in tokens `/auth/v1` issues; never a basis for access.
    public var userMetadata: [String: JSONValue]? = nil
    /// The claims the app's `CUSTOM_ACCESS_TOKEN` hook put under the token's `app` claim; nil
    /// where the token has none. Read them typed with ``app(as:decoder:)``.
    public var app: [String: JSONValue]? = nil

    /// The token's `app` claims decoded as the app's own type, nil where the token has none:
    ///
    /// ```swift
    /// struct Membership: Decodable { var tier: String; var seats: Int }
    /// let membership = try user.app(as: Membership.self)
    /// ```
    ///
    /// - Throws: the decoder's error when the claims do not fit `type`.
    public func app<Claims: Decodable>(as type: Claims.Type, decoder: JSONDecoder = JSONDecoder()) throws -> Claims? {
        guard let app else { return nil }
        return try decoder.decode(type, from: JSONEncoder().encode(app))
    }

    /// What gates see: the level and the latest factor's time (nil without an `amr`).
    public var assurance: Assurance? { Assurance(aal: assuranceLevel, amr: authenticationMethods) }

    /// The plan at `now`: the token's, or `free` once `plan_expires_at` has passed.
    public func plan(at now: Date) -> PlanState {
        if let planExpiresAt, now >= planExpiresAt { return .free }
        return plan
    }
}

/// What an access token of Gatehouse's OpenID provider grants (``AccessTokenVerifier/verifyClientAccess(_:)``):
/// a person's sign-in at a client, or (`client_credentials`) the client itself.
public struct GatehouseClientAccess: Sendable, Equatable {
    /// The token's `sub`: the person's Gatehouse id, or the client's id for `client_credentials`.
    public var subject: String
    /// The client the token was issued to (`client_id`).
    public var clientID: String
    /// The scopes granted (`scope`).
    public var scopes: [String]
    /// The person's id; nil for a client's own token.
    public var userID: String?
    /// The Gatehouse session behind a person's token (`sid`).
    public var sessionID: String?
    /// When the token expires (`exp`); the verifier accepts it for its leeway (30 s by default)
    /// after that.
    public var expiresAt: Date

    /// What ``AccessTokenVerifier/verifyClientAccess(_:)`` answers; made by hand for tests and
    /// previews.
    public init(subject: String, clientID: String, scopes: [String], userID: String?, sessionID: String?, expiresAt: Date) {
        self.subject = subject
        self.clientID = clientID
        self.scopes = scopes
        self.userID = userID
        self.sessionID = sessionID
        self.expiresAt = expiresAt
    }
}

/// Verifies Gatehouse access tokens offline: ES256 signatures against the server's JWKS
/// (fetched and cached; an unknown `kid` triggers one refetch, so key rotation needs nothing),
/// `typ: at+jwt`, issuer, audience, expiry and not-before with a small leeway.
public actor AccessTokenVerifier {
    /// Why ``AccessTokenVerifier/verify(_:)`` refused a token. ``GatehouseMiddleware`` answers
    /// ``AccessTokenVerifier/Failure/keysUnavailable`` with 503 `service_unavailable` and every
    /// other case with 401 `unauthorized`.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The token is not three base64url parts, or its header or claims are not the JSON expected.
        case malformed
        /// The header's `alg` is not `ES256`, its `typ` is not `at+jwt`, or it has no `kid`.
        case unsupportedAlgorithm
        /// The header's `kid` names no key in Gatehouse's key set, even after refetching it (at most
        /// one fetch per `minimumRefetchInterval`).
        case unknownKey
        /// The signature does not verify against the key the `kid` names.
        case badSignature
        /// The `iss` claim is not the issuer this verifier was made with.
        case wrongIssuer
        /// The `aud` claim is not this verifier's audience: the token is for another app.
        case wrongAudience
        /// The `exp` claim has passed, by more than the leeway.
        case expired
        /// The `nbf` claim is still ahead, by more than the leeway.
        case notYetValid
        /// The key set could not be fetched and no copy is cached.
        case keysUnavailable

        /// A short sentence saying why, for logs.
        public var description: String {
            switch self {
            case .malformed: "the token is not a JWT"
            case .unsupportedAlgorithm: "the token is not an ES256 access token"
            case .unknownKey: "the token's key is not one the server publishes"
            case .badSignature: "the signature does not verify"
            case .wrongIssuer: "the token is from another issuer"
            case .wrongAudience: "the token is for another audience"
            case .expired: "the token has expired"
            case .notYetValid: "the token is not valid yet"
            case .keysUnavailable: "the server's keys could not be fetched"
            }
        }
    }

    private let jwksURL: URL
    private let issuer: String
    private let audience: String
    private let leeway: TimeInterval
    private let clock: any WallClock
    private let fetch: GatehouseFetcher
    /// How long a fetched key set is used before it is fetched again.
    private let maxAge: TimeInterval
    /// The least time between two fetches caused by unknown `kid`s (a flood of made-up kids
    /// must not become a flood of requests to Gatehouse).
    private let minimumRefetchInterval: TimeInterval

    private var keys: [String: P256.Signing.PublicKey] = [:]
    private var fetchedAt: Date?
    private var lastAttempt: Date?
    private var inFlight: Task<Void, Never>?

    /// Makes a verifier that fetches the key set on first use and caches it.
    /// - Parameters:
    ///   - jwksURL: Gatehouse's key set, `GET /.well-known/jwks.json`.
    ///   - issuer: The `iss` tokens must carry: Gatehouse's public URL.
    ///   - audience: The `aud` tokens must carry (`GATEHOUSE_TOKEN_AUDIENCE`, by default the preset's name).
    ///   - leeway: Seconds of clock difference allowed on `exp` and `nbf`.
    ///   - maxAge: Seconds a fetched key set is used before it is fetched again.
    ///   - minimumRefetchInterval: The least seconds between two fetches of the key set, so made-up
    ///     `kid`s cannot flood Gatehouse.
    ///   - clock: The source of the current time (a manual clock in tests).
    ///   - fetch: How the key set is read.
    public init(
        jwksURL: URL, issuer: String, audience: String, leeway: TimeInterval = 30, maxAge: TimeInterval = 300,
        minimumRefetchInterval: TimeInterval = 10, clock: any WallClock = SystemClock(), fetch: GatehouseFetcher
    ) {
        self.jwksURL = jwksURL
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway
        self.maxAge = maxAge
        self.minimumRefetchInterval = minimumRefetchInterval
        self.clock = clock
        self.fetch = fetch
    }

    private struct Header: Decodable {
        var alg: String
        var typ: String?
        var kid: String?
    }

    /// The user `token` (the bearer token, without `Bearer `) speaks for, once its signature and
    /// claims check out; the key set is fetched first when it is stale or lacks the token's `kid`.
    /// A token the OpenID provider issued to a client (it carries `client_id`) is refused here:
    /// read it with ``verifyClientAccess(_:)``.
    /// - Throws: ``AccessTokenVerifier/Failure``, saying why the token is refused.
    public func verify(_ token: String) async throws(Failure) -> GatehouseUser {
        let payload = try await signedPayload(token)
        guard let claims = try? JSONDecoder().decode(AccessTokenClaims.self, from: payload) else {
            // A client's token has no `sid` of the app's: say it is for another audience.
            if (try? JSONDecoder().decode(ClientProbe.self, from: payload))?.clientID != nil { throw .wrongAudience }
            throw .malformed
        }
        guard (try? JSONDecoder().decode(ClientProbe.self, from: payload))?.clientID == nil else { throw .wrongAudience }
        try check(iss: claims.iss, aud: claims.aud, exp: claims.exp, nbf: claims.nbf)
        var user = GatehouseUser(
            userID: claims.sub, sessionID: claims.sid, plan: claims.plan ?? .free,
            planExpiresAt: claims.planExpiresAt.map { Date(timeIntervalSince1970: TimeInterval($0)) },
            isAnonymous: claims.isAnonymous ?? false, emailVerified: claims.emailVerified ?? false,
            phoneVerified: claims.phoneVerified ?? false, expiresAt: Date(timeIntervalSince1970: TimeInterval(claims.exp)),
            assuranceLevel: claims.aal ?? .aal1, authenticationMethods: claims.amr ?? [])
        (user.role, user.email, user.appMetadata, user.userMetadata) = (claims.role, claims.email, claims.appMetadata, claims.userMetadata)
        user.app = claims.app
        return user
    }

    /// What an access token of Gatehouse's OpenID provider grants, for a resource server: make the
    /// verifier with the resource's own audience (the client's registered `audience`), and a token
    /// for any other audience is refused with ``AccessTokenVerifier/Failure/wrongAudience``. The
    /// app's own tokens carry no `client_id` and are refused as ``AccessTokenVerifier/Failure/malformed``.
    /// Offline, like ``verify(_:)``: a token revoked at Gatehouse stays good here until it expires
    /// (ask `/oauth/introspect` where that matters).
    public func verifyClientAccess(_ token: String) async throws(Failure) -> GatehouseClientAccess {
        let payload = try await signedPayload(token)
        guard let claims = try? JSONDecoder().decode(OAuthAccessTokenClaims.self, from: payload), !claims.clientID.isEmpty else {
            throw .malformed
        }
        try check(iss: claims.iss, aud: claims.aud, exp: claims.exp, nbf: claims.nbf)
        let person = claims.sid != nil
        return GatehouseClientAccess(
            subject: claims.sub, clientID: claims.clientID, scopes: claims.scope.split(separator: " ").map(String.init),
            userID: person ? claims.sub : nil, sessionID: claims.sid, expiresAt: Date(timeIntervalSince1970: TimeInterval(claims.exp)))
    }

    private struct ClientProbe: Decodable {
        var clientID: String?
        enum CodingKeys: String, CodingKey { case clientID = "client_id" }
    }

    /// The payload of an ES256 `at+jwt` whose signature verifies with a published key.
    private func signedPayload(_ token: String) async throws(Failure) -> Data {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Data(base64URLEncoded: String(parts[0])),
            let payload = Data(base64URLEncoded: String(parts[1])), let signature = Data(base64URLEncoded: String(parts[2])),
            let header = try? JSONDecoder().decode(Header.self, from: headerData)
        else { throw .malformed }
        guard header.alg == "ES256", header.typ == "at+jwt", let kid = header.kid else { throw .unsupportedAlgorithm }
        let key = try await key(kid)
        guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            key.isValidSignature(ecdsa, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { throw .badSignature }
        return payload
    }

    private func check(iss: String, aud: String, exp: Int64, nbf: Int64?) throws(Failure) {
        guard iss == issuer else { throw .wrongIssuer }
        guard aud == audience else { throw .wrongAudience }
        let now = clock.now.timeIntervalSince1970
        guard TimeInterval(exp) + leeway > now else { throw .expired }
        if let nbf, TimeInterval(nbf) - leeway > now { throw .notYetValid }
    }

    /// The key for `kid`: from the cache while it is fresh, else after one (shared) fetch.
    private func key(_ kid: String) async throws(Failure) -> P256.Signing.PublicKey {
        let now = clock.now
        let stale = fetchedAt.map { now.timeIntervalSince($0) >= maxAge } ?? true
        if let key = keys[kid], !stale { return key }
        // Unknown kid or stale set: fetch, unless a fetch was tried moments ago.
        let mayFetch = lastAttempt.map { now.timeIntervalSince($0) >= minimumRefetchInterval } ?? true
        if mayFetch || inFlight != nil {
            await refresh()
        }
        if let key = keys[kid] { return key }
        throw fetchedAt == nil ? .keysUnavailable : .unknownKey
    }

    /// Fetches the key set once for all callers waiting at the same time. A failed fetch keeps
    /// the keys already known.
    private func refresh() async {
        if let inFlight {
            await inFlight.value
            return
        }
        lastAttempt = clock.now
        // Created here, the task runs on this actor: the keys are in place before any waiter
        // resumes.
        let task = Task { await self.load() }
        inFlight = task
        await task.value
        inFlight = nil
    }

    private func load() async {
        guard let data = try? await fetch.get(jwksURL), let set = try? JSONDecoder().decode(JWKSet.self, from: data) else { return }
        var fresh: [String: P256.Signing.PublicKey] = [:]
        for key in set.keys where key.kty == "EC" && key.crv == "P-256" {
            guard let kid = key.kid, let x = key.x.flatMap({ Data(base64URLEncoded: $0) }), let y = key.y.flatMap({ Data(base64URLEncoded: $0) }),
                x.count == 32, y.count == 32, let publicKey = try? P256.Signing.PublicKey(rawRepresentation: x + y)
            else { continue }
            fresh[kid] = publicKey
        }
        keys = fresh
        fetchedAt = clock.now
    }

    private struct JWKSet: Decodable {
        var keys: [JWK]
    }

    private struct JWK: Decodable {
        var kty: String
        var crv: String?
        var kid: String?
        var x: String?
        var y: String?
    }
}

/// Checks the Standard Webhooks signature Gatehouse puts on every auth-hook call
/// (`webhook-id`, `webhook-timestamp`, `webhook-signature`; docs/hooks.md), for an app's hook
/// endpoint written in Swift. Check it before reading the body:
///
/// ```swift
/// let signature = try HookSignature(secret: secretFromTheEnvironment)  // the whsec_… value
/// try signature.verify(body, id: request.headers[id], timestamp: request.headers[timestamp],
///                      signature: request.headers[signed])
/// ```
public struct HookSignature: Sendable {
    /// Why a call is refused.
    public enum Failure: Error, Equatable, Sendable {
        /// The secret is not `whsec_` and base64.
        case malformedSecret
        /// A header is missing, or the timestamp is not a number.
        case missingHeaders
        /// The timestamp is further from now than the tolerance: a replay, or a clock far off.
        case stale
        /// No `v1` signature matches the body.
        case mismatch
    }

    private let key: SymmetricKey
    /// How far the call's timestamp may be from now (default 5 minutes, Standard Webhooks').
    public let tolerance: TimeInterval

    /// - Parameters:
    ///   - secret: the `whsec_…` value Gatehouse has as `GATEHOUSE_HOOK_<NAME>_SECRET`.
    ///   - tolerance: how far a call's timestamp may be from now, in seconds.
    /// - Throws: ``Failure/malformedSecret`` when the secret is not `whsec_` and base64.
    public init(secret: String, tolerance: TimeInterval = 300) throws(Failure) {
        guard secret.hasPrefix("whsec_"), let bytes = Data(base64Encoded: String(secret.dropFirst("whsec_".count))), !bytes.isEmpty else {
            throw .malformedSecret
        }
        key = SymmetricKey(data: bytes)
        self.tolerance = tolerance
    }

    /// Checks `body` (the request's bytes, as received) against its three headers at `now`.
    public func verify(_ body: some DataProtocol, id: String?, timestamp: String?, signature: String?, now: Date = Date()) throws(Failure) {
        guard let id, let timestamp, let seconds = Int64(timestamp), let signature else { throw .missingHeaders }
        guard abs(now.timeIntervalSince1970 - TimeInterval(seconds)) <= tolerance else { throw .stale }
        var signed = Data("\(id).\(timestamp).".utf8)
        signed.append(contentsOf: body)
        // Several signatures may be sent (a secret being rotated): any `v1` one that matches.
        for entry in signature.split(separator: " ") {
            let parts = entry.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, parts[0] == "v1", let candidate = Data(base64Encoded: String(parts[1])) else { continue }
            // Compared in constant time.
            if HMAC<SHA256>.isValidAuthenticationCode(candidate, authenticating: signed, using: key) { return }
        }
        throw .mismatch
    }
}
#endif
