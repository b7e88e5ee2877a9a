import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing
import Tracing

/// Builds the real application (`buildApplication`) on a fresh database of `backend` and
/// drives it through HTTP.
enum TestApp {
    static let adminKey = "test-admin-key-0123456789abcdef"

    static func config(_ database: DatabaseURL, preset: String = "default", directory: URL) throws -> GatehouseConfig {
        var config = GatehouseConfig()
        config.database = database
        config.port = 0
        config.adminKey = adminKey
        config.adminKeyFile = directory.appendingPathComponent("admin-key").path
        config.presetSource = preset
        config.preset = try PresetLibrary.load(preset).get()
        // A fast hasher for tests; the production parameters are measured in benchmarks/.
        config.argon2 = Argon2Parameters(memoryKiB: 64, iterations: 1, parallelism: 1)
        config.hashThreads = 2
        // No test reaches the internet; the breached-password check has its own tests with a
        // local range server.
        config.preset.passwordPolicy.breachedCheck = false
        // Every PostgreSQL app would otherwise hold a listening connection and send five
        // heartbeats a second, a hundred apps at once under the parallel suite. The cache is
        // tested where it is the subject: SessionCacheTests (two nodes), SessionCacheStoreTests
        // and the cluster test, whose nodes run with it on as in production.
        config.sessionCache = false
        // And each would open its whole pool of 20 on start: they open on demand instead.
        // PoolMinimumTests keeps a pool open, as a server does by default.
        config.databasePoolMinimum = 0
        return config
    }

    /// Quiet unless `GATEHOUSE_TEST_LOG` names a level (e.g. `error`) to debug a failing test.
    static var quietLogger: Logger {
        var logger = Logger(label: "gatehouse.test")
        logger.logLevel = ProcessInfo.processInfo.environment["GATEHOUSE_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        return logger
    }

    /// Runs `body` against a freshly built app; `adjust` may change the configuration first.
    static func run(
        _ backend: Backend, preset: String = "default", clock: any WallClock = SystemClock(),
        setup: TestingSetup = .router, tracer: (any Tracer)? = nil, adjust: (inout GatehouseConfig) -> Void = { _ in },
        _ body: @escaping @Sendable (any TestClientProtocol, GatehouseConfig) async throws -> Void
    ) async throws {
        let (url, cleanup) = try await TestDatabase.make(backend)
        do {
            try await serve(url, preset: preset, clock: clock, setup: setup, tracer: tracer, adjust: adjust, body)
        } catch {
            await cleanup()
            throw error
        }
        await cleanup()
    }

    /// Runs `body` against an app built on the database at `url` (made by `TestDatabase.make`):
    /// called twice on one database, the second app is the first one restarted.
    static func serve(
        _ url: DatabaseURL, preset: String = "default", clock: any WallClock = SystemClock(),
        setup: TestingSetup = .router, tracer: (any Tracer)? = nil, adjust: (inout GatehouseConfig) -> Void = { _ in },
        _ body: @escaping @Sendable (any TestClientProtocol, GatehouseConfig) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-app-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var config = try config(url, preset: preset, directory: directory)
        adjust(&config)
        let frozen = config
        // Tracks the services, for what a shutdown that hangs waits on.
        let serviceWatch = ShutdownWatch(logger: quietLogger)
        let app = try await buildApplication(
            config: frozen, dependencies: AppDependencies(clock: clock, logger: quietLogger, tracer: tracer, shutdownWatch: serviceWatch))
        let database = if case .sqlite = url { "sqlite" } else { "postgres" }
        let stopping = Mutex<HangWatch?>(nil)
        defer { stopping.withLock { $0 }?.end() }
        try await app.test(setup) { client in
            defer {
                stopping.withLock {
                    $0 = HangWatch("the app's shutdown (\(database))", describe: { "waiting on \(serviceWatch.waitingOn)" })
                }
            }
            try await body(WatchedClient(inner: client, database: database), frozen)
        }
    }

    /// Opens the app's database beside it (to arrange rows or look at them), pool running.
    static func withStore<T: Sendable>(_ config: GatehouseConfig, _ body: @escaping @Sendable (SQLStore) async throws -> T) async throws -> T {
        let database = try await config.database.open(logger: quietLogger)
        defer { Task { await database.shutdown() } }
        if let postgres = database as? PostgresDatabase {
            return try await postgres.withRunning { try await body(SQLStore(database: database)) }
        }
        return try await body(SQLStore(database: database))
    }

    static var adminHeaders: HTTPFields { [.authorization: "Bearer \(adminKey)", .contentType: "application/json"] }
}

/// The test's client, each request watched (`HangWatch`): a request to an app in the test
/// process has no time-out of its own.
struct WatchedClient: TestClientProtocol {
    let inner: any TestClientProtocol
    let database: String

    var port: Int? { inner.port }

    func executeRequest(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?) async throws -> TestResponse {
        try await HangWatch.watching("\(method) \(uri.prefix { $0 != "?" }) (\(database))") {
            try await inner.executeRequest(uri: uri, method: method, headers: headers, body: body)
        }
    }
}

extension TestResponse {
    /// The body decoded as `T`; fails the test if it does not decode.
    func json<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
    }

    /// The contract's error object.
    var error: ErrorPayload? { try? json(ErrorBody.self).error }

    var text: String { String(buffer: body) }
}

func jsonBody(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }
