import Foundation
import GatehouseCore
import GatehouseWire

extension SQLStore {
    static let factorColumns = "id, user_id, type, name, secret, encryption, created_at, confirmed_at, last_used_step, last_used_at"

    public func insertMFAFactor(_ factor: MFAFactor) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO mfa_factors (\(Self.factorColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(factor.id.uuidString.lowercased()), .text(factor.userID.description), .text(factor.type), .text(factor.name),
                .blob(factor.secret), .text(factor.encryption), .integer(factor.createdAt.unixSeconds),
                SQLValue(factor.confirmedAt?.unixSeconds), SQLValue(factor.lastUsedStep), SQLValue(factor.lastUsedAt?.unixSeconds),
            ])
    }

    public func mfaFactors(of userID: UserID) async throws(StoreError) -> [MFAFactor] {
        try await executor.query(
            "SELECT \(Self.factorColumns) FROM mfa_factors WHERE user_id = ? ORDER BY created_at, id", [.text(userID.description)]
        ).map(Self.factor(from:))
    }

    public func confirmMFAFactor(_ id: UUID, of userID: UserID, step: Int64, at date: Date) async throws(StoreError) -> Bool {
        try await !executor.query(
            """
            UPDATE mfa_factors SET confirmed_at = ?, last_used_step = ?, last_used_at = ?
            WHERE id = ? AND user_id = ? AND confirmed_at IS NULL RETURNING id
            """,
            [.integer(date.unixSeconds), .integer(step), .integer(date.unixSeconds), .text(id.uuidString.lowercased()), .text(userID.description)]
        ).isEmpty
    }

    public func useMFAStep(_ id: UUID, of userID: UserID, step: Int64, at date: Date) async throws(StoreError) -> Bool {
        try await !executor.query(
            """
            UPDATE mfa_factors SET last_used_step = ?, last_used_at = ?
            WHERE id = ? AND user_id = ? AND confirmed_at IS NOT NULL AND (last_used_step IS NULL OR last_used_step < ?) RETURNING id
            """,
            [.integer(step), .integer(date.unixSeconds), .text(id.uuidString.lowercased()), .text(userID.description), .integer(step)]
        ).isEmpty
    }

    public func renameMFAFactor(_ id: UUID, of userID: UserID, name: String) async throws(StoreError) -> Bool {
        try await !executor.query(
            "UPDATE mfa_factors SET name = ? WHERE id = ? AND user_id = ? RETURNING id",
            [.text(name), .text(id.uuidString.lowercased()), .text(userID.description)]
        ).isEmpty
    }

    public func deleteMFAFactor(_ id: UUID, of userID: UserID) async throws(StoreError) -> Bool {
        try await !executor.query(
            "DELETE FROM mfa_factors WHERE id = ? AND user_id = ? RETURNING id", [.text(id.uuidString.lowercased()), .text(userID.description)]
        ).isEmpty
    }

    public func deleteMFA(of userID: UserID) async throws(StoreError) -> Int {
        let user: [SQLValue] = [.text(userID.description)]
        try await executor.query("DELETE FROM mfa_recovery_codes WHERE user_id = ?", user)
        try await executor.query("DELETE FROM mfa_challenges WHERE user_id = ?", user)
        return try await executor.query("DELETE FROM mfa_factors WHERE user_id = ? RETURNING id", user).count
    }

    public func purgeUnconfirmedMFAFactors(enrolledBefore date: Date) async throws(StoreError) -> Int {
        try await sweep(
            Sweep(table: "mfa_factors", key: "id", condition: "confirmed_at IS NULL AND created_at < ?", order: "created_at", reach: .ownRow,
                binds: [.integer(date.unixSeconds)]))
    }

    static func factor(from row: SQLRow) throws(StoreError) -> MFAFactor {
        guard let id = UUID(uuidString: try row.string("id")), let user = UserID(try row.string("user_id")) else {
            throw StoreError.decoding("second factor has a malformed id")
        }
        return MFAFactor(
            id: id, userID: user, type: try row.string("type"), name: try row.string("name"), secret: try row.bytes("secret"),
            encryption: try row.string("encryption"), createdAt: Date(unixSeconds: try row.int("created_at")),
            confirmedAt: try row.optionalInt("confirmed_at").map(Date.init(unixSeconds:)), lastUsedStep: try row.optionalInt("last_used_step"),
            lastUsedAt: try row.optionalInt("last_used_at").map(Date.init(unixSeconds:)))
    }

    // MARK: Recovery codes

    public func replaceRecoveryCodes(of userID: UserID, hashes: [[UInt8]], at date: Date) async throws(StoreError) {
        try await deleteRecoveryCodes(of: userID)
        for hash in hashes {
            try await executor.query(
                "INSERT INTO mfa_recovery_codes (user_id, code_hash, created_at) VALUES (?, ?, ?)",
                [.text(userID.description), .blob(hash), .integer(date.unixSeconds)])
        }
    }

    public func useRecoveryCode(of userID: UserID, hash: [UInt8], at date: Date) async throws(StoreError) -> Bool {
        try await !executor.query(
            "UPDATE mfa_recovery_codes SET used_at = ? WHERE user_id = ? AND code_hash = ? AND used_at IS NULL RETURNING user_id",
            [.integer(date.unixSeconds), .text(userID.description), .blob(hash)]
        ).isEmpty
    }

    public func unusedRecoveryCodes(of userID: UserID) async throws(StoreError) -> Int {
        let rows = try await executor.query(
            "SELECT COUNT(*) AS unused FROM mfa_recovery_codes WHERE user_id = ? AND used_at IS NULL", [.text(userID.description)])
        return Int(try rows.first?.int("unused") ?? 0)
    }

    public func deleteRecoveryCodes(of userID: UserID) async throws(StoreError) {
        try await executor.query("DELETE FROM mfa_recovery_codes WHERE user_id = ?", [.text(userID.description)])
    }

    public func recoveryCodeTimes(of userID: UserID) async throws(StoreError) -> [(createdAt: Date, usedAt: Date?)] {
        var times: [(createdAt: Date, usedAt: Date?)] = []
        for row in try await executor.query(
            "SELECT created_at, used_at FROM mfa_recovery_codes WHERE user_id = ? ORDER BY created_at, used_at", [.text(userID.description)])
        {
            times.append((Date(unixSeconds: try row.int("created_at")), try row.optionalInt("used_at").map(Date.init(unixSeconds:))))
        }
        return times
    }

    // MARK: Challenges

    public func mfaChallenges(of userID: UserID) async throws(StoreError) -> [MFAChallenge] {
        try await executor.query(
            "SELECT \(Self.mfaChallengeColumns) FROM mfa_challenges WHERE user_id = ? ORDER BY created_at", [.text(userID.description)]
        ).map(Self.mfaChallenge(from:))
    }

    static let mfaChallengeColumns = "id_hash, user_id, provider, method, event, created_at, expires_at, attempts"

    public func insertMFAChallenge(_ challenge: MFAChallenge) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO mfa_challenges (\(Self.mfaChallengeColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .blob(challenge.idHash), .text(challenge.userID.description), .text(challenge.provider.rawValue), .text(challenge.method),
                .text(challenge.event), .integer(challenge.createdAt.unixSeconds), .integer(challenge.expiresAt.unixSeconds),
                .integer(Int64(challenge.attempts)),
            ])
    }

    public func reserveMFAChallengeAttempt(idHash: [UInt8], now: Date, maximum: Int) async throws(StoreError) -> MFAChallenge? {
        try await executor.query(
            """
            UPDATE mfa_challenges SET attempts = attempts + 1
            WHERE id_hash = ? AND consumed_at IS NULL AND expires_at > ? AND attempts < ? RETURNING \(Self.mfaChallengeColumns)
            """,
            [.blob(idHash), .integer(now.unixSeconds), .integer(Int64(maximum))]
        ).first.map(Self.mfaChallenge(from:))
    }

    public func releaseMFAChallengeAttempt(idHash: [UInt8]) async throws(StoreError) {
        _ = try await executor.query(
            "UPDATE mfa_challenges SET attempts = attempts - 1 WHERE id_hash = ? AND consumed_at IS NULL AND attempts > 0 RETURNING attempts",
            [.blob(idHash)])
    }

    public func mfaChallenge(idHash: [UInt8]) async throws(StoreError) -> MFAChallenge? {
        try await executor.query("SELECT \(Self.mfaChallengeColumns) FROM mfa_challenges WHERE id_hash = ?", [.blob(idHash)])
            .first.map(Self.mfaChallenge(from:))
    }

    public func consumeMFAChallenge(idHash: [UInt8], at date: Date) async throws(StoreError) -> Bool {
        try await !executor.query(
            "UPDATE mfa_challenges SET consumed_at = ? WHERE id_hash = ? AND consumed_at IS NULL AND expires_at > ? RETURNING user_id",
            [.integer(date.unixSeconds), .blob(idHash), .integer(date.unixSeconds)]
        ).isEmpty
    }

    public func purgeMFAChallenges(before date: Date) async throws(StoreError) -> Int {
        try await sweep(Sweep(table: "mfa_challenges", key: "id_hash", condition: "expires_at < ?", order: "expires_at", reach: .ownRow,
            binds: [.integer(date.unixSeconds)]))
    }

    static func mfaChallenge(from row: SQLRow) throws(StoreError) -> MFAChallenge {
        guard let user = UserID(try row.string("user_id")) else { throw StoreError.decoding("challenge has a malformed user id") }
        return MFAChallenge(
            idHash: try row.bytes("id_hash"), userID: user, provider: Provider(rawValue: try row.string("provider")),
            method: try row.string("method"), event: try row.string("event"), createdAt: Date(unixSeconds: try row.int("created_at")),
            expiresAt: Date(unixSeconds: try row.int("expires_at")), attempts: Int(try row.int("attempts")))
    }
}
