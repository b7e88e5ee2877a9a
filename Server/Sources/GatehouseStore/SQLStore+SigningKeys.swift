import Foundation
import GatehouseCore

extension SQLStore {
    private static let keyColumns =
        "kid, algorithm, private_key, encryption, public_jwk, status, created_at, retired_at, publish_until"

    public func signingKeys(publishedAt now: Date) async throws(StoreError) -> [SigningKeyRecord] {
        try await executor.query(
            """
            SELECT \(Self.keyColumns) FROM signing_keys
            WHERE status = 'active' OR publish_until > ?
            ORDER BY created_at DESC, kid DESC
            """, [.integer(now.unixSeconds)]
        ).map(Self.key(from:))
    }

    public func allSigningKeys() async throws(StoreError) -> [SigningKeyRecord] {
        try await executor.query("SELECT \(Self.keyColumns) FROM signing_keys ORDER BY created_at DESC, kid DESC")
            .map(Self.key(from:))
    }

    public func insertSigningKey(_ key: SigningKeyRecord) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO signing_keys (\(Self.keyColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(key.kid), .text(key.algorithm), .blob(key.privateKey), .text(key.encryption),
                .text(key.publicJWK), .text(key.status), .integer(key.createdAt.unixSeconds),
                SQLValue(key.retiredAt?.unixSeconds), SQLValue(key.publishUntil?.unixSeconds),
            ])
    }

    public func retireSigningKey(kid: String, at date: Date, publishUntil: Date) async throws(StoreError) -> Bool {
        let rows = try await executor.query(
            """
            UPDATE signing_keys SET status = 'retired', retired_at = ?, publish_until = ?
            WHERE kid = ? AND status = 'active' RETURNING kid
            """, [.integer(date.unixSeconds), .integer(publishUntil.unixSeconds), .text(kid)])
        return !rows.isEmpty
    }

    public func updateSigningKeyMaterial(kid: String, privateKey: [UInt8], encryption: String) async throws(StoreError) {
        try await executor.query(
            "UPDATE signing_keys SET private_key = ?, encryption = ? WHERE kid = ?",
            [.blob(privateKey), .text(encryption), .text(kid)])
    }

    private static func key(from row: SQLRow) throws(StoreError) -> SigningKeyRecord {
        SigningKeyRecord(
            kid: try row.string("kid"), algorithm: try row.string("algorithm"), privateKey: try row.bytes("private_key"),
            encryption: try row.string("encryption"), publicJWK: try row.string("public_jwk"),
            status: try row.string("status"), createdAt: Date(unixSeconds: try row.int("created_at")),
            retiredAt: try row.optionalInt("retired_at").map(Date.init(unixSeconds:)),
            publishUntil: try row.optionalInt("publish_until").map(Date.init(unixSeconds:)))
    }
}
