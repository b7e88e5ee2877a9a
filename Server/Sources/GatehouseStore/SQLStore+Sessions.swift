import Foundation
import GatehouseCore
import GatehouseWire

extension SQLStore {
    private static let sessionColumns =
        "id, user_id, provider, created_at, last_active_at, expires_at, revoked_at, revoked_reason, user_agent, ip_address, method, assurance, second_factor, second_factor_at, client_id, scope, auth_time, door"
    /// A session's columns as `s_…` and its account's as `u_…`, for reading both in one query.
    private static let sessionAndUserColumns: String = {
        func names(_ list: String) -> [String] { list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } }
        let session = names(sessionColumns).map { "s.\($0) AS s_\($0)" }
        let user = names(userColumns).map { "u.\($0) AS u_\($0)" }
        return (session + user).joined(separator: ", ")
    }()

    public func insertSession(_ session: Session) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO sessions (\(Self.sessionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(session.id.description), .text(session.userID.description), .text(session.provider.rawValue),
                .integer(session.createdAt.unixSeconds), .integer(session.lastActiveAt.unixSeconds),
                SQLValue(session.expiresAt?.unixSeconds), SQLValue(session.revokedAt?.unixSeconds),
                SQLValue(session.revokedReason), SQLValue(session.userAgent), SQLValue(session.ipAddress), SQLValue(session.method),
                .text(session.assurance.rawValue), SQLValue(session.secondFactor), SQLValue(session.secondFactorAt?.unixSeconds),
                SQLValue(session.clientID), SQLValue(session.scope), SQLValue(session.authTime?.unixSeconds),
                SQLValue(session.door?.rawValue),
            ])
    }

    public func stepUpSession(_ id: SessionID, factor: String, at date: Date) async throws(StoreError) -> Bool {
        defer { changed(.session(id)) }
        return try await !executor.query(
            """
            UPDATE sessions SET assurance = 'aal2', second_factor = ?, second_factor_at = ?
            WHERE id = ? AND revoked_at IS NULL RETURNING id
            """,
            [.text(factor), .integer(date.unixSeconds), .text(id.description)]
        ).isEmpty
    }

    public func lowerSessions(of userID: UserID) async throws(StoreError) -> Int {
        defer { changed(.user(userID)) }
        return try await executor.query(
            """
            UPDATE sessions SET assurance = 'aal1', second_factor = NULL, second_factor_at = NULL
            WHERE user_id = ? AND second_factor IS NOT NULL RETURNING id
            """,
            [.text(userID.description)]
        ).count
    }

    public func retireRefreshTokens(of session: SessionID, at date: Date) async throws(StoreError) {
        try await executor.query(
            "UPDATE refresh_tokens SET rotated_at = ? WHERE session_id = ? AND rotated_at IS NULL",
            [.integer(date.unixSeconds), .text(session.description)])
    }

    public func session(id: SessionID) async throws(StoreError) -> Session? {
        try await executor.query("SELECT \(Self.sessionColumns) FROM sessions WHERE id = ?", [.text(id.description)])
            .first.map(Self.session(from:))
    }

    public func holdSession(_ id: SessionID, of userID: UserID) async throws(StoreError) -> (session: Session, user: User)? {
        try await lockUser(userID)
        let lock = dialect == .postgres ? " FOR SHARE OF s" : ""
        let rows = try await executor.query(
            "SELECT \(Self.sessionAndUserColumns) FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ?\(lock)",
            [.text(id.description)])
        return try rows.first.map { row throws(StoreError) in
            (try Self.session(from: row.unprefixed("s_")), try Self.user(from: row.unprefixed("u_")))
        }
    }

    public func sessionAndUser(id: SessionID) async throws(StoreError) -> (session: Session, user: User)? {
        // Taken before the read: a change dropped meanwhile keeps this copy out of the cache.
        let ticket = isTransaction ? nil : sessionCache?.ticket()
        let rows = try await executor.query(
            "SELECT \(Self.sessionAndUserColumns) FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ?", [.text(id.description)])
        guard let row = rows.first else { return nil }
        let session = try Self.session(from: row.unprefixed("s_"))
        let user = try Self.user(from: row.unprefixed("u_"))
        // Only a pair that can authenticate is kept; a refusal is always read afresh.
        if let ticket, let sessionCache, !session.isRevoked, !user.isDisabled {
            sessionCache.keep(session, user, ticket: ticket)
        }
        return (session, user)
    }

    public func cachedSessionAndUser(id: SessionID) -> (session: Session, user: User)? {
        guard !isTransaction, let found = sessionCache?.lookup(id) else { return nil }
        countCachedRead()
        return found
    }

    public func sessions(of userID: UserID) async throws(StoreError) -> [Session] {
        try await executor.query(
            "SELECT \(Self.sessionColumns) FROM sessions WHERE user_id = ? ORDER BY created_at DESC, id DESC",
            [.text(userID.description)]
        ).map(Self.session(from:))
    }

    public func sessions(of userID: UserID, before: RowCursor?, limit: Int) async throws(StoreError) -> [Session] {
        let (after, binds) = Self.page(before: before, limit: limit)
        return try await executor.query(
            "SELECT \(Self.sessionColumns) FROM sessions WHERE user_id = ?\(after) ORDER BY created_at DESC, id DESC LIMIT ?",
            [.text(userID.description)] + binds
        ).map(Self.session(from:))
    }

    public func touchSession(_ id: SessionID, at date: Date) async throws(StoreError) {
        try await executor.query(
            "UPDATE sessions SET last_active_at = ? WHERE id = ? AND last_active_at < ?",
            [.integer(date.unixSeconds), .text(id.description), .integer(date.unixSeconds)])
    }

    public func revokeSession(_ id: SessionID, reason: SessionRevokeReason, at date: Date) async throws(StoreError) -> Bool {
        defer { changed(.session(id)) }
        let rows = try await executor.query(
            "UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL RETURNING id",
            [.integer(date.unixSeconds), .text(reason.rawValue), .text(id.description)])
        return !rows.isEmpty
    }

    public func revokeSessions(of userID: UserID, keeping: SessionID?, reason: SessionRevokeReason, at date: Date) async throws(StoreError) -> [SessionID] {
        defer { changed(.user(userID)) }
        let rows = try await executor.query(
            """
            UPDATE sessions SET revoked_at = ?, revoked_reason = ?
            WHERE user_id = ? AND revoked_at IS NULL AND id <> ? RETURNING id
            """,
            [.integer(date.unixSeconds), .text(reason.rawValue), .text(userID.description), .text(keeping?.description ?? "")])
        var revoked: [SessionID] = []
        for row in rows {
            if let id = SessionID(try row.string("id")) { revoked.append(id) }
        }
        return revoked
    }

    public func sessionHistory(of userID: UserID, userAgent: String?) async throws(StoreError) -> (any: Bool, fromAgent: Bool) {
        let match = userAgent == nil ? "user_agent IS NULL" : "user_agent = ?"
        var binds: [SQLValue] = []
        if let userAgent { binds.append(.text(userAgent)) }
        binds.append(.text(userID.description))
        let rows = try await executor.query(
            "SELECT COUNT(*) AS total, COUNT(CASE WHEN \(match) THEN 1 END) AS same FROM sessions WHERE user_id = ?", binds)
        guard let row = rows.first else { return (false, false) }
        return (try row.int("total") > 0, try row.int("same") > 0)
    }

    public func revokeSessions(of userID: UserID, provider: String, reason: SessionRevokeReason, at date: Date) async throws(StoreError) -> [SessionID] {
        defer { changed(.user(userID)) }
        let rows = try await executor.query(
            """
            UPDATE sessions SET revoked_at = ?, revoked_reason = ?
            WHERE user_id = ? AND provider = ? AND revoked_at IS NULL RETURNING id
            """,
            [.integer(date.unixSeconds), .text(reason.rawValue), .text(userID.description), .text(provider)])
        return rows.compactMap { try? SessionID($0.string("id")) ?? nil }
    }

    private static func session(from row: SQLRow) throws(StoreError) -> Session {
        guard let id = SessionID(try row.string("id")), let user = UserID(try row.string("user_id")) else {
            throw StoreError.decoding("session has a malformed id")
        }
        return Session(
            id: id, userID: user, provider: Provider(rawValue: try row.string("provider")), createdAt: Date(unixSeconds: try row.int("created_at")),
            lastActiveAt: Date(unixSeconds: try row.int("last_active_at")),
            expiresAt: try row.optionalInt("expires_at").map(Date.init(unixSeconds:)),
            revokedAt: try row.optionalInt("revoked_at").map(Date.init(unixSeconds:)),
            revokedReason: try row.optionalString("revoked_reason"), userAgent: try row.optionalString("user_agent"),
            ipAddress: try row.optionalString("ip_address"), method: try row.optionalString("method"),
            assurance: AssuranceLevel(rawValue: try row.string("assurance")), secondFactor: try row.optionalString("second_factor"),
            secondFactorAt: try row.optionalInt("second_factor_at").map(Date.init(unixSeconds:)),
            clientID: try row.optionalString("client_id"), scope: try row.optionalString("scope"),
            authTime: try row.optionalInt("auth_time").map(Date.init(unixSeconds:)),
            door: try row.optionalString("door").flatMap(SessionDoor.init(rawValue:)))
    }

    // MARK: Refresh tokens

    public func insertRefreshToken(_ token: RefreshTokenRecord) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO refresh_tokens (token_hash, session_id, issued_at, expires_at, rotated_at) VALUES (?, ?, ?, ?, ?)",
            [
                .blob(token.hash), .text(token.sessionID.description), .integer(token.issuedAt.unixSeconds),
                .integer(token.expiresAt.unixSeconds), SQLValue(token.rotatedAt?.unixSeconds),
            ])
    }

    public func refreshToken(hash: [UInt8]) async throws(StoreError) -> RefreshTokenRecord? {
        // Inside a transaction on PostgreSQL, lock the row: concurrent refreshes of one token
        // then see each other's rotation instead of both rotating. SQLite transactions are
        // already serialised by the writer lock.
        let lock = (dialect == .postgres && isTransaction) ? " FOR UPDATE" : ""
        let rows = try await executor.query(
            "SELECT \(Self.refreshTokenColumns) FROM refresh_tokens WHERE token_hash = ?\(lock)",
            [.blob(hash)])
        return try rows.first.map(Self.refreshToken(from:))
    }

    public func refreshLink(hash: [UInt8]) async throws(StoreError) -> (token: RefreshTokenRecord, session: Session, user: User)? {
        // The token's row locked as `refreshToken(hash:)` locks it.
        let lock = (dialect == .postgres && isTransaction) ? " FOR UPDATE OF r" : ""
        let token = Self.refreshTokenColumns.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.map { "r.\($0) AS r_\($0)" }
        let rows = try await executor.query(
            """
            SELECT \(token.joined(separator: ", ")), \(Self.sessionAndUserColumns)
            FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id JOIN users u ON u.id = s.user_id
            WHERE r.token_hash = ?\(lock)
            """, [.blob(hash)])
        guard let row = rows.first else { return nil }
        return (
            try Self.refreshToken(from: row.unprefixed("r_")), try Self.session(from: row.unprefixed("s_")),
            try Self.user(from: row.unprefixed("u_"))
        )
    }

    private static let refreshTokenColumns = "token_hash, session_id, issued_at, expires_at, rotated_at"

    private static func refreshToken(from row: SQLRow) throws(StoreError) -> RefreshTokenRecord {
        guard let session = SessionID(try row.string("session_id")) else { throw StoreError.decoding("bad session id") }
        return RefreshTokenRecord(
            hash: try row.bytes("token_hash"), sessionID: session, issuedAt: Date(unixSeconds: try row.int("issued_at")),
            expiresAt: Date(unixSeconds: try row.int("expires_at")),
            rotatedAt: try row.optionalInt("rotated_at").map(Date.init(unixSeconds:)))
    }

    public func markRefreshTokenRotated(hash: [UInt8], at date: Date) async throws(StoreError) {
        try await executor.query(
            "UPDATE refresh_tokens SET rotated_at = ? WHERE token_hash = ? AND rotated_at IS NULL",
            [.integer(date.unixSeconds), .blob(hash)])
    }
}
