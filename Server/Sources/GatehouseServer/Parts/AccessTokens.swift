import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import JWTKit
import Synchronization

// Retroactive: the claims are Wire's (the root package, shared with the verifier and the SDK),
// JWTPayload is jwt-kit's; only the server signs with jwt-kit.
extension AccessTokenClaims: @retroactive JWTPayload {
    /// Claim checks need the injected clock and the preset's leeway, so they happen in
    /// `AccessTokens.verify`; jwt-kit only checks the signature.
    public func verify(using algorithm: some JWTAlgorithm) throws {}
}

/// Who a verified access token speaks for.
public struct AccessIdentity: Sendable, Equatable {
    public var userID: UserID
    public var sessionID: SessionID
    public var isAnonymous: Bool
    public var issuedAt: Date
    /// What the token claims of how its holder signed in (`aal`, the latest `amr` time); nil
    /// for a token without an `amr`.
    public var claimedAssurance: Assurance? = nil
    /// The last moment the token is accepted: its `exp` plus the preset's leeway.
    public var usableUntil: Date = .distantFuture
}

/// Issues and verifies tokens: ES256 access tokens (`typ: at+jwt`) and opaque refresh tokens.
///
/// Refresh tokens are 256 random bits at sign-in; each successor is HMAC-SHA256 of its
/// predecessor under a server secret, so a token presented again moments after its rotation
/// gets the very same successor back without any plaintext token being stored: only SHA-256
/// hashes are.
public struct AccessTokens: Sendable {
    static let accessTokenType = "at+jwt"
    let keys: KeyRing
    let chainKey: RefreshChainKey
    let issuer: String
    let audience: String
    let settings: TokenSettings
    let clock: any WallClock
    /// For the `plan` and `plan_expires_at` claims.
    let engine: EntitlementEngine
    /// Access tokens whose signature this node has already checked (shared by copies).
    let verifiedTokens = VerifiedTokenCache()

    /// A new session's first refresh token.
    func newRefreshToken() -> String {
        randomToken(bytes: 32)
    }

    /// The token that replaces `token` at rotation.
    func successor(of token: String) throws -> String {
        Data(HMAC<SHA256>.authenticationCode(for: Data(token.utf8), using: try chainKey.key())).base64URLEncoded
    }

    /// The contract's Session object for `refreshToken` with a fresh access token.
    /// `reader` is the store (or the caller's transaction) the plan claims are read from.
    /// `supabase`: Supabase's claims for a token `/auth/v1` issues; without it, the preset's
    /// `tokens.supabase_claims` decides whether `role`, `email` and `app_metadata` are added.
    /// `app`: the app's claims from its `CUSTOM_ACCESS_TOKEN` hook (checked against `AppClaims`).
    func session(
        for user: User, session: Session, refreshToken: String, in reader: any PlanLedgerStore, supabase: SupabaseClaims? = nil,
        app: [String: JSONValue]?
    ) async throws -> SessionPayload {
        let now = clock.now
        let expires = now.unixSeconds + Int64(settings.accessTokenTTLSeconds)
        let input = try await engine.storedInput(for: user, in: reader)
        var claims = AccessTokenClaims(
            iss: issuer, aud: audience, sub: user.id.description, sid: session.id.description, iat: now.unixSeconds,
            nbf: now.unixSeconds, exp: expires, isAnonymous: user.isAnonymous, plan: engine.state(of: input, at: now),
            emailVerified: user.emailVerified, planExpiresAt: engine.planExpiry(input, at: now)?.unixSeconds,
            amr: session.authenticationMethods.map { AuthenticationMethodReference(method: $0.method, timestamp: $0.at.unixSeconds) },
            aal: session.assurance, phoneVerified: user.phoneVerifiedAt != nil)
        if let supabase = supabase ?? (settings.supabaseClaims ? SupabaseClaims(user) : nil) {
            supabase.add(to: &claims, user: user, session: session)
        }
        if let app {
            // Read strictly where the hook answered; checked again where they are signed.
            guard AppClaims.problem(app) == nil else { throw GatehouseError.internalError(nil) }
            claims.app = app
        }
        guard let collection = keys.collection, let kid = keys.activeKID else {
            throw GatehouseError.internalError(nil)
        }
        var header = JWTHeader()
        header.typ = Self.accessTokenType
        let token = try await collection.sign(claims, kid: JWKIdentifier(string: kid), header: header)
        return SessionPayload(
            accessToken: token, expiresIn: settings.accessTokenTTLSeconds, expiresAt: expires, refreshToken: refreshToken,
            sessionID: session.id.description)
    }

    /// The `app` claims of a token this server has just signed (read without checking it again).
    static func appClaims(of token: String) -> [String: JSONValue]? {
        let parts = token.split(separator: ".")
        guard parts.count == 3, let payload = Data(base64URLEncoded: String(parts[1])) else { return nil }
        return (try? JSONDecoder().decode(AppOnly.self, from: payload))?.app
    }

    private struct AppOnly: Decodable {
        var app: [String: JSONValue]?
    }

    /// Checks an access token completely: header (ES256 only, `typ: at+jwt`, a known `kid`),
    /// signature, issuer, audience and times with the preset's leeway.
    static let expired = GatehouseError(
        status: 401, code: .tokenExpired, message: "Your session token has expired. Refresh it and try again.")

    func verify(_ token: String) async throws -> AccessIdentity {
        var token = token
        let digest = token.withUTF8 { bytes in
            var hasher = SHA256()
            hasher.update(bufferPointer: UnsafeRawBufferPointer(bytes))
            return hasher.finalize()
        }
        let claimed: VerifiedTokenCache.Claimed?
        if let seen = verifiedTokens.entry(digest), keys.isPublished(seen.kid) {
            // The same bytes were verified before: the header and signature checks and the
            // claims that do not change with time would pass again; only the times are checked.
            claimed = seen.claimed
        } else {
            let (claims, kid) = try await verifySignature(token)
            claimed = VerifiedTokenCache.Claimed(claims, issuer: issuer, audience: audience)
            verifiedTokens.insert(digest, VerifiedTokenCache.Entry(claimed: claimed, kid: kid, exp: claims.exp), now: clock.now.unixSeconds)
        }
        let now = clock.now.unixSeconds
        let leeway = Int64(settings.leewaySeconds)
        guard let claimed, claimed.nbf <= now + leeway, claimed.iat <= now + leeway else { throw Self.invalid }
        guard claimed.exp + leeway > now else { throw Self.expired }
        return AccessIdentity(
            userID: claimed.userID, sessionID: claimed.sessionID, isAnonymous: claimed.isAnonymous, issuedAt: Date(unixSeconds: claimed.iat),
            claimedAssurance: claimed.assurance, usableUntil: Date(unixSeconds: claimed.exp + leeway))
    }

    /// Header (ES256 only, `typ: at+jwt`, a published `kid`) and signature.
    private func verifySignature(_ token: String) async throws -> (AccessTokenClaims, kid: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        // Every part in its one exact base64url spelling before jwt-kit sees it (finding 12:
        // jwt-kit's decoder took a signature with `=` padding appended).
        guard parts.count == 3, let headerData = Data(base64URLEncoded: String(parts[0])),
            Data(base64URLEncoded: String(parts[1])) != nil, Data(base64URLEncoded: String(parts[2])) != nil,
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any]
        else {
            throw Self.invalid
        }
        guard header["alg"] as? String == KeyRing.algorithm, header["typ"] as? String == Self.accessTokenType,
            let kid = header["kid"] as? String, await keys.isPublishedReloadingIfUnknown(kid), let collection = keys.collection
        else {
            throw Self.invalid
        }
        do {
            return (try await collection.verify(token, as: AccessTokenClaims.self), kid)
        } catch {
            throw Self.invalid
        }
    }

    static let invalid = GatehouseError.unauthorized("The access token is missing or not valid.")
}

/// Supabase's claims beside Gatehouse's own (issue 46): `role` (`authenticated`, as GoTrue gives
/// every signed-in account), `email` and `app_metadata` where the preset's
/// `tokens.supabase_claims` asks for them; every claim of GoTrue's tokens (`phone`,
/// `user_metadata`, `session_id` too) in tokens `/auth/v1` issues.
struct SupabaseClaims: Sendable {
    static let role = GoTrueUser.audience
    var appMetadata: [String: JSONValue]
    /// nil: the preset switch's three claims only.
    var userMetadata: [String: JSONValue]?

    /// The preset switch's: the operator's `app_metadata` as it is stored.
    init(_ user: User) {
        appMetadata = user.appMetadata
        userMetadata = nil
    }

    /// `/auth/v1`'s: the objects as GoTrue's user shows them.
    init(appMetadata: [String: JSONValue], userMetadata: [String: JSONValue]) {
        self.appMetadata = appMetadata
        self.userMetadata = userMetadata
    }

    func add(to claims: inout AccessTokenClaims, user: User, session: Session) {
        claims.role = Self.role
        claims.email = user.email ?? ""
        claims.appMetadata = appMetadata
        guard let userMetadata else { return }
        claims.userMetadata = userMetadata
        claims.phone = GoTrueUser.phone(user.phone)
        claims.sessionID = session.id.description
    }
}

/// Access tokens whose header and signature this node has verified, keyed by the token's
/// SHA-256, so that a token presented again (an app calls with one token for up to 15 minutes)
/// skips the ES256 verification, the largest cost of an authenticated call. Claims that depend on
/// the time, the key still being published and the session are checked on every call, so expiry,
/// rotation and revocation work as before. Bounded: expired entries go first, then all.
final class VerifiedTokenCache: Sendable {
    /// What a verified token says that does not change with time, read once when its signature
    /// is checked; nil when the claims are not all there or not this server's (Gatehouse's own
    /// tokens carry every claim; one without them is not one of ours).
    struct Claimed: Sendable {
        let userID: UserID
        let sessionID: SessionID
        let isAnonymous: Bool
        let nbf: Int64
        let iat: Int64
        let exp: Int64
        let assurance: Assurance?

        init?(_ claims: AccessTokenClaims, issuer: String, audience: String) {
            guard claims.iss == issuer, claims.aud == audience, let userID = UserID(claims.sub), let sessionID = SessionID(claims.sid),
                let nbf = claims.nbf, let iat = claims.iat, let isAnonymous = claims.isAnonymous, claims.plan != nil,
                claims.emailVerified != nil
            else { return nil }
            self.userID = userID
            self.sessionID = sessionID
            self.isAnonymous = isAnonymous
            self.nbf = nbf
            self.iat = iat
            exp = claims.exp
            assurance = Assurance(aal: claims.aal, amr: claims.amr ?? [])
        }
    }

    struct Entry: Sendable {
        /// nil: the signature is good but the token is not one of ours, every time.
        let claimed: Claimed?
        let kid: String
        let exp: Int64
    }

    static let capacity = 20_000
    private let entries = Mutex<[SHA256Digest: Entry]>([:])

    func entry(_ digest: SHA256Digest) -> Entry? {
        entries.withLock { $0[digest] }
    }

    func insert(_ digest: SHA256Digest, _ entry: Entry, now: Int64) {
        entries.withLock { entries in
            if entries.count >= Self.capacity {
                entries = entries.filter { $0.value.exp > now }
                if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[digest] = entry
        }
    }
}

/// The key that chains refresh tokens: 32 random bytes made on first start, kept in the
/// database (sealed like signing keys) so every node derives the same successors. Loaded once
/// the database is reachable, before the first request.
final class RefreshChainKey: Sendable {
    static let name = "refresh_chain_key"
    private let loaded = Mutex<SymmetricKey?>(nil)

    func key() throws -> SymmetricKey {
        guard let key = loaded.withLock({ $0 }) else {
            throw GatehouseError.internalError(KeyRingError("the refresh-chain key is not loaded"))
        }
        return key
    }

    /// A key for another purpose, derived from this one (HKDF-SHA256 with `label`), so that one
    /// stored secret serves every keyed hash without any two sharing a key.
    func derived(_ label: String) throws -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: try key(), info: Data(label.utf8), outputByteCount: 32)
    }

    func load(store: any SecretStore, sealer: SecretSealer, now: Date) async throws {
        let key = try await Self.fetchOrCreate(store: store, sealer: sealer, now: now)
        loaded.withLock { $0 = key }
    }

    private static func fetchOrCreate(store: any SecretStore, sealer: SecretSealer, now: Date) async throws -> SymmetricKey {
        if let stored = try await store.secret(named: name) {
            if stored.encryption == "none", sealer.seals {
                let sealed = try sealer.seal(stored.value)
                try await store.updateSecret(named: name, value: sealed.bytes, encryption: sealed.encryption)
            }
            return SymmetricKey(data: try sealer.open(stored.value, encryption: stored.encryption, what: "the refresh-token key"))
        }
        let fresh = SymmetricKey(size: .bits256)
        let sealed = try fresh.withUnsafeBytes { try sealer.seal(Array($0)) }
        do {
            try await store.insertSecret(named: name, value: sealed.bytes, encryption: sealed.encryption, at: now)
            return fresh
        } catch StoreError.uniqueViolation {
            // Another node made it first.
            return try await fetchOrCreate(store: store, sealer: sealer, now: now)
        }
    }
}
