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
        try await withDatabase(config.database, logger: quietLogger(config), poolSize: 20, body)
    }

    /// The configured logger at `warning`: a command prints its own lines, the log only trouble.
    static func quietLogger(_ config: GatehouseConfig) -> Logger {
        var logger = makeLogger(config)
        logger.logLevel = .warning
        return logger
    }

    /// Opens the database at `url`, runs the pool if it is PostgreSQL (`poolMinimum` of its
    /// connections kept open), and closes it afterwards (also the benchmarks' way in).
    public static func withDatabase<T: Sendable>(
        _ url: DatabaseURL, logger: Logger, poolSize: Int, poolMinimum: Int = 0, _ body: @escaping @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        let database = try await url.open(logger: logger, poolSize: poolSize, poolMinimum: poolMinimum)
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

    /// As `withDatabase`, with migrations applied the one way a start and `gatehouse migrate`
    /// apply them (``SchemaUpgrade``: on SQLite a copy first, kept, and named on standard
    /// error) and the store on top.
    static func withStore<T: Sendable>(
        _ config: GatehouseConfig, _ body: @escaping @Sendable (SQLStore) async throws -> T
    ) async throws -> T {
        try await withDatabase(config) { database in
            let outcome = try await SchemaUpgrade.run(database, url: config.database, now: Date().unixSeconds)
            if let backup = outcome.backup {
                FileHandle.standardError.write(Data("A copy of the database before migrating is at \(backup) (mode 0600).\n".utf8))
            }
            return try await body(SQLStore(database: database))
        }
    }

    /// Applies the pending migrations (on SQLite, after a copy of the database beside it, which
    /// is kept: `backup` names it).
    public static func migrate(_ config: GatehouseConfig) async throws -> (applied: [Int], backup: String?) {
        try await withDatabase(config) { database in
            let outcome = try await SchemaUpgrade.run(database, url: config.database, now: Date().unixSeconds)
            return (outcome.applied, outcome.backup)
        }
    }

    /// `gatehouse migrate --check`: the lines to print, and whether every pending migration
    /// leaves nodes of the previous release working. Nothing is written.
    public static func migrationCheck(_ config: GatehouseConfig) async throws -> (lines: [String], compatible: Bool) {
        try await withDatabase(config) { database in
            let check = try await SchemaUpgrade.check(database)
            return (check.lines, check.compatible)
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
            let keys = KeyRing(store: store, transactions: Transactions(store) { $0 }, clock: SystemClock(), secretKey: config.secretKey, logger: Logger(label: "gatehouse"))
            try await keys.start()
            let tokens = config.preset.tokens
            return try await keys.rotate(
                keepPublishedFor: KeyRing.retiredKeyPublishSeconds(accessTokenTTLSeconds: tokens.accessTokenTTLSeconds, leewaySeconds: tokens.leewaySeconds))
        }
    }

    public static func users<T: Sendable>(_ config: GatehouseConfig, _ body: @escaping @Sendable (OperatorService) async throws -> T) async throws -> T {
        let preset = config.preset
        // Support's removal of a second factor mails a notice; no link goes out, so the links
        // need no key of the server's.
        let mail = AccountMail(
            templates: try Templates(preset: preset), links: EmailLinks(publicURL: config.publicURL, chainKey: RefreshChainKey()), preset: preset)
        return try await withStore(config) { store in
            try await body(
                OperatorService(
                    store: store, unitOfWork: unitOfWork(config, store).narrowed { $0 }, lifecycle: AccountLifecycle(handles: preset.handles, hooks: nil),
                    removal: FactorRemoval(mail: mail), engine: EntitlementEngine(preset: preset),
                    tokens: preset.tokens, clock: SystemClock()))
        }
    }

    /// Writes as a request would, except that jobs and webhooks are only queued: a running
    /// server's worker delivers them.
    static func unitOfWork(_ config: GatehouseConfig, _ store: SQLStore) -> UnitOfWork<any GatehouseStore> {
        let jobs = JobWorker(
            store: store, sealer: SecretSealer(secret: config.secretKey), clock: SystemClock(), logger: Logger(label: "gatehouse"),
            handlers: [:])
        let events = EventRecorder(
            jobs: jobs, webhookConfigured: config.webhookURL != nil, clock: SystemClock(),
            trialStartsAtSignup: config.preset.entitlements.trial.startsAtSignup)
        return UnitOfWork(store: store, narrow: { $0 }, events: events, mail: nil, jobs: jobs, privacy: config.preset.privacy, clock: SystemClock())
    }

    static func imports<T: Sendable>(_ config: GatehouseConfig, _ body: @escaping @Sendable (ImportService) async throws -> T) async throws -> T {
        try await withStore(config) { store in
            try await body(
                ImportService(
                    store: store, unitOfWork: unitOfWork(config, store).narrowed { $0 }, lifecycle: AccountLifecycle(handles: config.preset.handles, hooks: nil),
                    firebaseKeys: FirebaseHashKeys(store: store, sealer: SecretSealer(secret: config.secretKey)), clock: SystemClock()))
        }
    }

    /// `gatehouse import firebase FILE`: the whole file, in order.
    public static func importFirebase(_ config: GatehouseConfig, file: String, hashConfig: FirebaseHashConfig?) async throws -> ImportReport {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        let rows: [ImportRow]
        do {
            rows = try FirebaseExport.rows(data, now: Date(), id: ImportService.firebaseID)
        } catch {
            throw GatehouseError.invalidRequest("\(file): \(error.description)")
        }
        return try await imports(config) { try await $0.firebase(rows, hashConfig: hashConfig) }
    }

    /// `gatehouse import supabase --from URL`: `auth.users` a page at a time; `progress` hears
    /// the running totals after each page.
    public static func importSupabase(
        _ config: GatehouseConfig, from source: String, pageSize: Int = 500, progress: @escaping @Sendable (ImportReport, Int) -> Void = { _, _ in }
    ) async throws -> ImportReport {
        guard case .success(let url) = DatabaseURL.parse(source), case .postgres = url else {
            throw GatehouseError.invalidRequest("--from must be a postgres:// URL of the Supabase database.")
        }
        let logger = quietLogger(config)
        return try await imports(config) { service in
            try await withDatabase(url, logger: logger, poolSize: 2) { database in
                let reader = try await SupabaseAuthSource(database: database)
                let total = try await reader.count()
                var report = ImportReport()
                var read = 0
                var position: SupabaseAuthSource.Position?
                // Until a page comes back short: users that arrive while this runs are read if
                // their place is after the page being read, and `total` only reports progress.
                while true {
                    let page = try await reader.page(after: position, limit: pageSize)
                    guard let end = page.end else { break }
                    let rows = SupabaseExport.rows(page.users, identities: page.identities, firstRow: read + 1, now: Date())
                    let part = try await service.write(rows, source: "supabase", firebaseKeyID: nil)
                    report.imported += part.imported
                    report.unchanged += part.unchanged
                    report.refused += part.refused
                    read += page.users.count
                    position = end
                    progress(report, max(total, read))
                    if page.users.count < pageSize { break }
                }
                return report
            }
        }
    }

    public static func line(_ entry: AdminUser) -> String {
        let user = entry.user
        let kind = user.isAnonymous ? "anonymous" : (user.identities.map(\.provider.rawValue).joined(separator: "+"))
        return "\(user.id)  \(user.email ?? "-")  \(kind.isEmpty ? "-" : kind)  \(entry.disabled ? "disabled" : "active")  \(user.createdAt)"
    }

    public static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// The exit status of a command or a start that `error` stopped: 3 when the database's schema is
/// newer than this binary (the contract's "Upgrades"), 1 otherwise.
public func exitStatus(for error: any Error) -> Int32 {
    if case .schemaNewerThanBinary? = error as? StoreError { return 3 }
    return 1
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
