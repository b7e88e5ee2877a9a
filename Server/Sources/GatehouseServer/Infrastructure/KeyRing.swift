import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import JWTKit
import Logging
import Synchronization

/// The token-signing keys: the active ES256 key signs, retired keys keep verifying (and stay
/// in the JWKS) until every token they signed has expired.
///
/// Keys live in the database so that every node signs with the same key; private keys are
/// sealed with AES-256-GCM under a key derived from `GATEHOUSE_SECRET_KEY` when it is set.
public final class KeyRing: Sendable {
    private struct Snapshot {
        var active: SigningKeyRecord
        var published: [SigningKeyRecord]
        /// The public keys as served, decoded once per reload rather than per request.
        var jwks: JSONWebKeySet
        var collection: JWTKeyCollection
        var loadedAt: Date
    }

    private let store: any SigningKeyStore
    private let transactions: Transactions<any SigningKeyStore>
    private let clock: any WallClock
    private let sealer: SecretSealer
    private let logger: Logger
    private let snapshot: Mutex<Snapshot?> = Mutex(nil)
    /// Reloads asked for by tokens naming a key this node has not loaded yet.
    private let onDemand = Mutex<(running: Task<Void, Never>?, last: ContinuousClock.Instant?)>((nil, nil))
    /// At most one such reload a second, whatever `kid`s clients make up.
    static let onDemandInterval: Duration = .seconds(1)
    /// How often every node re-reads the keys (`KeyRingRefresh`).
    public static let reloadIntervalSeconds = 30

    /// How long a retired key stays published: the longest an access token it signed can be
    /// valid (lifetime plus leeway), counted from the moment the *last* node stops signing with
    /// it, which is up to one reload interval after the rotation (plus a margin).
    public static func retiredKeyPublishSeconds(accessTokenTTLSeconds: Int, leewaySeconds: Int) -> Int {
        accessTokenTTLSeconds + leewaySeconds + reloadIntervalSeconds + 5
    }

    public static let algorithm = "ES256"

    public init(store: any SigningKeyStore, transactions: Transactions<any SigningKeyStore>, clock: any WallClock, secretKey: String?, logger: Logger) {
        self.store = store
        self.transactions = transactions
        self.clock = clock
        self.sealer = SecretSealer(secret: secretKey)
        self.logger = logger
    }

    /// Makes sure an active key exists (generating one on first start), seals unsealed keys
    /// when a secret key is configured, and loads the ring.
    public func start() async throws {
        if try await store.signingKeys(publishedAt: clock.now).first(where: { $0.status == "active" }) == nil {
            do {
                let key = try makeKey()
                try await store.insertSigningKey(key)
                logger.info("generated a new signing key", metadata: ["kid": "\(key.kid)"])
            } catch StoreError.uniqueViolation {
                // Another node generated one at the same moment: use theirs.
            }
        }
        if sealer.seals {
            for key in try await store.allSigningKeys() where key.encryption == "none" {
                let sealed = try sealer.seal(key.privateKey)
                try await store.updateSigningKeyMaterial(kid: key.kid, privateKey: sealed.bytes, encryption: sealed.encryption)
                logger.info("encrypted a stored signing key at rest", metadata: ["kid": "\(key.kid)"])
            }
        }
        try await reload()
    }

    /// Re-reads the keys from the database (another node may have rotated).
    public func reload() async throws {
        let now = clock.now
        let published = try await store.signingKeys(publishedAt: now)
        guard let active = published.first(where: { $0.status == "active" }) else {
            throw GatehouseError.internalError(nil, message: "No active signing key.")
        }
        let collection = JWTKeyCollection()
        let serializer = DefaultJWTSerializer(jsonEncoder: JWTEncoder())
        let privateKey = try ES256PrivateKey(backing: P256.Signing.PrivateKey(rawRepresentation: try open(active)))
        await collection.add(ecdsa: privateKey, kid: JWKIdentifier(string: active.kid), serializer: serializer)
        for key in published where key.kid != active.kid {
            let raw = try open(key)
            let publicKey = try ES256PrivateKey(backing: P256.Signing.PrivateKey(rawRepresentation: raw)).publicKey
            await collection.add(ecdsa: publicKey, kid: JWKIdentifier(string: key.kid))
        }
        // Without a default key an unknown `kid` fails instead of falling back to the active key.
        await collection.clearDefault()
        let jwks = JSONWebKeySet(
            keys: try published.map { try JSONDecoder().decode(JSONWebKey.self, from: Data($0.publicJWK.utf8)) })
        snapshot.withLock {
            $0 = Snapshot(active: active, published: published, jwks: jwks, collection: collection, loadedAt: now)
        }
    }

    /// Retires the active key and makes a new one. The old key stays published for
    /// `keepPublishedFor` seconds: the longest an access token it signed can still be valid.
    @discardableResult
    public func rotate(keepPublishedFor seconds: Int) async throws -> (retired: String, active: String) {
        let now = clock.now
        let fresh = try makeKey()
        let retired = try await transactions.run { tx -> String in
            guard let current = try await tx.signingKeys(publishedAt: now).first(where: { $0.status == "active" }) else {
                throw GatehouseError.internalError(nil, message: "No active signing key to rotate.")
            }
            guard try await tx.retireSigningKey(kid: current.kid, at: now, publishUntil: now.addingTimeInterval(TimeInterval(seconds))) else {
                throw StoreError.conflict("the active key changed during rotation")
            }
            try await tx.insertSigningKey(fresh)
            return current.kid
        }
        try await reload()
        logger.notice("rotated the signing key", metadata: ["retired_kid": "\(retired)", "kid": "\(fresh.kid)"])
        return (retired, fresh.kid)
    }

    /// The public keys that may still verify a live token.
    public var jwks: JSONWebKeySet {
        snapshot.withLock { $0?.jwks ?? JSONWebKeySet(keys: []) }
    }

    /// The kid that signs new tokens.
    public var activeKID: String? { snapshot.withLock { $0?.active.kid } }

    /// Whether `kid` names a key that may verify tokens now.
    public func isPublished(_ kid: String) -> Bool {
        snapshot.withLock { $0?.published.contains { $0.kid == kid } ?? false }
    }

    /// Whether `kid` is published, reloading the keys first when it is not known here yet: a key
    /// rotated on another node then verifies on this one at once instead of at the next periodic
    /// reload. Only a `kid` shaped like a key thumbprint triggers a reload, at most one a second
    /// (callers arriving meanwhile wait for the reload in flight).
    public func isPublishedReloadingIfUnknown(_ kid: String) async -> Bool {
        if isPublished(kid) { return true }
        guard isBase64URLText(kid, lengths: 43...43) else { return false }
        let now = ContinuousClock.now
        let reload = onDemand.withLock { state -> Task<Void, Never>? in
            if let running = state.running { return running }
            if let last = state.last, now - last < Self.onDemandInterval { return nil }
            state.last = now
            let task = Task {
                do {
                    try await self.reload()
                } catch {
                    self.logger.backgroundWork(.signingKeyReload, endedBy: error)
                }
                self.onDemand.withLock { $0.running = nil }
            }
            state.running = task
            return task
        }
        await reload?.value
        return isPublished(kid)
    }

    /// The key collection for signing (active key) and verifying (all published keys).
    public var collection: JWTKeyCollection? { snapshot.withLock { $0?.collection } }

    private func makeKey() throws -> SigningKeyRecord {
        let privateKey = P256.Signing.PrivateKey()
        let point = privateKey.publicKey.x963Representation
        let x = Data(point[1..<33]).base64URLEncoded
        let y = Data(point[33..<65]).base64URLEncoded
        // RFC 7638 thumbprint: members in lexicographic order, no whitespace.
        let thumbprintInput = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        let kid = Data(SHA256.hash(data: Data(thumbprintInput.utf8))).base64URLEncoded
        let jwk = JSONWebKey(kty: "EC", crv: "P-256", x: x, y: y, kid: kid, alg: Self.algorithm, use: "sig")
        let jwkJSON = String(decoding: try JSONEncoder().encode(jwk), as: UTF8.self)
        let sealed = try sealer.seal(privateKey.rawRepresentation)
        return SigningKeyRecord(
            kid: kid, algorithm: Self.algorithm, privateKey: sealed.bytes, encryption: sealed.encryption, publicJWK: jwkJSON,
            status: "active", createdAt: clock.now)
    }

    private func open(_ key: SigningKeyRecord) throws -> Data {
        try sealer.open(key.privateKey, encryption: key.encryption, what: "signing key \(key.kid)")
    }
}

/// A key problem that stops the server from starting, said in one sentence.
public struct KeyRingError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// The JSON of a token's header and claims, through `CompactJSON`: the bytes Foundation's
/// `JSONEncoder` gives with `[.sortedKeys, .withoutEscapingSlashes]` and dates in Unix seconds
/// (RFC 7519's NumericDate), which signed tokens before. `JSONEncoder` took about 45 µs of a
/// refresh's 0.85 ms (BENCHMARKS.md, issue 61 step 18); `JWTEncoderTests` holds the bytes equal.
/// A value that writes itself (`DirectJSON`: a token's header, an access token's claims; neither
/// holds a date) is written so, without `Encoder`.
struct JWTEncoder: JWTJSONEncoder {
    func encode<T: Encodable>(_ value: T) throws -> Data {
        if let direct = value as? any DirectJSON { return Data(try CompactJSON.encode(direct)) }
        return Data(try CompactJSON.encode(value, dates: .secondsSince1970))
    }
}
