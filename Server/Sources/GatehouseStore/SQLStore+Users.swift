import Foundation
import GatehouseCore
import GatehouseWire

extension SQLStore {
    static let userColumns = """
        id, email, email_normalized, email_verified_at, is_anonymous, display_name, handle, avatar_url, \
        onboarding_complete, password_hash, password_changed_at, disabled_at, disabled_reason, created_at, updated_at, \
        name_suggestions, plan_override, trial_started_at, last_sign_in_at, phone, phone_verified_at, user_metadata, app_metadata
        """

    // MARK: Accounts

    public func insertUser(_ user: User) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO users (\(Self.userColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(user.id.description), SQLValue(user.email), SQLValue(user.normalizedEmail),
                SQLValue(user.emailVerifiedAt?.unixSeconds), SQLValue(user.isAnonymous),
                SQLValue(user.displayName), SQLValue(user.handle), SQLValue(user.avatarURL),
                SQLValue(user.onboardingComplete), SQLValue(user.passwordHash),
                SQLValue(user.passwordChangedAt?.unixSeconds), SQLValue(user.disabledAt?.unixSeconds),
                SQLValue(user.disabledReason), .integer(user.createdAt.unixSeconds),
                .integer(user.updatedAt.unixSeconds), SQLValue(Self.encodeNames(user.nameSuggestions)), SQLValue(user.planOverride),
                SQLValue(user.trialStartedAt?.unixSeconds), SQLValue(user.lastSignInAt?.unixSeconds),
                SQLValue(user.phone), SQLValue(user.phoneVerifiedAt?.unixSeconds),
                SQLValue(AccountMetadata.encoded(user.userMetadata)), SQLValue(AccountMetadata.encoded(user.appMetadata)),
            ])
    }

    public func user(id: UserID) async throws(StoreError) -> User? {
        try await executor.query("SELECT \(Self.userColumns) FROM users WHERE id = ?", [.text(id.description)])
            .first.map(Self.user(from:))
    }

    public func user(normalizedEmail: String) async throws(StoreError) -> User? {
        try await executor.query(
            "SELECT \(Self.userColumns) FROM users WHERE email_normalized = ?", [.text(normalizedEmail)]
        ).first.map(Self.user(from:))
    }

    public func user(handle: String) async throws(StoreError) -> User? {
        try await executor.query("SELECT \(Self.userColumns) FROM users WHERE handle = ?", [.text(handle)]).first.map(Self.user(from:))
    }

    public func users(search: String?, before: RowCursor?, limit: Int) async throws(StoreError) -> [User] {
        try await users(matching: UserFilter(search: search), before: before, limit: limit)
    }

    public func userCount() async throws(StoreError) -> Int {
        Int(try await executor.query("SELECT COUNT(*) AS n FROM users", []).first?.int("n") ?? 0)
    }

    public func users(matching filter: UserFilter, before: RowCursor?, limit: Int) async throws(StoreError) -> [User] {
        var conditions: [String] = []
        var binds: [SQLValue] = []
        if let anonymous = filter.anonymous {
            conditions.append("is_anonymous = ?")
            binds.append(SQLValue(anonymous))
        }
        if filter.disabledOnly { conditions.append("disabled_at IS NOT NULL") }
        if filter.unverifiedOnly { conditions.append("email IS NOT NULL AND email_verified_at IS NULL") }
        let count = max(1, min(limit, 1000))
        let limit = SQLValue.integer(Int64(count))
        if let search = filter.search, !search.isEmpty {
            return try await users(searching: search, filter: filter, narrowedBy: conditions, binds, before: before, limit: count)
        }
        if let before {
            // A row value, which both databases read as a range of the (created_at, id) index; the
            // same test written with OR tests every newer account first.
            conditions.append("(created_at, id) < (?, ?)")
            binds += [.integer(before.createdAt), .text(before.id)]
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try await executor.query(
            "SELECT \(Self.userColumns) FROM users \(whereClause) ORDER BY created_at DESC, id DESC LIMIT ?", binds + [limit]
        ).map(Self.user(from:))
    }

    public func setDisabled(_ id: UserID, at date: Date?, reason: String?, now: Date) async throws(StoreError) -> Bool {
        defer { changed(.user(id)) }
        let rows = try await executor.query(
            "UPDATE users SET disabled_at = ?, disabled_reason = ?, updated_at = ? WHERE id = ? RETURNING id",
            [SQLValue(date?.unixSeconds), SQLValue(date == nil ? nil : reason), .integer(now.unixSeconds), .text(id.description)])
        return !rows.isEmpty
    }

    public func deleteUser(_ id: UserID) async throws(StoreError) -> Bool {
        defer { changed(.user(id)) }
        let rows = try await executor.query("DELETE FROM users WHERE id = ? RETURNING email", [.text(id.description)])
        guard let row = rows.first else { return false }
        try await executor.query(
            "UPDATE audit_log SET ip_address = NULL, user_agent = NULL WHERE user_id = ?", [.text(id.description)])
        if let email = try row.optionalString("email") {
            try await executor.query(
                "UPDATE outbox SET recipient = '', text_body = NULL, html_body = NULL WHERE lower(recipient) = lower(?)", [.text(email)])
        }
        return true
    }

    public func unprovedPhoneSignUps(before: Date, limit: Int) async throws(StoreError) -> [UserID] {
        // Read through the partial index users_unproved_phone (the few accounts with a number
        // not proved), not users_anonymous: `is_anonymous <> 1`, which no index serves, where
        // `= 0` led SQLite's planner to users_anonymous and every account (3.2 s at 1M).
        try Self.userIDs(
            try await executor.query(
                """
                SELECT id FROM users u WHERE u.phone IS NOT NULL AND u.phone_verified_at IS NULL AND u.email IS NULL
                AND u.is_anonymous <> 1 AND u.created_at < ?
                AND NOT EXISTS (SELECT 1 FROM identities i WHERE i.user_id = u.id)
                ORDER BY u.created_at LIMIT ?
                """, [.integer(before.unixSeconds), .integer(Int64(limit))]))
    }

    private static func userIDs(_ rows: [SQLRow]) throws(StoreError) -> [UserID] {
        var ids: [UserID] = []
        for row in rows {
            if let id = UserID(try row.string("id")) { ids.append(id) }
        }
        return ids
    }

    public func staleAnonymousUsers(before: Date, limit: Int) async throws(StoreError) -> [UserID] {
        let rows = try await executor.query(
            """
            SELECT id FROM users u WHERE u.is_anonymous = 1 AND u.created_at < ?
            AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.user_id = u.id AND s.last_active_at >= ?)
            ORDER BY u.created_at LIMIT ?
            """, [.integer(before.unixSeconds), .integer(before.unixSeconds), .integer(Int64(limit))])
        return try Self.userIDs(rows)
    }

    // MARK: Password and address

    public func updatePassword(_ id: UserID, hash: String?, changedAt: Date?, now: Date) async throws(StoreError) {
        defer { changed(.user(id)) }
        if let changedAt {
            try await executor.query(
                "UPDATE users SET password_hash = ?, password_changed_at = ?, updated_at = ? WHERE id = ?",
                [SQLValue(hash), .integer(changedAt.unixSeconds), .integer(now.unixSeconds), .text(id.description)])
        } else {
            // A re-hash under new parameters is not a change of password.
            try await executor.query(
                "UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?",
                [SQLValue(hash), .integer(now.unixSeconds), .text(id.description)])
        }
    }

    public func rehashPassword(_ id: UserID, from old: String, to new: String, now: Date) async throws(StoreError) -> Bool {
        try await swapPassword(id, from: old, to: new, changedAt: nil, now: now)
    }

    public func changePassword(_ id: UserID, from old: String, to new: String, now: Date) async throws(StoreError) -> Bool {
        try await swapPassword(id, from: old, to: new, changedAt: now, now: now)
    }

    /// The hash replaced only while it is still `old`; `changedAt` nil keeps the change time (a
    /// re-hash is not a change).
    private func swapPassword(_ id: UserID, from old: String, to new: String, changedAt: Date?, now: Date) async throws(StoreError) -> Bool {
        defer { changed(.user(id)) }
        return try await !executor.query(
            "UPDATE users SET password_hash = ?, password_changed_at = COALESCE(?, password_changed_at), updated_at = ? "
                + "WHERE id = ? AND password_hash = ? RETURNING id",
            [.text(new), SQLValue(changedAt?.unixSeconds), .integer(now.unixSeconds), .text(id.description), .text(old)]
        ).isEmpty
    }

    public func updateEmail(
        _ id: UserID, email: String?, normalizedEmail: String?, verifiedAt: Date?, now: Date
    ) async throws(StoreError) {
        defer { changed(.user(id)) }
        try await executor.query(
            "UPDATE users SET email = ?, email_normalized = ?, email_verified_at = ?, updated_at = ? WHERE id = ?",
            [SQLValue(email), SQLValue(normalizedEmail), SQLValue(verifiedAt?.unixSeconds), .integer(now.unixSeconds), .text(id.description)])
    }

    public func markEmailVerified(_ id: UserID, normalizedEmail: String, at date: Date) async throws(StoreError) -> Bool {
        defer { changed(.user(id)) }
        let rows = try await executor.query(
            """
            UPDATE users SET email_verified_at = COALESCE(email_verified_at, ?), updated_at = ?
            WHERE id = ? AND email_normalized = ? RETURNING id
            """, [.integer(date.unixSeconds), .integer(date.unixSeconds), .text(id.description), .text(normalizedEmail)])
        return !rows.isEmpty
    }

    // MARK: Profile

    public func updateProfile(
        _ id: UserID, displayName: String?, handle: String?, avatarURL: String?, onboardingComplete: Bool, now: Date
    ) async throws(StoreError) {
        defer { changed(.user(id)) }
        try await executor.query(
            """
            UPDATE users SET display_name = ?, handle = ?, avatar_url = ?, onboarding_complete = ?, updated_at = ? WHERE id = ?
            """,
            [
                SQLValue(displayName), SQLValue(handle), SQLValue(avatarURL), SQLValue(onboardingComplete), .integer(now.unixSeconds),
                .text(id.description),
            ])
    }

    public func fillProfile(_ id: UserID, displayName: String?, avatarURL: String?, now: Date) async throws(StoreError) {
        defer { changed(.user(id)) }
        try await executor.query(
            """
            UPDATE users SET display_name = COALESCE(display_name, ?), avatar_url = COALESCE(avatar_url, ?), updated_at = ?
            WHERE id = ?
            """, [SQLValue(displayName), SQLValue(avatarURL), .integer(now.unixSeconds), .text(id.description)])
    }

    public func setNameSuggestions(_ id: UserID, _ names: [String]?, now: Date) async throws(StoreError) {
        defer { changed(.user(id)) }
        try await executor.query(
            "UPDATE users SET name_suggestions = ?, updated_at = ? WHERE id = ?",
            [SQLValue(Self.encodeNames(names)), .integer(now.unixSeconds), .text(id.description)])
    }

    public func markUpgraded(_ id: UserID, now: Date) async throws(StoreError) {
        defer { changed(.user(id)) }
        try await executor.query(
            "UPDATE users SET is_anonymous = 0, name_suggestions = NULL, updated_at = ? WHERE id = ?",
            [.integer(now.unixSeconds), .text(id.description)])
    }

    // MARK: Metadata

    public func setMetadata(_ id: UserID, _ kind: AccountMetadata.Kind, _ object: [String: JSONValue], now: Date) async throws(StoreError) {
        defer { changed(.user(id)) }
        // The column's name comes from the closed enum, never from input.
        let column = kind == .user ? "user_metadata" : "app_metadata"
        try await executor.query(
            "UPDATE users SET \(column) = ?, updated_at = ? WHERE id = ?",
            [SQLValue(AccountMetadata.encoded(object)), .integer(now.unixSeconds), .text(id.description)])
    }

    // MARK: Plan and trial

    public func setPlanOverride(_ id: UserID, _ plan: String?, now: Date) async throws(StoreError) {
        defer { changed(.user(id)) }
        try await executor.query(
            "UPDATE users SET plan_override = ?, updated_at = ? WHERE id = ?", [SQLValue(plan), .integer(now.unixSeconds), .text(id.description)])
    }

    public func startTrial(_ id: UserID, at date: Date) async throws(StoreError) -> Bool {
        defer { changed(.user(id)) }
        return !(try await executor.query(
            "UPDATE users SET trial_started_at = ?, updated_at = ? WHERE id = ? AND trial_started_at IS NULL RETURNING id",
            [.integer(date.unixSeconds), .integer(date.unixSeconds), .text(id.description)]).isEmpty)
    }

    public func passwordHashSchemes() async throws(StoreError) -> [String] {
        // The first condition is the partial index `users_imported_hashes`' own (migration 34):
        // only accounts whose hash is not Argon2id are read.
        try await executor.query(
            """
            SELECT DISTINCT CASE WHEN password_hash LIKE '$firebase-scrypt$%' THEN substr(password_hash, 1, 33)
            ELSE substr(password_hash, 1, 7) END AS scheme FROM users
            WHERE substr(password_hash, 1, 10) <> '$argon2id$' AND (password_hash LIKE '$2%' OR password_hash LIKE '$firebase-scrypt$%')
            """
        ).map { row throws(StoreError) in try row.string("scheme") }
    }

    public func lockUser(_ id: UserID) async throws(StoreError) {
        guard dialect == .postgres else { return }
        try await executor.query("SELECT id FROM users WHERE id = ? FOR UPDATE", [.text(id.description)])
    }

    // MARK: Rows

    static func encodeNames(_ names: [String]?) -> String? {
        guard let names, let data = try? JSONSerialization.data(withJSONObject: names) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    static func user(from row: SQLRow) throws(StoreError) -> User {
        guard let id = UserID(try row.string("id")) else { throw StoreError.decoding("user has a malformed id") }
        var user = User(
            id: id, email: try row.optionalString("email"), normalizedEmail: try row.optionalString("email_normalized"),
            emailVerifiedAt: try row.optionalInt("email_verified_at").map(Date.init(unixSeconds:)),
            isAnonymous: try row.bool("is_anonymous"), displayName: try row.optionalString("display_name"),
            handle: try row.optionalString("handle"), avatarURL: try row.optionalString("avatar_url"),
            onboardingComplete: try row.bool("onboarding_complete"), passwordHash: try row.optionalString("password_hash"),
            passwordChangedAt: try row.optionalInt("password_changed_at").map(Date.init(unixSeconds:)),
            disabledAt: try row.optionalInt("disabled_at").map(Date.init(unixSeconds:)),
            disabledReason: try row.optionalString("disabled_reason"),
            createdAt: Date(unixSeconds: try row.int("created_at")),
            updatedAt: Date(unixSeconds: try row.int("updated_at")))
        if let names = try row.optionalString("name_suggestions") {
            user.nameSuggestions = (try? JSONSerialization.jsonObject(with: Data(names.utf8))) as? [String]
        }
        user.planOverride = try row.optionalString("plan_override")
        user.trialStartedAt = try row.optionalInt("trial_started_at").map(Date.init(unixSeconds:))
        user.lastSignInAt = try row.optionalInt("last_sign_in_at").map(Date.init(unixSeconds:))
        user.phone = try row.optionalString("phone")
        user.phoneVerifiedAt = try row.optionalInt("phone_verified_at").map(Date.init(unixSeconds:))
        user.userMetadata = AccountMetadata.decoded(try row.optionalString("user_metadata"))
        user.appMetadata = AccountMetadata.decoded(try row.optionalString("app_metadata"))
        return user
    }
}
