import Foundation
import GatehouseCore
import GatehouseWire

/// Reads Supabase Auth's `auth.users` and `auth.identities` from its PostgreSQL database
/// (`gatehouse import supabase --from postgres://…`), read-only, a page at a time, in the
/// order `created_at, id` (users without `created_at` first). Columns an older GoTrue schema
/// lacks read as NULL.
///
/// Each page starts after the last user of the one before (`SupabaseAuthSource.Position`), not
/// at a count of rows: a user deleted in Supabase while the import runs no longer moves the next
/// page's first user into a page already read. `auth.users` has no index in this order, so a page
/// still reads the whole table, but keeps only its own rows where `LIMIT … OFFSET` kept every row
/// before them too: at 1M users, 60–436 ms a page (less as the import goes on) against 347–784 ms
/// (BENCHMARKS.md, "Supabase import"). Reading the table once, through a cursor, would hold one
/// connection across every page, longer than the pool's answer time-out lets any lease run.
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

    /// Where a page ends: its last user's place in the order. The next page starts after it.
    public struct Position: Sendable, Equatable {
        /// `created_at` as PostgreSQL writes it, `-infinity` for none.
        let createdAt: String
        let id: String
    }

    /// The order's key: a user without `created_at` sorts first, as `NULLS FIRST` would put it,
    /// and compares as a value (a row comparison with a NULL in it is neither true nor false).
    private static let key = "COALESCE(created_at, '-infinity'), id"

    /// Up to `limit` users after `position` (from the first when nil), in order, their
    /// identities, and where the page ends (nil when it has no user).
    public func page(after position: Position?, limit: Int) async throws(StoreError)
        -> (users: [SupabaseUserRow], identities: [SupabaseIdentityRow], end: Position?)
    {
        func column(_ name: String, _ expression: String) -> String {
            users.contains(name) ? "\(expression) AS \(name)" : "NULL AS \(name)"
        }
        let epoch = { (name: String) in column(name, "extract(epoch from \(name))::bigint") }
        let flag = { (name: String) in column(name, "\(name)::int::bigint") }
        let select = [
            "id::text AS id", column("email", "email::text"), column("encrypted_password", "encrypted_password::text"),
            epoch("email_confirmed_at"), epoch("created_at"), epoch("last_sign_in_at"), epoch("banned_until"), epoch("deleted_at"),
            flag("is_anonymous"), flag("is_sso_user"), column("phone", "phone::text"), column("raw_user_meta_data", "raw_user_meta_data::text"),
            column("raw_app_meta_data", "raw_app_meta_data::text"), "COALESCE(created_at, '-infinity')::text AS position_created_at",
        ].joined(separator: ", ")
        var binds: [SQLValue] = []
        var after = ""
        if let position {
            after = "WHERE (\(Self.key)) > (CAST(? AS timestamptz), CAST(? AS uuid))"
            binds = [.text(position.createdAt), .text(position.id)]
        }
        let userRows = try await database.query(
            "SELECT \(select) FROM auth.users \(after) ORDER BY \(Self.key) LIMIT ?", binds + [.integer(Int64(limit))])
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
        guard let last = userRows.last else { return ([], [], nil) }
        let end = Position(createdAt: try last.string("position_created_at"), id: try last.string("id"))
        // GoTrue before late 2023 kept the provider's id in `id` and had no `provider_id`.
        let providerID = identities.contains("provider_id") ? "i.provider_id::text" : "i.id::text"
        let identityEmail = identities.contains("email") ? "i.email::text" : "(i.identity_data->>'email')"
        // The page's ids are UUIDs as PostgreSQL wrote them, so the array's text needs no quoting.
        let identityRows = try await database.query(
            """
            SELECT i.user_id::text AS user_id, i.provider::text AS provider, \(providerID) AS provider_id, \(identityEmail) AS email
            FROM auth.identities i WHERE i.user_id = ANY(CAST(? AS uuid[]))
            """, [.text("{" + pageUsers.map(\.id).joined(separator: ",") + "}")])
        var pageIdentities: [SupabaseIdentityRow] = []
        for row in identityRows {
            pageIdentities.append(
                SupabaseIdentityRow(
                    userID: try row.string("user_id"), provider: try row.string("provider"), providerID: try row.string("provider_id"),
                    email: try row.optionalString("email")))
        }
        return (pageUsers, pageIdentities, end)
    }
}
