import Foundation
import GatehouseCore

extension SQLStore {
    static let passkeyColumns =
        "id, user_id, credential_id, public_key, sign_count, backup_eligible, backed_up, transports, aaguid, name, created_at, last_used_at"

    public func insertPasskeyChallenge(_ challenge: PasskeyChallenge) async throws(StoreError) {
        try await executor.query(
            """
            INSERT INTO passkey_challenges (id, ceremony, challenge, user_id, email, session_id, created_at, expires_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(challenge.id.uuidString.lowercased()), .text(challenge.ceremony.rawValue), .blob(challenge.challenge),
                SQLValue(challenge.userID?.description), SQLValue(challenge.email), SQLValue(challenge.sessionID?.description),
                .integer(challenge.createdAt.unixSeconds), .integer(challenge.expiresAt.unixSeconds),
            ])
    }

    static let challengeColumns = "id, ceremony, challenge, user_id, email, session_id, created_at, expires_at"

    public func consumePasskeyChallenge(id: UUID, now: Date) async throws(StoreError) -> PasskeyChallenge? {
        try await executor.query(
            "DELETE FROM passkey_challenges WHERE id = ? AND expires_at > ? RETURNING \(Self.challengeColumns)",
            [.text(id.uuidString.lowercased()), .integer(now.unixSeconds)]
        ).first.map(Self.challenge(from:))
    }

    public func passkeyChallenges(of userID: UserID) async throws(StoreError) -> [PasskeyChallenge] {
        try await executor.query(
            "SELECT \(Self.challengeColumns) FROM passkey_challenges WHERE user_id = ? ORDER BY created_at, id", [.text(userID.description)]
        ).map(Self.challenge(from:))
    }

    static func challenge(from row: SQLRow) throws(StoreError) -> PasskeyChallenge {
        guard let id = UUID(uuidString: try row.string("id")), let ceremony = PasskeyChallenge.Ceremony(rawValue: try row.string("ceremony"))
        else { throw StoreError.decoding("passkey challenge has a malformed id or an unknown ceremony") }
        return PasskeyChallenge(
            id: id, ceremony: ceremony, challenge: try row.bytes("challenge"),
            userID: try row.optionalString("user_id").flatMap(UserID.init), email: try row.optionalString("email"),
            sessionID: try row.optionalString("session_id").flatMap(SessionID.init),
            createdAt: Date(unixSeconds: try row.int("created_at")), expiresAt: Date(unixSeconds: try row.int("expires_at")))
    }

    public func insertPasskey(_ passkey: Passkey) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO passkeys (\(Self.passkeyColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(passkey.id.uuidString.lowercased()), .text(passkey.userID.description), .blob(passkey.credentialID),
                .blob(passkey.publicKey), .integer(Int64(passkey.signCount)), SQLValue(passkey.backupEligible),
                SQLValue(passkey.backedUp), .text(passkey.transports.joined(separator: ",")), .blob(passkey.aaguid),
                .text(passkey.name), .integer(passkey.createdAt.unixSeconds), SQLValue(passkey.lastUsedAt?.unixSeconds),
            ])
    }

    public func passkey(credentialID: [UInt8]) async throws(StoreError) -> Passkey? {
        try await executor.query("SELECT \(Self.passkeyColumns) FROM passkeys WHERE credential_id = ?", [.blob(credentialID)])
            .first.map(Self.passkey(from:))
    }

    public func passkeys(of userID: UserID) async throws(StoreError) -> [Passkey] {
        try await executor.query(
            "SELECT \(Self.passkeyColumns) FROM passkeys WHERE user_id = ? ORDER BY created_at, id", [.text(userID.description)]
        ).map(Self.passkey(from:))
    }

    public func recordPasskeyUse(_ id: UUID, expected: UInt32, signCount: UInt32, backedUp: Bool, at date: Date) async throws(StoreError) -> Bool {
        try await !executor.query(
            "UPDATE passkeys SET sign_count = ?, backed_up = ?, last_used_at = ? WHERE id = ? AND sign_count = ? RETURNING id",
            [
                .integer(Int64(signCount)), SQLValue(backedUp), .integer(date.unixSeconds), .text(id.uuidString.lowercased()),
                .integer(Int64(expected)),
            ]
        ).isEmpty
    }

    public func renamePasskey(_ id: UUID, of userID: UserID, name: String) async throws(StoreError) -> Bool {
        try await !executor.query(
            "UPDATE passkeys SET name = ? WHERE id = ? AND user_id = ? RETURNING id",
            [.text(name), .text(id.uuidString.lowercased()), .text(userID.description)]
        ).isEmpty
    }

    public func deletePasskey(_ id: UUID, of userID: UserID) async throws(StoreError) -> Bool {
        try await !executor.query(
            "DELETE FROM passkeys WHERE id = ? AND user_id = ? RETURNING id", [.text(id.uuidString.lowercased()), .text(userID.description)]
        ).isEmpty
    }

    public func deletePasskeys(of userID: UserID) async throws(StoreError) -> Int {
        try await executor.query("DELETE FROM passkey_challenges WHERE user_id = ?", [.text(userID.description)])
        return try await executor.query("DELETE FROM passkeys WHERE user_id = ? RETURNING id", [.text(userID.description)]).count
    }

    public func newestPasskeyCredentialIDLength() async throws(StoreError) -> Int? {
        // By the primary key: one index step, whatever the table's size (a sign-in's options ask).
        try await executor.query("SELECT credential_id FROM passkeys ORDER BY id LIMIT 1", []).first
            .map { row throws(StoreError) in try row.bytes("credential_id").count }
    }

    public func purgePasskeyChallenges(before date: Date) async throws(StoreError) -> Int {
        try await sweep(Sweep(table: "passkey_challenges", key: "id", condition: "expires_at < ?", order: "expires_at", reach: .ownRow,
            binds: [.integer(date.unixSeconds)]))
    }

    static func passkey(from row: SQLRow) throws(StoreError) -> Passkey {
        guard let id = UUID(uuidString: try row.string("id")), let user = UserID(try row.string("user_id")) else {
            throw StoreError.decoding("passkey has a malformed id")
        }
        let transports = try row.string("transports")
        return Passkey(
            id: id, userID: user, credentialID: try row.bytes("credential_id"), publicKey: try row.bytes("public_key"),
            signCount: UInt32(clamping: try row.int("sign_count")), backupEligible: try row.bool("backup_eligible"),
            backedUp: try row.bool("backed_up"),
            transports: transports.isEmpty ? [] : transports.split(separator: ",").map(String.init), aaguid: try row.bytes("aaguid"),
            name: try row.string("name"), createdAt: Date(unixSeconds: try row.int("created_at")),
            lastUsedAt: try row.optionalInt("last_used_at").map(Date.init(unixSeconds:)))
    }
}
