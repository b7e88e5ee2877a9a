import Foundation
import GatehouseCore

extension SQLStore {
    private static let emailTokenColumns = """
        token_hash, purpose, user_id, email, email_normalized, code_hash, code_attempts, redirect_to, password_stamp, \
        created_at, expires_at, used_at, upgrade_user_id
        """

    public func insertEmailToken(_ token: EmailToken) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO email_tokens (\(Self.emailTokenColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .blob(token.hash), .text(token.purpose.rawValue), SQLValue(token.userID?.description), .text(token.email),
                .text(token.normalizedEmail), SQLValue(token.codeHash), .integer(Int64(token.codeAttempts)),
                SQLValue(token.redirectTo), SQLValue(token.passwordStamp), .integer(token.createdAt.unixSeconds),
                .integer(token.expiresAt.unixSeconds), SQLValue(token.usedAt?.unixSeconds), SQLValue(token.upgradeUserID?.description),
            ])
    }

    public func emailToken(hash: [UInt8]) async throws(StoreError) -> EmailToken? {
        try await executor.query("SELECT \(Self.emailTokenColumns) FROM email_tokens WHERE token_hash = ?", [.blob(hash)])
            .first.map(Self.emailToken(from:))
    }

    public func useEmailToken(hash: [UInt8], at date: Date) async throws(StoreError) -> Bool {
        let rows = try await executor.query(
            "UPDATE email_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL RETURNING purpose",
            [.integer(date.unixSeconds), .blob(hash)])
        return !rows.isEmpty
    }

    public func retireEmailTokens(
        userID: UserID?, normalizedEmail: String?, purpose: EmailTokenPurpose, at date: Date
    ) async throws(StoreError) {
        if let userID {
            try await executor.query(
                "UPDATE email_tokens SET used_at = ? WHERE user_id = ? AND purpose = ? AND used_at IS NULL",
                [.integer(date.unixSeconds), .text(userID.description), .text(purpose.rawValue)])
        }
        if let normalizedEmail {
            try await executor.query(
                "UPDATE email_tokens SET used_at = ? WHERE email_normalized = ? AND purpose = ? AND used_at IS NULL",
                [.integer(date.unixSeconds), .text(normalizedEmail), .text(purpose.rawValue)])
        }
    }

    public func newestEmailToken(normalizedEmail: String, purpose: EmailTokenPurpose) async throws(StoreError) -> EmailToken? {
        try await executor.query(
            """
            SELECT \(Self.emailTokenColumns) FROM email_tokens WHERE email_normalized = ? AND purpose = ?
            ORDER BY CASE WHEN used_at IS NULL THEN 0 ELSE 1 END, created_at DESC LIMIT 1
            """, [.text(normalizedEmail), .text(purpose.rawValue)]
        ).first.map(Self.emailToken(from:))
    }

    public func reserveCodeAttempt(hash: [UInt8], limit: Int, now: Date) async throws(StoreError) -> Int? {
        let rows = try await executor.query(
            """
            UPDATE email_tokens SET code_attempts = code_attempts + 1
            WHERE token_hash = ? AND used_at IS NULL AND expires_at > ? AND code_attempts < ?
            RETURNING code_attempts
            """, [.blob(hash), .integer(now.unixSeconds), .integer(Int64(limit))])
        return try rows.first.map { row throws(StoreError) in Int(try row.int("code_attempts")) }
    }

    public func emailTokenTimes(userID: UserID, purpose: EmailTokenPurpose, since date: Date) async throws(StoreError) -> [Date] {
        try await executor.query(
            "SELECT created_at FROM email_tokens WHERE user_id = ? AND purpose = ? AND created_at >= ? ORDER BY created_at",
            [.text(userID.description), .text(purpose.rawValue), .integer(date.unixSeconds)]
        ).map { row throws(StoreError) in Date(unixSeconds: try row.int("created_at")) }
    }

    public func emailTokens(of userID: UserID) async throws(StoreError) -> [EmailToken] {
        try await executor.query(
            """
            SELECT token_hash, purpose, user_id, email, email_normalized, code_hash, code_attempts, redirect_to, password_stamp,
            created_at, expires_at, used_at, upgrade_user_id FROM email_tokens WHERE user_id = ? ORDER BY created_at
            """, [.text(userID.description)]
        ).map(Self.emailToken(from:))
    }

    static func emailToken(from row: SQLRow) throws(StoreError) -> EmailToken {
        let userID = try row.optionalString("user_id")
        return EmailToken(
            hash: try row.bytes("token_hash"), purpose: EmailTokenPurpose(rawValue: try row.string("purpose")),
            userID: try userID.map { text throws(StoreError) in
                guard let id = UserID(text) else { throw StoreError.decoding("bad user id in email_tokens") }
                return id
            },
            email: try row.string("email"), normalizedEmail: try row.string("email_normalized"),
            codeHash: try row.optionalBytes("code_hash"), codeAttempts: Int(try row.int("code_attempts")),
            redirectTo: try row.optionalString("redirect_to"), passwordStamp: try row.optionalInt("password_stamp"),
            createdAt: Date(unixSeconds: try row.int("created_at")), expiresAt: Date(unixSeconds: try row.int("expires_at")),
            usedAt: try row.optionalInt("used_at").map(Date.init(unixSeconds:)),
            upgradeUserID: try row.optionalString("upgrade_user_id").flatMap(UserID.init))
    }
}

extension SQLStore {
    public func savePKCERequest(normalizedEmail: String, purpose: EmailTokenPurpose, challenge: String, method: String, expiresAt: Date)
        async throws(StoreError)
    {
        try await executor.query(
            """
            INSERT INTO pkce_requests (email_normalized, purpose, challenge, method, expires_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (email_normalized, purpose) DO UPDATE SET challenge = excluded.challenge, method = excluded.method,
            expires_at = excluded.expires_at
            """,
            [.text(normalizedEmail), .text(purpose.rawValue), .text(challenge), .text(method), .integer(expiresAt.unixSeconds)])
    }

    public func takePKCERequest(normalizedEmail: String, purpose: EmailTokenPurpose, now: Date) async throws(StoreError)
        -> (challenge: String, method: String)?
    {
        let rows = try await executor.query(
            "DELETE FROM pkce_requests WHERE email_normalized = ? AND purpose = ? RETURNING challenge, method, expires_at",
            [.text(normalizedEmail), .text(purpose.rawValue)])
        guard let row = rows.first, try row.int("expires_at") > now.unixSeconds else { return nil }
        return (try row.string("challenge"), try row.string("method"))
    }
}
