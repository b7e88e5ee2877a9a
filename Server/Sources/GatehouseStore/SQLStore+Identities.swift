import Foundation
import GatehouseCore
import GatehouseWire

extension SQLStore {
    public func insertIdentity(_ identity: Identity) async throws(StoreError) {
        defer { changed(.facts(identity.userID)) }
        try await executor.query(
            """
            INSERT INTO identities (id, user_id, provider, subject, email, is_private_relay, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(identity.id.uuidString.lowercased()), .text(identity.userID.description),
                .text(identity.provider.rawValue), .text(identity.subject), SQLValue(identity.email),
                SQLValue(identity.isPrivateRelay), .integer(identity.createdAt.unixSeconds),
            ])
    }

    public func identities(of userID: UserID) async throws(StoreError) -> [Identity] {
        try await accountFact(of: userID, cached: \.identities, keep: { $0.identities = $1 }) { () async throws(StoreError) in
            try await executor.query(
                """
                SELECT id, user_id, provider, subject, email, is_private_relay, created_at
                FROM identities WHERE user_id = ? ORDER BY created_at, id
                """, [.text(userID.description)]
            ).map(Self.identity(from:))
        }
    }

    public func identity(provider: Provider, subject: String) async throws(StoreError) -> Identity? {
        try await executor.query(
            """
            SELECT id, user_id, provider, subject, email, is_private_relay, created_at
            FROM identities WHERE provider = ? AND subject = ?
            """, [.text(provider.rawValue), .text(subject)]
        ).first.map(Self.identity(from:))
    }

    public func updateIdentity(_ id: UUID, email: String?, isPrivateRelay: Bool) async throws(StoreError) {
        let owners = try await executor.query(
            "UPDATE identities SET email = ?, is_private_relay = ? WHERE id = ? RETURNING user_id",
            [SQLValue(email), SQLValue(isPrivateRelay), .text(id.uuidString.lowercased())])
        for row in owners { if let owner = UserID(try row.string("user_id")) { changed(.facts(owner)) } }
    }

    public func deleteIdentities(of userID: UserID, provider: Provider) async throws(StoreError) -> Int {
        defer { changed(.facts(userID)) }
        return try await executor.query(
            "DELETE FROM identities WHERE user_id = ? AND provider = ? RETURNING id", [.text(userID.description), .text(provider.rawValue)]
        ).count
    }

    static func identity(from row: SQLRow) throws(StoreError) -> Identity {
        guard let id = UUID(uuidString: try row.string("id")), let user = UserID(try row.string("user_id")) else {
            throw StoreError.decoding("identity has a malformed id")
        }
        return Identity(
            id: id, userID: user, provider: Provider(rawValue: try row.string("provider")),
            subject: try row.string("subject"), email: try row.optionalString("email"),
            isPrivateRelay: try row.bool("is_private_relay"), createdAt: Date(unixSeconds: try row.int("created_at")))
    }

    // MARK: Provider tokens

    public func providerToken(of userID: UserID, provider: Provider) async throws(StoreError) -> (value: [UInt8], encryption: String)? {
        let rows = try await executor.query(
            """
            SELECT provider_token, provider_token_encryption FROM identities
            WHERE user_id = ? AND provider = ? AND provider_token IS NOT NULL
            """, [.text(userID.description), .text(provider.rawValue)])
        guard let row = rows.first, let value = try row.optionalBytes("provider_token"),
            let encryption = try row.optionalString("provider_token_encryption")
        else { return nil }
        return (value, encryption)
    }

    public func setProviderToken(
        userID: UserID, provider: Provider, subject: String, value: [UInt8], encryption: String
    ) async throws(StoreError) {
        defer { changed(.facts(userID)) }
        try await executor.query(
            """
            UPDATE identities SET provider_token = ?, provider_token_encryption = ?
            WHERE user_id = ? AND provider = ? AND subject = ?
            """, [.blob(value), .text(encryption), .text(userID.description), .text(provider.rawValue), .text(subject)])
    }
}
