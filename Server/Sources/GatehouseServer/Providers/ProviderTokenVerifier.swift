import AsyncHTTPClient
import Crypto
import Foundation
import GatehouseCore
import GatehouseWire
import JWTKit
import Logging
import NIOCore
import GatehouseStore
import ServiceLifecycle
import Tracing

/// A provider's public signing keys (Apple's or Google's JWKS), fetched over HTTP and cached for
/// as long as the response's `Cache-Control: max-age` says (an hour when it says nothing, a day
/// at most). A token signed with a key not in the cache causes one refetch, at most once a
/// minute; concurrent callers share one fetch. When a fetch fails and no usable key is cached,
/// the caller gets 503 `provider_unavailable`. After a failed fetch the next may start 5 s later,
/// then 10, 20 and 40 s, then once a minute: a key server that keeps failing sees few requests,
/// and one that failed once (a blip while the server starts) does not shut sign-in for a minute.
actor ProviderKeySet {
    let url: URL
    let client: HTTPClient
    let clock: any WallClock
    let logger: Logger
    /// Each fetch is a `provider.keys.fetch` span (nil: traces are off).
    let tracer: (any Tracer)?
    private var keys: [String: JWTKeyCollection] = [:]
    private var expiresAt: Date?
    private var lastFetch: Date?
    private var failures = 0
    private var inFlight: Task<Void, any Error>?

    static let refetchInterval: TimeInterval = 60
    static let firstRetry: TimeInterval = 5
    static let fetchTimeout: TimeAmount = .seconds(5)

    /// How long after the last fetch the next may start: a minute after one that worked (an
    /// unknown `kid` refetches no sooner), 5 s after a failure, doubling up to a minute.
    private var retryInterval: TimeInterval {
        failures == 0 ? Self.refetchInterval : min(Self.refetchInterval, Self.firstRetry * Double(1 << min(failures - 1, 4)))
    }

    /// When the next fetch may start.
    var nextAttempt: Date { lastFetch.map { $0.addingTimeInterval(retryInterval) } ?? clock.now }

    init(url: URL, client: HTTPClient, clock: any WallClock, logger: Logger, tracer: (any Tracer)? = nil) {
        self.tracer = tracer
        self.url = url
        self.client = client
        self.clock = clock
        self.logger = logger
    }

    enum Lookup {
        case key(JWTKeyCollection)
        case unknownKey
    }

    /// The verifier for `kid`.
    func key(_ kid: String) async throws -> Lookup {
        let now = clock.now
        let fresh = expiresAt.map { now < $0 } ?? false
        if fresh, let key = keys[kid] { return .key(key) }
        // Fetches are spaced out, failed ones included (finding 15): made-up `kid`s, or a key
        // server that keeps failing, must not turn each sign-in into an outbound request.
        let mayFetch = now >= nextAttempt
        if !mayFetch, let inFlight {
            // A fetch is under way (the background prefetch, say): its answer is the one to use.
            _ = try? await inFlight.value
        }
        if mayFetch {
            do {
                try await refresh()
            } catch {
                logger.warning("could not fetch provider keys", metadata: ["url": "\(url)", "cause": "\(error)"])
                // A stale key still verifies while the provider's key server is down.
                if let key = keys[kid] { return .key(key) }
                throw unavailable(error)
            }
        } else if keys.isEmpty, failures > 0 {
            // The last fetch failed moments ago and nothing is cached: still down.
            throw unavailable(nil)
        }
        return keys[kid].map(Lookup.key) ?? .unknownKey
    }

    /// Fetches the keys unless the cache is fresh or a failed fetch is being backed off from;
    /// returns when to look again (a minute before the cache expires, a minute from now at the
    /// soonest, or when the back-off ends).
    func prefetch() async throws -> Date {
        let now = clock.now
        if let expiresAt, now < expiresAt, !keys.isEmpty { return max(now.addingTimeInterval(60), expiresAt.addingTimeInterval(-60)) }
        if failures > 0, now < nextAttempt { return nextAttempt }
        try await refresh()
        let expiry = expiresAt ?? now.addingTimeInterval(3_600)
        return max(clock.now.addingTimeInterval(60), expiry.addingTimeInterval(-60))
    }

    private func unavailable(_ error: (any Error)?) -> GatehouseError {
        GatehouseError(
            status: 503, code: .providerUnavailable,
            message: "The sign-in provider cannot be reached right now. Please try again shortly.", retryAfter: 30, underlying: error)
    }

    private func refresh() async throws {
        if let inFlight { return try await inFlight.value }
        let task = Task { try await self.fetch() }
        inFlight = task
        defer { inFlight = nil }
        try await task.value
    }

    private func fetch() async throws {
        lastFetch = clock.now
        do {
            try await traced(tracer, "provider.keys.fetch", attributes: ["url.full": .string(url.absoluteString)]) { try await load() }
            failures = 0
        } catch {
            failures += 1
            throw error
        }
    }

    private func load() async throws {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await client.execute(request, timeout: Self.fetchTimeout)
        guard response.status == .ok else { throw ProviderError("key server answered \(response.status.code)") }
        let body = try await response.body.collect(upTo: 1 << 20)
        let jwks = try JSONDecoder().decode(JWKS.self, from: Data(buffer: body))
        var fetched: [String: JWTKeyCollection] = [:]
        for jwk in jwks.keys {
            // RS256 only: other key types and algorithms are ignored.
            guard jwk.keyType == .rsa, let kid = jwk.keyIdentifier?.string, jwk.algorithm == nil || jwk.algorithm == .rs256,
                let modulus = jwk.modulus, let exponent = jwk.exponent
            else { continue }
            let key = try Insecure.RSA.PublicKey(modulus: modulus, exponent: exponent)
            fetched[kid] = await JWTKeyCollection().add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
        }
        keys = fetched
        let maxAge = Self.maxAge(response.headers.first(name: "Cache-Control")) ?? 3_600
        expiresAt = clock.now.addingTimeInterval(TimeInterval(min(max(maxAge, 60), 86_400)))
    }

    static func maxAge(_ header: String?) -> Int? {
        guard let header else { return nil }
        for directive in header.split(separator: ",") {
            let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "max-age", let seconds = Int(parts[1]) { return seconds }
        }
        return nil
    }
}

/// Keeps the configured providers' keys fresh in the background, so that sign-ins normally
/// find them cached: fetched at start, then again shortly before the cache expires.
struct ProviderKeysRefresh: Service {
    let keySets: [ProviderKeySet]
    let clock: any WallClock
    let logger: Logger

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for keys in keySets {
                    group.addTask {
                        while !Task.isCancelled {
                            let next: Date
                            do {
                                next = try await keys.prefetch()
                            } catch {
                                logger.backgroundWork(.providerKeyPrefetch, endedBy: error, metadata: ["url": "\(keys.url)"])
                                next = await keys.nextAttempt
                            }
                            try await Task.sleep(for: .seconds(max(1, next.timeIntervalSince(clock.now))))
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }
}

struct ProviderError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The claims Gatehouse reads from an Apple or Google id_token. Booleans may arrive as strings
/// (Apple sends `"true"`).
struct ProviderClaims: JWTPayload {
    var iss: String
    var aud: [String]
    var sub: String
    var exp: Double
    var iat: Double
    var email: String?
    var emailVerified: Bool?
    var isPrivateEmail: Bool?
    var nonce: String?
    var name: String?
    var picture: String?
    /// The authorised party: the client the token was issued to when `aud` names several.
    var azp: String?

    enum CodingKeys: String, CodingKey {
        case iss, aud, sub, exp, iat, email, nonce, name, picture, azp
        case emailVerified = "email_verified"
        case isPrivateEmail = "is_private_email"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        iss = try c.decode(String.self, forKey: .iss)
        aud = try c.decodeAudience(forKey: .aud)
        sub = try c.decode(String.self, forKey: .sub)
        exp = try c.decode(Double.self, forKey: .exp)
        iat = try c.decode(Double.self, forKey: .iat)
        email = try c.decodeIfPresent(String.self, forKey: .email)
        emailVerified = Self.flexibleBool(c, .emailVerified)
        isPrivateEmail = Self.flexibleBool(c, .isPrivateEmail)
        nonce = try c.decodeIfPresent(String.self, forKey: .nonce)
        name = try? c.decodeIfPresent(String.self, forKey: .name)
        picture = try? c.decodeIfPresent(String.self, forKey: .picture)
        azp = try c.decodeIfPresent(String.self, forKey: .azp)
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(iss, forKey: .iss)
        try c.encode(aud, forKey: .aud)
        try c.encode(sub, forKey: .sub)
        try c.encode(exp, forKey: .exp)
        try c.encode(iat, forKey: .iat)
        try c.encodeIfPresent(email, forKey: .email)
        try c.encodeIfPresent(emailVerified, forKey: .emailVerified)
        try c.encodeIfPresent(isPrivateEmail, forKey: .isPrivateEmail)
        try c.encodeIfPresent(nonce, forKey: .nonce)
        try c.encodeIfPresent(azp, forKey: .azp)
    }

    private static func flexibleBool(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) -> Bool? {
        if let value = try? c.decode(Bool.self, forKey: key) { return value }
        if let text = try? c.decode(String.self, forKey: key) { return text.lowercased() == "true" }
        return nil
    }

    /// Checked by `ProviderTokenVerifier`; jwt-kit only checks the signature.
    func verify(using algorithm: some JWTAlgorithm) throws {}
}

/// The claims of an Apple server-to-server notification; `events` is a JSON object, sent as a
/// string.
struct AppleEventClaims: JWTPayload {
    var iss: String
    var aud: [String]
    var iat: Double
    var exp: Double?
    var jti: String
    var events: String

    enum CodingKeys: String, CodingKey {
        case iss, aud, iat, exp, jti, events
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        iss = try c.decode(String.self, forKey: .iss)
        aud = try c.decodeAudience(forKey: .aud)
        iat = try c.decode(Double.self, forKey: .iat)
        exp = try c.decodeIfPresent(Double.self, forKey: .exp)
        jti = try c.decode(String.self, forKey: .jti)
        if let text = try? c.decode(String.self, forKey: .events) {
            events = text
        } else {
            let object = try c.decode([String: JSONValue].self, forKey: .events)
            events = String(decoding: try JSONEncoder().encode(object), as: UTF8.self)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(iss, forKey: .iss)
        try c.encode(aud, forKey: .aud)
        try c.encode(iat, forKey: .iat)
        try c.encodeIfPresent(exp, forKey: .exp)
        try c.encode(jti, forKey: .jti)
        try c.encode(events, forKey: .events)
    }

    func verify(using algorithm: some JWTAlgorithm) throws {}
}

extension KeyedDecodingContainer {
    /// A JWT `aud`: one string or an array of them.
    func decodeAudience(forKey key: Key) throws -> [String] {
        if let single = try? decode(String.self, forKey: key) { return [single] }
        return try decode([String].self, forKey: key)
    }
}

/// What a verified provider token says about the person.
struct ProviderIdentity: Sendable, Equatable {
    var provider: Provider
    var subject: String
    var email: String?
    var emailVerified: Bool
    var isPrivateRelay: Bool
    var name: String?
    var picture: String?
}

/// Verifies Apple and Google id_tokens: RS256 signature with the provider's published key,
/// issuer, audience, `exp`/`iat` with leeway, and the nonce both ways.
struct ProviderTokenVerifier: Sendable {
    let provider: Provider
    let issuers: Set<String>
    let audiences: Set<String>
    let keys: ProviderKeySet
    let clock: any WallClock
    let leeway: TimeInterval
    let failureMessage: String

    static let appleIssuers: Set<String> = ["https://appleid.apple.com"]
    static let googleIssuers: Set<String> = ["accounts.google.com", "https://accounts.google.com"]

    func verify(_ token: String, rawNonce: String?) async throws -> ProviderIdentity {
        let claims = try await verifiedClaims(token, as: ProviderClaims.self)
        let now = clock.now.timeIntervalSince1970
        guard issuers.contains(claims.iss), !audiences.isDisjoint(with: claims.aud), claims.exp + leeway > now,
            claims.iat <= now + leeway, !claims.sub.isEmpty
        else { throw invalid }
        // OpenID Connect Core §3.1.3.7: a token for several audiences names the client it was
        // issued to in `azp`, and that client must be ours (finding 16).
        if claims.aud.count > 1 || claims.azp != nil {
            guard let azp = claims.azp, audiences.contains(azp) else { throw invalid }
        }
        // The nonce: a token that carries one needs the request's, and the other way round.
        switch (claims.nonce, rawNonce) {
        case (nil, nil):
            break
        case (let expected?, let raw?):
            // Apple carries SHA-256(raw) in hex; Google carries the raw value.
            let presented = provider == .apple ? SHA256.hash(data: Data(raw.utf8)).map { String(format: "%02x", $0) }.joined() : raw
            guard constantTimeEquals(Array(presented.utf8), Array(expected.utf8)) else { throw invalid }
        default:
            throw invalid
        }
        let relay = claims.isPrivateEmail == true || claims.email?.lowercased().hasSuffix("@privaterelay.appleid.com") == true
        return ProviderIdentity(
            provider: provider, subject: claims.sub, email: claims.email, emailVerified: claims.emailVerified == true,
            isPrivateRelay: provider == .apple && relay, name: claims.name, picture: claims.picture)
    }

    /// How old an Apple event may be when it arrives (Apple sends them at once and retries
    /// within minutes); older ones are refused as replays (finding 14).
    static let eventMaxAge: TimeInterval = 600

    /// An Apple server-to-server event whose signature, issuer and audience check out, issued
    /// within the last `eventMaxAge` (and not expired when it says when it expires). The caller
    /// records `jti` so each event is applied once.
    func verifiedEvent(_ token: String) async throws -> AppleEvent {
        let claims = try await verifiedClaims(token, as: AppleEventClaims.self)
        let now = clock.now.timeIntervalSince1970
        guard issuers.contains(claims.iss), !audiences.isDisjoint(with: claims.aud), claims.iat <= now + leeway,
            claims.iat >= now - Self.eventMaxAge - leeway, claims.exp.map({ $0 + leeway > now }) ?? true,
            !claims.jti.isEmpty, claims.jti.utf8.count <= 256,
            let data = claims.events.data(using: .utf8),
            let events = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let type = events["type"] as? String, let sub = events["sub"] as? String
        else { throw invalid }
        let relay = (events["is_private_email"] as? Bool) ?? (events["is_private_email"] as? String).map { $0.lowercased() == "true" }
        return AppleEvent(
            type: type, sub: sub, email: events["email"] as? String, isPrivateEmail: relay, id: claims.jti,
            keepUntil: Date(timeIntervalSince1970: max(claims.iat + Self.eventMaxAge, claims.exp ?? 0) + leeway))
    }

    /// The claims of a token whose header and signature check out.
    func verifiedClaims<Payload: JWTPayload>(_ token: String, as payload: Payload.Type = ProviderClaims.self) async throws -> Payload {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Data(base64URLEncoded: String(parts[0])),
            Data(base64URLEncoded: String(parts[1])) != nil, Data(base64URLEncoded: String(parts[2])) != nil,
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            header["alg"] as? String == "RS256", let kid = header["kid"] as? String, !kid.isEmpty
        else { throw invalid }
        guard case .key(let collection) = try await keys.key(kid) else { throw invalid }
        do {
            return try await collection.verify(token, as: Payload.self)
        } catch {
            throw invalid
        }
    }

    var invalid: GatehouseError {
        GatehouseError(status: 401, code: .invalidIDToken, message: failureMessage)
    }
}
