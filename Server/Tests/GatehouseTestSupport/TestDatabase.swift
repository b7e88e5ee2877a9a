import Foundation
import GatehouseStore
import Logging

/// The databases the contract suites run against. PostgreSQL takes part when
/// `GATEHOUSE_TEST_POSTGRES_URL` names a server (the test script starts one); in CI it must.
public enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }

    /// The backends to run: always SQLite, PostgreSQL when a server is configured, and always
    /// both in CI (a missing server then fails the PostgreSQL cases instead of dropping them).
    public static var available: [Backend] {
        TestDatabase.postgresAdminURL == nil && !TestEnvironment.isCI ? [.sqlite] : [.sqlite, .postgres]
    }
}

/// Where the tests run.
public enum TestEnvironment {
    /// `CI` is set (to anything but empty, `0` or `false`): `.ci/run` sets it. A test that needs a
    /// tool or server runs anyway and fails when it is missing, so a proof cannot vanish unnoticed.
    public static var isCI: Bool {
        guard let value = ProcessInfo.processInfo.environment["CI"]?.lowercased() else { return false }
        return !["", "0", "false"].contains(value)
    }
}

/// A fresh, empty database for one test, removed afterwards.
public enum TestDatabase {
    /// A PostgreSQL URL for a maintenance database (e.g. `postgres://…/postgres`).
    public static var postgresAdminURL: String? {
        ProcessInfo.processInfo.environment["GATEHOUSE_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public static let logger: Logger = {
        var logger = Logger(label: "gatehouse.test")
        logger.logLevel = .critical
        return logger
    }()

    /// A URL for a new, empty database of `backend`, and a closure that removes it.
    public static func make(_ backend: Backend) async throws -> (url: DatabaseURL, cleanup: @Sendable () async -> Void) {
        switch backend {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-test-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let path = directory.appendingPathComponent("test.sqlite").path
            return (.sqlite(path: path), { try? FileManager.default.removeItem(at: directory) })
        case .postgres:
            guard let admin = postgresAdminURL else { throw TestDatabaseError("GATEHOUSE_TEST_POSTGRES_URL is not set") }
            let name = "gh_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            try await maintenance(admin, "CREATE DATABASE \(name)")
            guard var components = URLComponents(string: admin) else { throw TestDatabaseError("bad admin URL") }
            components.path = "/" + name
            let url = components.string!
            return (.postgres(url: url), { try? await maintenance(admin, "DROP DATABASE IF EXISTS \(name) WITH (FORCE)") })
        }
    }

    /// Runs `body` with a migrated-or-not open database of `backend` (the pool running for
    /// PostgreSQL), then removes the database.
    public static func with<T: Sendable>(
        _ backend: Backend, _ body: @escaping @Sendable (any SQLDatabase, DatabaseURL) async throws -> T
    ) async throws -> T {
        let (url, cleanup) = try await make(backend)
        let database = try await url.open(logger: logger)
        do {
            let result: T
            if let postgres = database as? PostgresDatabase {
                result = try await postgres.withRunning { try await body(database, url) }
            } else {
                result = try await body(database, url)
            }
            await database.shutdown()
            await cleanup()
            return result
        } catch {
            await database.shutdown()
            await cleanup()
            throw error
        }
    }

    private static func maintenance(_ url: String, _ sql: String) async throws {
        let database = try PostgresDatabase(url: url, maximumConnections: 2, logger: logger)
        try await database.withRunning {
            try await database.query(sql)
        }
    }
}

public struct TestDatabaseError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension TestDatabase {
    /// Runs `body` with a store on a fresh, migrated database of `backend`.
    public static func withStore(_ backend: Backend, _ body: @escaping @Sendable (SQLStore) async throws -> Void) async throws {
        try await with(backend) { database, _ in
            try await Migrator(database: database).migrate(now: 1_800_000_000)
            try await body(SQLStore(database: database))
        }
    }
}

extension DatabaseURL {
    /// The URL as `GATEHOUSE_DATABASE_URL` takes it, password included (unlike `description`).
    public var environmentValue: String {
        switch self {
        case .sqlite(let path): "sqlite://\(path)"
        case .postgres(let url): url
        }
    }

    /// SQLite's `PRAGMA integrity_check` answer (`ok` when sound); nil for PostgreSQL.
    public func sqliteIntegrity() async throws -> String? {
        guard case .sqlite = self else { return nil }
        let database = try await open(logger: TestDatabase.logger)
        let check = try await database.query("PRAGMA integrity_check")
        let answer = try check.first?.string("integrity_check")
        await database.shutdown()
        return answer
    }
}
