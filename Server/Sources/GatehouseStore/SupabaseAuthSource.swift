import Foundation
import GatehouseCore
import GatehouseWire

/// Reads Supabase Auth's `auth.users` and `auth.identities` from its PostgreSQL database
/// (`gatehouse import supabase --from postgres://…`), read-only, a page at a time, in the
/// order `created_at, id`. Columns an older GoTrue schema lacks read as NULL.
public struct SupabaseAuthSource: Sendable {
    let database: any SQLExecutor
    let users: Set<String>
    let identities: Set<String>

    /// Reads which columns the two tables have; throws when they are not there.
    public init(database: any SQLExecutor) async throws(StoreError) {
        self.database = database
        let rows = try await database.query(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'auth' AND table_name IN ('users', 'identities')")
        var users: Set<String> = []
        var identities: Set<String> = []
        for row in rows {
            let column = try row.string("column_name")
            if try row.string("table_name") == "users" { users.insert(column) } else { identities.insert(column) }
        }
        guard users.contains("id"), identities.contains("user_id") else {
            throw StoreError.decoding("this database has no Supabase auth.users and auth.identities tables")
        }
        self.users = users
        self.identities = identities
    }

    public func count() async throws(StoreError) -> Int {
        Int(try await database.query("SELECT count(*)::bigint AS n FROM auth.users").first?.int("n") ?? 0)
    }

    private static let order = "ORDER BY created_at NULLS FIRST, id"

    /// Users `offset + 1 … offset + limit` in order, and their identities.
    public func page(offset: Int, limit: Int) async throws(StoreError) -> (users: [SupabaseUserRow], identities: [SupabaseIdentityRow]) {
        func column(_ name: String, _ expression: String) -> String {
            users.contains(name) ? "\(expression) AS \(name)" : "NULL AS \(name)"
        }
        let epoch = { (name: String) in column(name, "extract(epoch from \(name))::bigint") }
        let flag = { (name: String) in column(name, "\(name)::int::bigint") }
        let select = [
            "id::text AS id", column("email", "email::text"), column("encrypted_password", "encrypted_password::text"),
            epoch("email_confirmed_at"), epoch("created_at"), epoch("last_sign_in_at"), epoch("banned_until"), epoch("deleted_at"),
            flag("is_anonymous"), flag("is_sso_user"), column("phone", "phone::text"), column("raw_user_meta_data", "raw_user_meta_data::text"),
            column("raw_app_meta_data", "raw_app_meta_data::text"),
        ].joined(separator: ", ")
        let userRows = try await database.query(
            "SELECT \(select) FROM auth.users \(Self.order) LIMIT ? OFFSET ?", [.integer(Int64(limit)), .integer(Int64(offset))])
        var pageUsers: [SupabaseUserRow] = []
        for row in userRows {
            func date(_ name: String) throws(StoreError) -> Date? { try row.optionalInt(name).map(Date.init(unixSeconds:)) }
            func object(_ name: String) throws(StoreError) -> [String: JSONValue]? {
                guard let text = try row.optionalString(name) else { return nil }
                return (try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)))?.objectValue
            }
            let metadata = try object("raw_user_meta_data")
            pageUsers.append(
                SupabaseUserRow(
                    id: try row.string("id"), email: try row.optionalString("email"),
                    encryptedPassword: try row.optionalString("encrypted_password"), emailConfirmedAt: try date("email_confirmed_at"),
                    createdAt: try date("created_at"), lastSignInAt: try date("last_sign_in_at"), bannedUntil: try date("banned_until"),
                    deletedAt: try date("deleted_at"), isAnonymous: try row.optionalInt("is_anonymous").map { $0 != 0 },
                    isSSOUser: try row.optionalInt("is_sso_user").map { $0 != 0 }, phone: try row.optionalString("phone"),
                    rawUserMetaData: metadata, rawAppMetaData: try object("raw_app_meta_data")))
        }
        // GoTrue before late 2023 kept the provider's id in `id` and had no `provider_id`.
        let providerID = identities.contains("provider_id") ? "i.provider_id::text" : "i.id::text"
        let identityEmail = identities.contains("email") ? "i.email::text" : "(i.identity_data->>'email')"
        let identityRows = try await database.query(
            """
            SELECT i.user_id::text AS user_id, i.provider::text AS provider, \(providerID) AS provider_id, \(identityEmail) AS email
            FROM auth.identities i WHERE i.user_id IN (SELECT id FROM auth.users \(Self.order) LIMIT ? OFFSET ?)
            """, [.integer(Int64(limit)), .integer(Int64(offset))])
        var pageIdentities: [SupabaseIdentityRow] = []
        for row in identityRows {
            pageIdentities.append(
                SupabaseIdentityRow(
                    userID: try row.string("user_id"), provider: try row.string("provider"), providerID: try row.string("provider_id"),
                    email: try row.optionalString("email")))
        }
        return (pageUsers, pageIdentities)
    }
}
