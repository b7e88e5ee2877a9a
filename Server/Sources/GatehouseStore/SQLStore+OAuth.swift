import Foundation
import GatehouseCore
import GatehouseWire

extension SQLStore {
    private static let clientColumns =
        "client_id, name, secret_hash, public, first_party, redirect_uris, post_logout_redirect_uris, scopes, audience, initiate_login_uri, rate_limit_per_minute, created_at"

    public func insertOAuthClient(_ client: OAuthClient) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO oauth_clients (\(Self.clientColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(client.id), .text(client.name), SQLValue(client.secretHash), SQLValue(client.isPublic), SQLValue(client.firstParty),
                .text(Self.list(client.redirectURIs)), .text(Self.list(client.postLogoutRedirectURIs)), .text(Self.list(client.scopes)),
                SQLValue(client.audience), SQLValue(client.initiateLoginURI), .integer(Int64(client.rateLimitPerMinute)),
                .integer(client.createdAt.unixSeconds),
            ])
    }

    public func oauthClient(id: String) async throws(StoreError) -> OAuthClient? {
        try await executor.query("SELECT \(Self.clientColumns) FROM oauth_clients WHERE client_id = ?", [.text(id)]).first.map(Self.client(from:))
    }

    public func oauthClients() async throws(StoreError) -> [OAuthClient] {
        try await executor.query("SELECT \(Self.clientColumns) FROM oauth_clients ORDER BY created_at, client_id", []).map(Self.client(from:))
    }

    public func replaceOAuthClientSecret(id: String, hash: [UInt8]) async throws(StoreError) -> Bool {
        !(try await executor.query(
            "UPDATE oauth_clients SET secret_hash = ? WHERE client_id = ? AND public = ? RETURNING client_id", [.blob(hash), .text(id), SQLValue(false)]
        ).isEmpty)
    }

    public func updateOAuthClient(id: String, name: String, redirectURIs: [String]) async throws(StoreError) -> Bool {
        !(try await executor.query(
            "UPDATE oauth_clients SET name = ?, redirect_uris = ? WHERE client_id = ? RETURNING client_id",
            [.text(name), .text(Self.list(redirectURIs)), .text(id)]
        ).isEmpty)
    }

    public func deleteOAuthClient(id: String) async throws(StoreError) -> Bool {
        !(try await executor.query("DELETE FROM oauth_clients WHERE client_id = ? RETURNING client_id", [.text(id)]).isEmpty)
    }

    /// Lists are kept as JSON arrays of strings.
    private static func list(_ values: [String]) -> String {
        (try? String(decoding: JSONEncoder().encode(values), as: UTF8.self)) ?? "[]"
    }

    private static func list(_ row: SQLRow, _ name: String) throws(StoreError) -> [String] {
        guard let values = try? JSONDecoder().decode([String].self, from: Data(try row.string(name).utf8)) else {
            throw StoreError.decoding("oauth_clients.\(name) is not a list")
        }
        return values
    }

    private static func client(from row: SQLRow) throws(StoreError) -> OAuthClient {
        OAuthClient(
            id: try row.string("client_id"), name: try row.string("name"), secretHash: try row.optionalBytes("secret_hash"),
            isPublic: try row.bool("public"), firstParty: try row.bool("first_party"), redirectURIs: try list(row, "redirect_uris"),
            postLogoutRedirectURIs: try list(row, "post_logout_redirect_uris"), scopes: try list(row, "scopes"),
            audience: try row.optionalString("audience"), initiateLoginURI: try row.optionalString("initiate_login_uri"),
            rateLimitPerMinute: Int(try row.int("rate_limit_per_minute")), createdAt: Date(unixSeconds: try row.int("created_at")))
    }

    // MARK: Codes

    private static let codeColumns =
        "code_hash, kind, client_id, user_id, session_id, redirect_uri, scope, nonce, code_challenge, created_at, expires_at, used_at, issued_session_id"

    public func insertOAuthCode(_ code: OAuthCode) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO oauth_codes (\(Self.codeColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .blob(code.hash), .text(code.kind.rawValue), .text(code.clientID), .text(code.userID.description),
                .text(code.sessionID.description), SQLValue(code.redirectURI), .text(code.scopes.joined(separator: " ")), SQLValue(code.nonce),
                SQLValue(code.codeChallenge), .integer(code.createdAt.unixSeconds), .integer(code.expiresAt.unixSeconds),
                SQLValue(code.usedAt?.unixSeconds), SQLValue(code.issuedSessionID?.description),
            ])
    }

    public func useOAuthCode(hash: [UInt8], kind: OAuthCodeKind, issuing: SessionID?, at date: Date) async throws(StoreError) -> OAuthCode? {
        try await executor.query(
            """
            UPDATE oauth_codes SET used_at = ?, issued_session_id = ?
            WHERE code_hash = ? AND kind = ? AND used_at IS NULL AND expires_at > ? RETURNING \(Self.codeColumns)
            """,
            [.integer(date.unixSeconds), SQLValue(issuing?.description), .blob(hash), .text(kind.rawValue), .integer(date.unixSeconds)]
        ).first.map(Self.code(from:))
    }

    public func oauthCodes(of userID: UserID) async throws(StoreError) -> [OAuthCode] {
        try await executor.query(
            "SELECT \(Self.codeColumns) FROM oauth_codes WHERE user_id = ? ORDER BY created_at", [.text(userID.description)]
        ).map(Self.code(from:))
    }

    public func oauthCode(hash: [UInt8]) async throws(StoreError) -> OAuthCode? {
        try await executor.query("SELECT \(Self.codeColumns) FROM oauth_codes WHERE code_hash = ?", [.blob(hash)]).first.map(Self.code(from:))
    }

    private static func code(from row: SQLRow) throws(StoreError) -> OAuthCode {
        guard let kind = OAuthCodeKind(rawValue: try row.string("kind")), let user = UserID(try row.string("user_id")),
            let session = SessionID(try row.string("session_id"))
        else { throw StoreError.decoding("oauth_codes row is malformed") }
        var code = OAuthCode(
            hash: try row.bytes("code_hash"), kind: kind, clientID: try row.string("client_id"), userID: user, sessionID: session,
            redirectURI: try row.optionalString("redirect_uri"), scopes: OAuthScope.words(try row.string("scope")),
            nonce: try row.optionalString("nonce"), codeChallenge: try row.optionalString("code_challenge"),
            createdAt: Date(unixSeconds: try row.int("created_at")), usedAt: try row.optionalInt("used_at").map(Date.init(unixSeconds:)),
            issuedSessionID: try row.optionalString("issued_session_id").flatMap(SessionID.init))
        code.expiresAt = Date(unixSeconds: try row.int("expires_at"))
        return code
    }

    // MARK: Consents

    public func consent(of userID: UserID, to clientID: String) async throws(StoreError) -> OAuthConsent? {
        try await executor.query(
            "SELECT user_id, client_id, scope, granted_at FROM oauth_consents WHERE user_id = ? AND client_id = ?",
            [.text(userID.description), .text(clientID)]
        ).first.map(Self.consent(from:))
    }

    /// Read, joined, written: callers hold the account's row first (`holdSession`), so two
    /// consents of one account never interleave here.
    public func saveConsent(_ consent: OAuthConsent) async throws(StoreError) {
        let stored = try await self.consent(of: consent.userID, to: consent.clientID)
        let scopes = OAuthScope.words(((stored?.scopes ?? []) + consent.scopes).joined(separator: " "))
        try await executor.query(
            """
            INSERT INTO oauth_consents (user_id, client_id, scope, granted_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (user_id, client_id) DO UPDATE SET scope = excluded.scope, granted_at = excluded.granted_at
            """,
            [.text(consent.userID.description), .text(consent.clientID), .text(scopes.joined(separator: " ")), .integer(consent.grantedAt.unixSeconds)])
    }

    public func deleteConsent(of userID: UserID, to clientID: String) async throws(StoreError) -> Bool {
        !(try await executor.query(
            "DELETE FROM oauth_consents WHERE user_id = ? AND client_id = ? RETURNING client_id", [.text(userID.description), .text(clientID)]
        ).isEmpty)
    }

    public func consents(of userID: UserID) async throws(StoreError) -> [OAuthConsent] {
        try await executor.query(
            "SELECT user_id, client_id, scope, granted_at FROM oauth_consents WHERE user_id = ? ORDER BY granted_at, client_id",
            [.text(userID.description)]
        ).map(Self.consent(from:))
    }

    private static func consent(from row: SQLRow) throws(StoreError) -> OAuthConsent {
        guard let user = UserID(try row.string("user_id")) else { throw StoreError.decoding("oauth_consents.user_id is malformed") }
        return OAuthConsent(
            userID: user, clientID: try row.string("client_id"), scopes: OAuthScope.words(try row.string("scope")),
            grantedAt: Date(unixSeconds: try row.int("granted_at")))
    }

    // MARK: Browsers and the clients' sessions

    public func insertBrowserSession(tokenHash: [UInt8], sessionID: SessionID, at date: Date, expiresAt: Date) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO oauth_browser_sessions (token_hash, session_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
            [.blob(tokenHash), .text(sessionID.description), .integer(date.unixSeconds), .integer(expiresAt.unixSeconds)])
    }

    public func browserSession(tokenHash: [UInt8], at date: Date) async throws(StoreError) -> SessionID? {
        try await executor.query(
            "SELECT session_id FROM oauth_browser_sessions WHERE token_hash = ? AND expires_at > ?", [.blob(tokenHash), .integer(date.unixSeconds)]
        ).first.flatMap { try? SessionID($0.string("session_id")) ?? nil }
    }

    public func revokeClientSessions(clientID: String, of userID: UserID?, reason: SessionRevokeReason, at date: Date) async throws(StoreError)
        -> [SessionID]
    {
        var sql = "UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE client_id = ? AND revoked_at IS NULL"
        var values: [SQLValue] = [.integer(date.unixSeconds), .text(reason.rawValue), .text(clientID)]
        if let userID {
            sql += " AND user_id = ?"
            values.append(.text(userID.description))
        }
        let ids = try await executor.query(sql + " RETURNING id", values).compactMap { try? SessionID($0.string("id")) ?? nil }
        for id in ids { changed(.session(id)) }
        return ids
    }
}
