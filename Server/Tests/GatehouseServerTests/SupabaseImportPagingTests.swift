import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import Testing

/// `gatehouse import supabase` reads `auth.users` a page at a time, each page after the last user
/// of the one before (`SupabaseAuthSource.Position`): across page boundaries that split users
/// sharing a `created_at`, with users that have none first, and with users deleted in Supabase
/// while the import runs.
@Suite struct SupabaseImportPagingTests {
    /// User `n`'s id: UUIDs in the order of `n`.
    static func id(_ n: Int) -> String {
        "00000000-0000-4000-8000-" + String(repeatElement("0", count: 12 - String(n, radix: 16).count)) + String(n, radix: 16)
    }

    /// Users 1…`count` in `auth.users`, three to a `created_at` (so users sharing one sort by id),
    /// the ones in `deleted` soft-deleted, and user 5000 with no `created_at` (first in the order).
    static func fill(_ source: any SQLDatabase, count: Int, deleted: [Int]) async throws {
        try await source.query(
            """
            INSERT INTO auth.users (instance_id, id, aud, role, email, created_at, deleted_at)
            SELECT '00000000-0000-0000-0000-000000000000',
                   CAST('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0') AS uuid), 'authenticated', 'authenticated',
                   'paged' || g || '@example.com',
                   CASE WHEN g = 5000 THEN NULL ELSE TIMESTAMPTZ '2023-01-01 00:00:00.000001+00' + (g / 3) * INTERVAL '1 minute' END,
                   CASE WHEN g = ANY(CAST(? AS int[])) THEN now() END
            FROM (SELECT generate_series(1, ?) AS g UNION ALL SELECT 5000) AS numbers
            """, [.text("{" + deleted.map(String.init).joined(separator: ",") + "}"), .integer(Int64(count))])
    }

    @Test(
        .requires(TestDatabase.postgresAdminURL != nil && PrivatePostgres.binaries != nil, "GATEHOUSE_TEST_POSTGRES_URL and GATEHOUSE_TEST_PG_BINDIR"),
        arguments: Backend.available)
    func anImportOfMoreThanAPageNumbersEveryRowInOrder(_ backend: Backend) async throws {
        // 1,203 users: three pages of 500. Rows 500 and 501 share a `created_at` across the first
        // boundary; row 1 is the user without one, row 1,203 the last.
        try await ImportTests.supabaseSource({ source in
            try await Self.fill(source, count: 1202, deleted: [499, 500, 1202])
            try await source.query("UPDATE auth.users SET deleted_at = now() WHERE id = CAST(? AS uuid)", [.text(Self.id(5000))])
        }) { sourceURL in
            try await TestApp.run(backend, preset: "default") { _, config in
                let run = try await ImportTests.gatehouse(["import", "supabase", "--from", sourceURL], config)
                #expect(run.status == 2, "\(run.output)")
                #expect(run.output.contains("imported 1199, unchanged 0, refused 4"), "\(run.output)")
                #expect(run.output.contains("1203 of 1203 rows read"), "\(run.output)")
                for (row, user) in [(1, 5000), (500, 499), (501, 500), (1203, 1202)] {
                    #expect(run.output.contains("row \(row) (\(Self.id(user))): soft-deleted in Supabase"), "\(run.output)")
                }
                let imported = try await TestApp.withStore(config) { store in
                    try await store.user(id: UserID(Self.id(1201))!)?.email
                }
                #expect(imported == "paged1201@example.com")
            }
        }
    }

    @Test(.requires(TestDatabase.postgresAdminURL != nil && PrivatePostgres.binaries != nil, "GATEHOUSE_TEST_POSTGRES_URL and GATEHOUSE_TEST_PG_BINDIR"))
    func aUserDeletedWhileTheImportRunsMovesNoOtherUserIntoAPageAlreadyRead() async throws {
        try await ImportTests.supabaseSource({ source in
            try await Self.fill(source, count: 6, deleted: [])
            let reader = try await SupabaseAuthSource(database: source)
            let first = try await reader.page(after: nil, limit: 2)
            #expect(first.users.map(\.id) == [Self.id(5000), Self.id(1)])
            // Both users of the page just read leave Supabase before the next page is read.
            try await source.query("DELETE FROM auth.users WHERE id IN (CAST(? AS uuid), CAST(? AS uuid))", [.text(Self.id(5000)), .text(Self.id(1))])
            let second = try await reader.page(after: first.end, limit: 2)
            #expect(second.users.map(\.id) == [Self.id(2), Self.id(3)], "the next page starts after the last user read, not at a count of rows")
            let third = try await reader.page(after: second.end, limit: 2)
            let last = try await reader.page(after: third.end, limit: 2)
            #expect(third.users.map(\.id) == [Self.id(4), Self.id(5)] && last.users.map(\.id) == [Self.id(6)])
            let past = try await reader.page(after: last.end, limit: 2)
            #expect(past.users.isEmpty && past.end == nil)
        }) { _ in }
    }
}
