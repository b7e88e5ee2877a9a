import Foundation
import Logging
import NIOCore
import SQLiteNIO

/// The example backend's own data: Handz's saved flows and inbox (flows shared with the user,
/// accepted as imports), one SQLite table. Gatehouse never sees these rows; the backend counts
/// them itself, so no client can claim a smaller count.
public final class FlowStore: Sendable {
    public enum Shelf: String, Sendable {
        case saved
        case inbox
    }

    public struct Flow: Codable, Sendable, Equatable {
        public var id: String
        public var title: String
        /// 1-based position among the owner's flows, oldest first: a Free plan keeps the first
        /// `saved_flow_cap` editable and the rest read-only.
        public var rank: Int
    }

    private let connection: SQLiteConnection

    private init(connection: SQLiteConnection) {
        self.connection = connection
    }

    public static func open(path: String, logger: Logger) async throws -> FlowStore {
        let connection = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        _ = try await connection.query("PRAGMA journal_mode = WAL", [])
        _ = try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS flows (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                owner TEXT NOT NULL,
                shelf TEXT NOT NULL,
                title TEXT NOT NULL,
                created_at INTEGER NOT NULL
            )
            """, [])
        _ = try await connection.query("CREATE INDEX IF NOT EXISTS flows_owner ON flows (owner, shelf, seq)", [])
        return FlowStore(connection: connection)
    }

    public func close() async throws {
        try await connection.close()
    }

    public func count(owner: String, shelf: Shelf = .saved) async throws -> Int {
        let rows = try await connection.query(
            "SELECT COUNT(*) AS n FROM flows WHERE owner = ? AND shelf = ?", [.text(owner), .text(shelf.rawValue)])
        return rows.first?.column("n")?.integer ?? 0
    }

    /// Inserts the flow only if the owner still has exactly `count` flows: the count the plan
    /// was checked against. One statement, so two saves at the same moment cannot both pass a
    /// check made for one of them; the loser sees `nil` and checks again.
    public func insert(owner: String, shelf: Shelf = .saved, title: String, ifCountIs count: Int, now: Date) async throws -> Flow? {
        let id = UUID().uuidString.lowercased()
        let rows = try await connection.query(
            """
            INSERT INTO flows (id, owner, shelf, title, created_at)
            SELECT ?, ?, ?, ?, ? WHERE (SELECT COUNT(*) FROM flows WHERE owner = ? AND shelf = ?) = ?
            RETURNING seq
            """,
            [
                .text(id), .text(owner), .text(shelf.rawValue), .text(title), .integer(Int(now.timeIntervalSince1970)), .text(owner),
                .text(shelf.rawValue), .integer(count),
            ])
        guard !rows.isEmpty else { return nil }
        return Flow(id: id, title: title, rank: count + 1)
    }

    public func flows(owner: String, shelf: Shelf = .saved) async throws -> [Flow] {
        let rows = try await connection.query(
            "SELECT id, title FROM flows WHERE owner = ? AND shelf = ? ORDER BY seq", [.text(owner), .text(shelf.rawValue)])
        return rows.enumerated().map { index, row in
            Flow(id: row.column("id")?.string ?? "", title: row.column("title")?.string ?? "", rank: index + 1)
        }
    }

    /// The owner's flow with its rank, or nil when the owner has no such flow.
    public func flow(_ id: String, owner: String) async throws -> Flow? {
        let rows = try await connection.query(
            """
            SELECT f.id, f.title, (SELECT COUNT(*) FROM flows o WHERE o.owner = f.owner AND o.shelf = f.shelf AND o.seq <= f.seq) AS rank
            FROM flows f WHERE f.id = ? AND f.owner = ? AND f.shelf = 'saved'
            """, [.text(id), .text(owner)])
        guard let row = rows.first else { return nil }
        return Flow(id: id, title: row.column("title")?.string ?? "", rank: row.column("rank")?.integer ?? 0)
    }

    public func rename(_ id: String, owner: String, title: String) async throws -> Bool {
        let rows = try await connection.query(
            "UPDATE flows SET title = ? WHERE id = ? AND owner = ? AND shelf = 'saved' RETURNING id", [.text(title), .text(id), .text(owner)])
        return !rows.isEmpty
    }

    public func delete(_ id: String, owner: String, shelf: Shelf) async throws -> Bool {
        let rows = try await connection.query(
            "DELETE FROM flows WHERE id = ? AND owner = ? AND shelf = ? RETURNING id", [.text(id), .text(owner), .text(shelf.rawValue)])
        return !rows.isEmpty
    }
}
