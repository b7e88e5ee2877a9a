import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Logging

/// What the `gatehouse` commands other than `serve` do, against the configured database
/// directly (no server needs to be running).
public enum Operator {
    /// Opens the database, runs the pool if it is PostgreSQL, and closes it afterwards.
    static func withDatabase<T: Sendable>(
        _ config: GatehouseConfig, _ body: @escaping @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        var logger = makeLogger(config)
        logger.logLevel = .warning
        let database = try await config.database.open(logger: logger)
        let work: @Sendable () async throws -> T = {
            try await database.ping()
            return try await body(database)
        }
        do {
            let result: T
            if let postgres = database as? PostgresDatabase {
                result = try await postgres.withRunning(work)
            } else {
                result = try await work()
            }
            await database.shutdown()
            return result
        } catch {
            await database.shutdown()
            throw error
        }
    }

    /// As `withDatabase`, with migrations applied and the store on top.
    static func withStore<T: Sendable>(
        _ config: GatehouseConfig, _ body: @escaping @Sendable (SQLStore) async throws -> T
    ) async throws -> T {
        try await withDatabase(config) { database in
            try await Migrator(database: database).migrate(now: Date().unixSeconds)
            return try await body(SQLStore(database: database))
        }
    }

    public static func migrate(_ config: GatehouseConfig) async throws -> [Int] {
        try await withDatabase(config) { database in
            try await Migrator(database: database).migrate(now: Date().unixSeconds)
        }
    }

    public struct KeyLine: Sendable {
        public var kid: String
        public var status: String
        public var created: String
        public var publishedUntil: String?
    }

    public static func listKeys(_ config: GatehouseConfig) async throws -> [KeyLine] {
        try await withStore(config) { store in
            try await store.allSigningKeys().map {
                KeyLine(kid: $0.kid, status: $0.status, created: $0.createdAt.rfc3339, publishedUntil: $0.publishUntil?.rfc3339)
            }
        }
    }

    public static func rotateKey(_ config: GatehouseConfig) async throws -> (retired: String, active: String) {
        try await withStore(config) { store in
            let keys = KeyRing(store: store, clock: SystemClock(), secretKey: config.secretKey, logger: Logger(label: "gatehouse"))
            try await keys.start()
            let tokens = config.preset.tokens
            return try await keys.rotate(
                keepPublishedFor: KeyRing.retiredKeyPublishSeconds(accessTokenTTLSeconds: tokens.accessTokenTTLSeconds, leewaySeconds: tokens.leewaySeconds))
        }
    }

    public static func users<T: Sendable>(_ config: GatehouseConfig, _ body: @escaping @Sendable (UserAdminService) async throws -> T) async throws -> T {
        try await withStore(config) { store in
            // Jobs are only queued here; a running server's worker delivers them.
            let jobs = JobWorker(
                store: store, sealer: SecretSealer(secret: config.secretKey), clock: SystemClock(), logger: Logger(label: "gatehouse"),
                handlers: [:])
            let events = EventRecorder(jobs: jobs, webhookConfigured: config.webhookURL != nil, clock: SystemClock())
            let unitOfWork = UnitOfWork(
                store: store, events: events, mail: nil, jobs: jobs, privacy: config.preset.privacy, clock: SystemClock())
            return try await body(
                UserAdminService(store: store, unitOfWork: unitOfWork, lifecycle: AccountLifecycle(handles: config.preset.handles), clock: SystemClock()))
        }
    }

    public static func line(_ entry: AdminUser) -> String {
        let user = entry.user
        let kind = user.isAnonymous ? "anonymous" : (user.identities.map(\.provider).joined(separator: "+"))
        return "\(user.id)  \(user.email ?? "-")  \(kind.isEmpty ? "-" : kind)  \(entry.disabled ? "disabled" : "active")  \(user.createdAt)"
    }

    public static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// One readable sentence for an error that stops a command or the server's start.
public func describe(_ error: any Error) -> String {
    switch error {
    case let error as StoreError:
        switch error {
        case .unavailable(let why): return "cannot reach the database: \(why)"
        default: return error.description
        }
    case let error as GatehouseError: return error.message
    case let error as KeyRingError: return error.description
    case let error as ConfigurationError: return error.description
    default:
        let text = String(describing: error)
        return text.count > 300 ? String(text.prefix(300)) + "…" : text
    }
}
