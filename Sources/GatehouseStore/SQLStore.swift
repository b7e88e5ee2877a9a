import Foundation
import GatehouseCore

/// The store over either database. The statements are portable SQL; where the dialects
/// differ, the statement is chosen by `dialect`.
public struct SQLStore: GatehouseStore {
    let executor: any SQLExecutor
    /// Set when this store runs on the whole database rather than inside a transaction.
    private let database: (any SQLDatabase)?

    /// True inside `transaction`.
    var isTransaction: Bool { database == nil }

    public init(database: any SQLDatabase) {
        self.executor = database
        self.database = database
    }

    private init(transaction executor: any SQLExecutor) {
        self.executor = executor
        self.database = nil
    }

    public var dialect: SQLDialect { executor.dialect }

    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any GatehouseStore) async throws -> T) async throws -> T {
        guard let database else {
            // Already inside a transaction: join it.
            return try await body(self)
        }
        return try await database.transaction { executor in
            try await body(SQLStore(transaction: executor))
        }
    }

    public func ping() async throws(StoreError) {
        if let database {
            try await database.ping()
        } else {
            try await executor.query("SELECT 1 AS ok")
        }
    }

    // MARK: Users

    static var userColumnList: String { userColumns }

    private static let userColumns = """
        id, email, email_normalized, email_verified_at, is_anonymous, display_name, handle, avatar_url, \
        onboarding_complete, password_hash, password_changed_at, disabled_at, disabled_reason, created_at, updated_at, \
        name_suggestions, plan_override, trial_started_at
        """

    public func insertUser(_ user: User) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO users (\(Self.userColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(user.id.description), SQLValue(user.email), SQLValue(user.normalizedEmail),
                SQLValue(user.emailVerifiedAt?.unixSeconds), SQLValue(user.isAnonymous),
                SQLValue(user.displayName), SQLValue(user.handle), SQLValue(user.avatarURL),
                SQLValue(user.onboardingComplete), SQLValue(user.passwordHash),
                SQLValue(user.passwordChangedAt?.unixSeconds), SQLValue(user.disabledAt?.unixSeconds),
                SQLValue(user.disabledReason), .integer(user.createdAt.unixSeconds),
                .integer(user.updatedAt.unixSeconds), SQLValue(Self.encodeNames(user.nameSuggestions)), SQLValue(user.planOverride),
                SQLValue(user.trialStartedAt?.unixSeconds),
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

    public func users(search: String?, before: UserCursor?, limit: Int) async throws(StoreError) -> [User] {
        var conditions: [String] = []
        var binds: [SQLValue] = []
        if let search, !search.isEmpty {
            let prefix = Self.escapeLike(search.lowercased()) + "%"
            conditions.append("(email_normalized LIKE ? ESCAPE '\\' OR handle LIKE ? ESCAPE '\\' OR id = ?)")
            binds += [.text(prefix), .text(prefix), .text(search.lowercased())]
        }
        if let before {
            conditions.append("(created_at < ? OR (created_at = ? AND id < ?))")
            binds += [.integer(before.createdAt), .integer(before.createdAt), .text(before.id)]
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        binds.append(.integer(Int64(max(1, min(limit, 1000)))))
        return try await executor.query(
            "SELECT \(Self.userColumns) FROM users \(whereClause) ORDER BY created_at DESC, id DESC LIMIT ?", binds
        ).map(Self.user(from:))
    }

    public func setDisabled(_ id: UserID, at date: Date?, reason: String?, now: Date) async throws(StoreError) -> Bool {
        let rows = try await executor.query(
            "UPDATE users SET disabled_at = ?, disabled_reason = ?, updated_at = ? WHERE id = ? RETURNING id",
            [SQLValue(date?.unixSeconds), SQLValue(date == nil ? nil : reason), .integer(now.unixSeconds), .text(id.description)])
        return !rows.isEmpty
    }

    public func insertIdentity(_ identity: Identity) async throws(StoreError) {
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
        try await executor.query(
            """
            SELECT id, user_id, provider, subject, email, is_private_relay, created_at
            FROM identities WHERE user_id = ? ORDER BY created_at, id
            """, [.text(userID.description)]
        ).map(Self.identity(from:))
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
        return user
    }

    private static func escapeLike(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if character == "%" || character == "_" || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }

    // MARK: Signing keys

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
