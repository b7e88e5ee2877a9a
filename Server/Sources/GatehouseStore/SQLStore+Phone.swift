import Foundation
import GatehouseCore
import GatehouseWire

extension SQLStore {
    private static let phoneCodeColumns = "id, phone, purpose, user_id, code_hash, attempts, created_at, expires_at, used_at"

    public func user(phone: String) async throws(StoreError) -> User? {
        try await executor.query("SELECT \(Self.userColumns) FROM users WHERE phone = ?", [.text(phone)]).first.map(Self.user(from:))
    }

    public func setPhone(_ id: UserID, phone: String?, verifiedAt: Date?, now: Date) async throws(StoreError) {
        defer { changed(.user(id)) }
        try await executor.query(
            "UPDATE users SET phone = ?, phone_verified_at = ?, updated_at = ? WHERE id = ?",
            [SQLValue(phone), SQLValue(verifiedAt?.unixSeconds), .integer(now.unixSeconds), .text(id.description)])
    }

    public func insertPhoneCode(_ code: PhoneCode) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO phone_codes (\(Self.phoneCodeColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(code.id.uuidString.lowercased()), .text(code.phone), .text(code.purpose.rawValue), SQLValue(code.userID?.description),
                .blob(code.codeHash), .integer(Int64(code.attempts)), .integer(code.createdAt.unixSeconds),
                .integer(code.expiresAt.unixSeconds), SQLValue(code.usedAt?.unixSeconds),
            ])
    }

    public func newestPhoneCode(phone: String?, purpose: SMSPurpose, userID: UserID?) async throws(StoreError) -> PhoneCode? {
        let (conditions, binds) = Self.phoneCodeFilter(phone: phone, userID: userID, purpose: purpose)
        // A send retires the older live codes, so the live one (if any) is the newest: it goes
        // first, also when two were made within the same second (`created_at` is in seconds and
        // `id` is random, so neither orders them).
        return try await executor.query(
            """
            SELECT \(Self.phoneCodeColumns) FROM phone_codes WHERE \(conditions)
            ORDER BY CASE WHEN used_at IS NULL THEN 0 ELSE 1 END, created_at DESC, id DESC LIMIT 1
            """, binds
        ).first.map(Self.phoneCode(from:))
    }

    public func reservePhoneCodeAttempt(_ id: UUID, limit: Int, now: Date) async throws(StoreError) -> Int? {
        let rows = try await executor.query(
            """
            UPDATE phone_codes SET attempts = attempts + 1
            WHERE id = ? AND used_at IS NULL AND expires_at > ? AND attempts < ?
            RETURNING attempts
            """, [.text(id.uuidString.lowercased()), .integer(now.unixSeconds), .integer(Int64(limit))])
        return try rows.first.map { row throws(StoreError) in Int(try row.int("attempts")) }
    }

    public func usePhoneCode(_ id: UUID, at date: Date) async throws(StoreError) -> Bool {
        !(try await executor.query(
            "UPDATE phone_codes SET used_at = ? WHERE id = ? AND used_at IS NULL RETURNING id",
            [.integer(date.unixSeconds), .text(id.uuidString.lowercased())]
        ).isEmpty)
    }

    public func phoneCodes(phone: String, purpose: SMSPurpose, since: Date) async throws(StoreError) -> [PhoneCode] {
        try await executor.query(
            """
            SELECT \(Self.phoneCodeColumns) FROM phone_codes WHERE phone = ? AND purpose = ? AND created_at >= ?
            ORDER BY created_at DESC, id DESC
            """, [.text(phone), .text(purpose.rawValue), .integer(since.unixSeconds)]
        ).map(Self.phoneCode(from:))
    }

    public func phoneCodes(of userID: UserID) async throws(StoreError) -> [PhoneCode] {
        try await executor.query(
            "SELECT \(Self.phoneCodeColumns) FROM phone_codes WHERE user_id = ? ORDER BY created_at, id", [.text(userID.description)]
        ).map(Self.phoneCode(from:))
    }

    public func retirePhoneCodes(phone: String?, boundTo userID: UserID?, purpose: SMSPurpose, at date: Date) async throws(StoreError) {
        let (conditions, binds) = Self.phoneCodeFilter(phone: phone, userID: userID, purpose: purpose)
        let unbound = userID == nil ? " AND user_id IS NULL" : ""
        try await executor.query(
            "UPDATE phone_codes SET used_at = ? WHERE used_at IS NULL AND \(conditions)\(unbound)", [.integer(date.unixSeconds)] + binds)
    }

    /// The codes of `purpose`, to a number and/or of an account: the condition and its binds.
    private static func phoneCodeFilter(phone: String?, userID: UserID?, purpose: SMSPurpose) -> (String, [SQLValue]) {
        var conditions = ["purpose = ?"]
        var binds: [SQLValue] = [.text(purpose.rawValue)]
        if let phone {
            conditions.append("phone = ?")
            binds.append(.text(phone))
        }
        if let userID {
            conditions.append("user_id = ?")
            binds.append(.text(userID.description))
        }
        return (conditions.joined(separator: " AND "), binds)
    }

    static func phoneCode(from row: SQLRow) throws(StoreError) -> PhoneCode {
        guard let id = UUID(uuidString: try row.string("id")), let purpose = SMSPurpose(rawValue: try row.string("purpose")) else {
            throw StoreError.decoding("phone code has a malformed id or purpose")
        }
        let userID: UserID?
        if let text = try row.optionalString("user_id") {
            guard let parsed = UserID(text) else { throw StoreError.decoding("phone code has a malformed user id") }
            userID = parsed
        } else {
            userID = nil
        }
        return PhoneCode(
            id: id, phone: try row.string("phone"), purpose: purpose, userID: userID, codeHash: try row.bytes("code_hash"),
            attempts: Int(try row.int("attempts")), createdAt: Date(unixSeconds: try row.int("created_at")),
            expiresAt: Date(unixSeconds: try row.int("expires_at")), usedAt: try row.optionalInt("used_at").map(Date.init(unixSeconds:)))
    }
}
