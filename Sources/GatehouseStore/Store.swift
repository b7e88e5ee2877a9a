import Foundation
import GatehouseCore

/// Accounts and their linked identities.
public protocol UserStore: Sendable {
    /// Inserts a new user; `.uniqueViolation` when the email or handle is taken.
    func insertUser(_ user: User) async throws(StoreError)
    func user(id: UserID) async throws(StoreError) -> User?
    func user(normalizedEmail: String) async throws(StoreError) -> User?
    /// Newest first. `search` matches the start of the normalised email or handle, or the exact id.
    func users(search: String?, before: UserCursor?, limit: Int) async throws(StoreError) -> [User]
    /// Sets or clears the disabled state; false when no such user exists.
    func setDisabled(_ id: UserID, at date: Date?, reason: String?, now: Date) async throws(StoreError) -> Bool
    func insertIdentity(_ identity: Identity) async throws(StoreError)
    func identities(of userID: UserID) async throws(StoreError) -> [Identity]
}

/// Where a page of the user list ends: the last user's creation time and id.
public struct UserCursor: Sendable, Equatable {
    public var createdAt: Int64
    public var id: String

    public init(createdAt: Int64, id: String) {
        self.createdAt = createdAt
        self.id = id
    }

    public init?(_ token: String) {
        let parts = token.split(separator: "_", maxSplits: 1)
        guard parts.count == 2, let time = Int64(parts[0]), UserID(String(parts[1])) != nil else { return nil }
        self.createdAt = time
        self.id = String(parts[1])
    }

    public var token: String { "\(createdAt)_\(id)" }
}

/// A token-signing key as stored. The private key is encrypted when `encryption` is not `none`.
public struct SigningKeyRecord: Sendable, Equatable {
    public var kid: String
    public var algorithm: String
    public var privateKey: [UInt8]
    public var encryption: String
    /// The public JWK as JSON.
    public var publicJWK: String
    /// `active` (signs new tokens) or `retired` (verifies until `publishUntil`).
    public var status: String
    public var createdAt: Date
    public var retiredAt: Date?
    public var publishUntil: Date?

    public init(
        kid: String, algorithm: String, privateKey: [UInt8], encryption: String, publicJWK: String,
        status: String, createdAt: Date, retiredAt: Date? = nil, publishUntil: Date? = nil
    ) {
        self.kid = kid
        self.algorithm = algorithm
        self.privateKey = privateKey
        self.encryption = encryption
        self.publicJWK = publicJWK
        self.status = status
        self.createdAt = createdAt
        self.retiredAt = retiredAt
        self.publishUntil = publishUntil
    }
}

/// Token-signing keys.
public protocol SigningKeyStore: Sendable {
    /// The active key and every retired key still published at `now`, newest first.
    func signingKeys(publishedAt now: Date) async throws(StoreError) -> [SigningKeyRecord]
    /// Every key ever stored, newest first (for `gatehouse keys list`).
    func allSigningKeys() async throws(StoreError) -> [SigningKeyRecord]
    /// `.uniqueViolation` when another active key exists already.
    func insertSigningKey(_ key: SigningKeyRecord) async throws(StoreError)
    /// Retires the active key; false when `kid` was not the active key.
    func retireSigningKey(kid: String, at date: Date, publishUntil: Date) async throws(StoreError) -> Bool
    /// Replaces a key's stored private key and encryption, e.g. when encryption is turned on.
    func updateSigningKeyMaterial(kid: String, privateKey: [UInt8], encryption: String) async throws(StoreError)
}

/// All of Gatehouse's storage, behind one protocol with a SQLite and a PostgreSQL
/// implementation that pass the same contract suite.
public protocol GatehouseStore: UserStore, SigningKeyStore {
    var dialect: SQLDialect { get }
    /// Runs `body` in one transaction against a store bound to it.
    func transaction<T: Sendable>(_ body: @Sendable (any GatehouseStore) async throws -> T) async throws -> T
    /// Throws `.unavailable` when the database does not answer promptly.
    func ping() async throws(StoreError)
}
