import AsyncHTTPClient
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Tracing

/// What a test or embedding program may replace; everything else comes from the config.
public struct AppDependencies: Sendable {
    public var clock: any WallClock
    /// `nil`: a JSON (or text) logger at the configured level.
    public var logger: Logger?
    /// Called once the server listens, with the bound port (useful with port 0).
    public var onListening: (@Sendable (Int) async -> Void)?
    /// Called once with every route the router serves (`GET /v1/me`, `POST /v1/credits/{name}/spend`),
    /// e.g. to check them against `openapi.yaml`.
    public var onRoutes: (@Sendable ([String]) -> Void)?
    /// Receives every span instead of the OTLP exporter (e.g. `InMemoryTracer`); nil: spans are
    /// exported when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else none are made.
    public var tracer: (any Tracer)?
    /// Tracks the services beside the server, to name the one a shutdown waits on (`gatehouse
    /// serve` passes the one it serves through); nil: none is tracked.
    public var shutdownWatch: ShutdownWatch?

    public init(
        clock: any WallClock = SystemClock(), logger: Logger? = nil, onListening: (@Sendable (Int) async -> Void)? = nil,
        onRoutes: (@Sendable ([String]) -> Void)? = nil, tracer: (any Tracer)? = nil, shutdownWatch: ShutdownWatch? = nil
    ) {
        self.shutdownWatch = shutdownWatch
        self.clock = clock
        self.logger = logger
        self.onListening = onListening
        self.onRoutes = onRoutes
        self.tracer = tracer
    }
}

/// The logger the server and CLI use for `config`. A line written while a request is handled
/// carries its `request_id` (and `trace_id`/`span_id` with traces on), whichever logger wrote it.
public func makeLogger(_ config: GatehouseConfig, label: String = "gatehouse") -> Logger {
    let level = config.logLevel
    let json = config.logFormat == "json"
    return Logger(label: label) { label in
        var handler = JSONLogHandler(label: label, level: level, json: json)
        handler.metadataProvider = Telemetry.logMetadata
        return handler
    }
}

/// The composition root, shared by `main` and every test: the infrastructure, the use cases,
/// then the list of what is mounted and what runs beside the server.
///
/// Migrations, the signing key and the admin key are set up before the server accepts its
/// first request; a failure there stops the start with a one-line reason.
public func buildApplication(
    config: GatehouseConfig, dependencies: AppDependencies = AppDependencies()
) async throws -> some ApplicationProtocol {
    let logger = dependencies.logger ?? makeLogger(config)
    let connections = ConnectionLimiter(
        total: config.maxConnections, perAddress: config.ipLimits ? config.maxConnectionsPerAddress : nil,
        trustedProxies: config.trustedProxies)
    let tls = try config.tlsConfiguration()
    let scheme = config.tlsCertificateFile == nil ? "http" : "https"
    let telemetry = try Telemetry.make(config: config, dependencies: dependencies, logger: logger)
    let infra = try await Infrastructure(config: config, dependencies: dependencies, telemetry: telemetry, logger: logger)
    let (deadlines, bodyLimit) = (infra.deadlines, Duration.seconds(config.httpBodyTimeoutSeconds))
    let limits = BodyLimits(general: config.maxBodyBytes)
    let http1 = HTTPServerBuilder { responder in
        WholeBodyChannel(
            http1: HTTP1Channel(
                responder: responder,
                configuration: .init(
                    additionalChannelHandlers: [ConnectionLimitHandler(limiter: connections, logger: logger)],
                    idleTimeout: .seconds(Int64(config.httpIdleTimeoutSeconds)))),
            makeHandler: { WholeBodyHandler(deadlines: deadlines, limit: bodyLimit, limits: limits) })
    }
    let server: HTTPServerBuilder = try tls.map { try .tls(http1, tlsConfiguration: $0) } ?? http1
    let useCases = UseCases(infra)
    let router = try makeRouter(infra, useCases, limits: limits)
    dependencies.onRoutes?(
        router.routes.map { route in "\(route.method) /" + route.path.components.map(\.description).joined(separator: "/") })

    // What runs beside the server.
    let (database, store, clock, keys, chainKey, sealer, mailWorker, jobs) = (
        infra.database, infra.store, infra.clock, infra.keys, infra.chainKey, infra.sealer, infra.mailWorker, infra.jobs
    )
    var services: [any Service] = [
        KeyRingRefresh(keys: keys, logger: logger), DatabaseShutdown(database: database),
        PasswordHasherLifecycle(hasher: infra.hasher, store: store, logger: logger), HTTPClientShutdown(client: infra.httpClient), mailWorker, jobs,
        infra.deadlines,
    ]
    if infra.untracedHTTPClient !== infra.httpClient { services.append(HTTPClientShutdown(client: infra.untracedHTTPClient)) }
    if let postgres = database as? PostgresDatabase {
        services.insert(postgres.service, at: 0)
        if let cache = infra.sessionCache { services.append(SessionCacheFeed(feed: { await postgres.feedSessionChanges(into: cache) })) }
    } else if let sqlite = database as? SQLiteDatabase, let cache = infra.sessionCache {
        services.append(SessionCacheFeed(feed: { await sqlite.feedChanges(into: cache) }))
    }
    // First, so that it stops last: the spans of the others' shutdown are still exported.
    if let exporter = telemetry.service { services.insert(exporter, at: 0) }
    let cleanup = AccountCleanup(
        store: store, unitOfWork: infra.unitOfWork.narrowed { $0 }, lifecycle: useCases.lifecycle,
        rules: AccountCleanup.rules(anonymousCleanupDays: config.preset.privacy.anonymousCleanupDays),
        grace: EntitlementEngine(preset: config.preset).grace, clock: clock, logger: logger)
    services.append(cleanup)
    let retention = RetentionSweep(
        store: store, days: config.preset.privacy.retentionDays, idleSeconds: config.preset.tokens.refreshTokenTTLSeconds,
        unconfirmedFactorTTLSeconds: config.preset.mfa.unconfirmedFactorTTLSeconds, clock: clock, logger: logger)
    services.append(retention)
    services.append(useCases.overviewCounts)
    if config.memoryTrimSeconds > 0 { services.append(MemoryTrim(interval: .seconds(config.memoryTrimSeconds))) }
    let voided = infra.googlePlay.map { _ in GooglePlayVoidedSweep(googlePlay: useCases.googlePlay, logger: logger) }
    if let voided { services.append(voided) }
    // Only the providers an app is configured for (it has their audiences).
    let configuredKeys =
        (config.appleAudiences.isEmpty ? [] : [infra.appleKeys]) + (config.googleAudiences.isEmpty ? [] : [infra.googleKeys])
    if !configuredKeys.isEmpty {
        services.append(ProviderKeysRefresh(keySets: configuredKeys, clock: clock, logger: logger))
    }
    if let watch = dependencies.shutdownWatch {
        watch.use(logger)
        services = watch.tracking(services)
    }
    let onListening = dependencies.onListening
    let backup = MigrationBackupFile(keep: config.keepMigrationBackup)
    var app = Application(
        router: router,
        server: server,
        configuration: .init(address: .hostname(config.host, port: config.port), serverName: nil),
        services: services,
        onServerRunning: { channel in
            let port = channel.localAddress?.port ?? config.port
            logger.notice("gatehouse is listening", metadata: ["url": "\(scheme)://\(config.host):\(port)"])
            backup.started(logger: logger)
            await onListening?(port)
        },
        logger: logger)
    app.beforeServerStarts {
        try await waitForDatabase(database, logger: logger)
        let upgrade = try await SchemaUpgrade.run(database, url: config.database, now: clock.now.unixSeconds)
        backup.made(upgrade.backup)
        if !upgrade.applied.isEmpty {
            var metadata: Logger.Metadata = ["versions": .string(upgrade.applied.map(String.init).joined(separator: ","))]
            if let copy = upgrade.backup { metadata["backup"] = .string(copy) }
            logger.notice("applied migrations", metadata: metadata)
        }
        try await infra.hasher.useSchemes(store.passwordHashSchemes())
        try await keys.start()
        try await chainKey.load(store: store, sealer: sealer, now: clock.now)
        mailWorker.start()
        jobs.start()
        cleanup.start()
        retention.start()
        useCases.overviewCounts.start()
        voided?.start()
        logger.info("configuration", metadata: config.redactedSummary.mapValues { .string($0) })
    }
    return app
}

/// What is mounted: the middleware every request passes, then each resource's routes. The
/// signed-in routes are mounted behind the access-token check (`SignedInRoutes`). `limits` are
/// the connections' too (`WholeBodyHandler`).
func makeRouter(_ infra: Infrastructure, _ useCases: UseCases, limits: BodyLimits) throws -> Router<GatehouseRequestContext> {
    let (config, preset, u) = (infra.config, infra.preset, useCases)
    let input = HTTPInput(resolver: ClientAddressResolver(trustedProxies: config.trustedProxies), bodyLimit: config.maxBodyBytes)
    let router = Router(context: GatehouseRequestContext.self)
    if infra.metrics.isEnabled { router.add(middleware: MetricsMiddleware(metrics: infra.metrics)) }
    router.add(middleware: RequestIDMiddleware(tracer: infra.telemetry.tracer))
    router.add(middleware: SecurityHeadersMiddleware(hsts: config.publicURL.scheme == "https"))
    let errors = ErrorMiddleware(
        internalMessage: preset.text("error.internal", "Something went wrong on our end. Please try again in a few minutes."),
        aborted: AbortedRequests(logger: infra.logger))
    router.add(middleware: errors)
    router.add(middleware: WholeBodyMiddleware(limits: limits))
    let keyAttempts = OperatorKeyAttempts(throttle: infra.throttle, resolver: input.resolver)
    let signedIn = SignedInRoutes(router: router, authenticator: u.authenticator)

    try OperationsController(ping: { try await infra.store.ping(); return try await infra.store.schemaVersion() }, keys: infra.keys, publicConfiguration: PublicConfiguration(preset: preset), openAPI: infra.openAPI)
        .register(on: router)
    SignInController(
        passwords: u.passwords, profiles: u.profiles, providers: u.providers, magicLinks: u.magicLinks, authenticator: u.authenticator,
        input: input
    ).register(on: router)
    PasskeysController(passkeys: u.passkeys, authenticator: u.authenticator, input: input).register(on: router, signedIn: signedIn)
    PhoneController(phone: u.phone, input: input).register(on: router, signedIn: signedIn)
    PaymentSourcesController(stripe: u.stripe, googlePlay: u.googlePlay, input: input).register(on: router, signedIn: signedIn)
    MFAController(mfa: u.mfa, authenticator: u.authenticator, input: input).register(on: router, signedIn: signedIn)
    WellKnownController(relyingParty: config.relyingParty, preset: preset).register(on: router)
    SessionsController(sessions: u.sessions, input: input).register(on: router, signedIn: signedIn)
    PasswordController(passwords: u.passwords, reset: u.reset, input: input).register(on: router, signedIn: signedIn)
    EmailVerificationController(verification: u.verification, input: input).register(on: router, signedIn: signedIn)
    IdentitiesController(providers: u.providers, profiles: u.profiles, input: input).register(signedIn: signedIn)
    MeController(profiles: u.profiles, account: u.account, export: u.export, input: input).register(on: router, signedIn: signedIn)
    EntitlementsController(
        entitlements: u.entitlements, usage: u.usage, serviceKey: config.serviceKey.map { AdminKey(key: $0, file: nil, generated: false) },
        authenticator: u.authenticator, input: input
    ).register(on: router, signedIn: signedIn)
    AnalyticsController(analytics: u.analytics, authenticator: u.authenticator, input: input).register(on: router)
    AppStorePurchaseController(purchases: u.purchases, authenticator: u.authenticator, input: input).register(on: router)
    WebhooksController(providers: u.providers, purchases: u.purchases, input: input).register(on: router)
    PagesController(
        verification: u.verification, reset: u.reset, magicLinks: u.magicLinks, links: u.linkStates, templates: infra.templates, resolver: input.resolver,
        preset: preset, secureCookies: config.publicURL.scheme == "https", bodyLimit: config.maxBodyBytes
    ).register(on: router)
    OAuthController(openID: u.openID, input: input).register(on: router, signedIn: signedIn)
    OAuthPagesController(
        openID: u.openID, passwords: u.passwords, magicLinks: u.magicLinks, passkeys: u.passkeys, mfa: u.mfa, templates: infra.templates, resolver: input.resolver, preset: preset,
        secureCookies: config.publicURL.scheme == "https", bodyLimit: config.maxBodyBytes
    ).register(on: router)
    if config.isDevelopment {
        DevController(store: infra.store).register(on: router)
    }
    if let anonKey = config.supabaseAnonKey {
        SupabaseController(
            compat: SupabaseCompatService(
                store: infra.store, unitOfWork: infra.unitOfWork.narrowed { $0 }, authenticator: u.authenticator, tokens: infra.tokens,
                clients: u.clients, links: infra.links, publicURL: config.publicURL.absoluteString, passwords: u.passwords, sessions: u.sessions, reset: u.reset,
                magicLinks: u.magicLinks, providers: u.providers, profiles: u.profiles, users: u.users, mfa: u.mfa,
                verification: u.verification, phone: u.phone, magicCodes: MagicCodes(store: infra.store, links: infra.links, preset: preset, clock: infra.clock),
                codes: GoTrueCodes(chainKey: infra.chainKey, clock: infra.clock),
                redirects: RedirectPolicy(allowlist: config.redirectAllowlist + [preset.app.openAppURL].compactMap { $0 }),
                siteURL: preset.app.openAppURL ?? config.publicURL.absoluteString, preset: preset, clock: infra.clock),
            authenticator: u.authenticator, keys: infra.keys, methods: preset.signInMethods,
            anonKey: AdminKey(key: anonKey, file: nil, generated: false),
            serviceRoleKey: config.supabaseServiceRoleKey.map { AdminKey(key: $0, file: nil, generated: false) }, errors: errors, input: input,
            keyAttempts: keyAttempts
        ).register(on: router)
    }
    MetricsController(metrics: infra.metrics, token: config.metricsToken).register(on: router)
    ConsoleController(
        console: u.console, operators: u.users, operatorMail: u.operatorMail, operatorKeys: u.operatorKeys, adminKey: infra.adminKey,
        clients: u.clients,
        cookies: ConsoleCookies(key: infra.adminKey.consoleKey, lifetime: 1800, https: config.publicURL.scheme == "https"),
        views: infra.consoleViews, resolver: input.resolver, throttle: infra.throttle, clock: infra.clock, bodyLimit: config.maxBodyBytes
    ).register(on: router)
    AdminController(
        users: u.users, imports: u.imports, keys: infra.keys, operatorKeys: u.operatorKeys, adminKey: infra.adminKey, keyAttempts: keyAttempts,
        operatorMail: u.operatorMail, clients: u.clients, bodyLimit: config.maxBodyBytes
    ).register(on: router)
    return router
}

/// Gives a database that is still starting a few seconds, then gives up with its reason.
func waitForDatabase(_ database: any SQLDatabase, logger: Logger, attempts: Int = 5) async throws {
    for attempt in 1...attempts {
        do {
            try await database.ping()
            return
        } catch {
            if attempt == attempts { throw error }
            logger.warning("the database does not answer yet", metadata: ["attempt": "\(attempt)", "cause": "\(error)"])
            try await Task.sleep(for: .seconds(1))
        }
    }
}

/// Reloads the signing keys from the database now and then, so a key rotated on another
/// node is used here within a bounded time.
struct KeyRingRefresh: Service {
    let keys: KeyRing
    let logger: Logger
    var interval: Duration = .seconds(KeyRing.reloadIntervalSeconds)

    func run() async throws {
        await everyInterval(interval) {
            do {
                try await keys.reload()
            } catch {
                logger.backgroundWork(.signingKeyReload, endedBy: error)
            }
        }
    }
}

/// Shuts the outbound HTTP client down once the server has stopped.
struct HTTPClientShutdown: Service {
    let client: HTTPClient

    func run() async throws {
        try? await gracefulShutdown()
        try? await client.shutdown()
    }
}

/// Closes SQLite connections once the server has stopped.
struct DatabaseShutdown: Service {
    let database: any SQLDatabase

    func run() async throws {
        try? await gracefulShutdown()
        await database.shutdown()
    }
}

/// Keeps this node's `SessionCache` in step with the database until the server stops:
/// PostgreSQL's change announcements, or SQLite's `PRAGMA data_version` poll.
struct SessionCacheFeed: Service {
    let feed: @Sendable () async -> Void

    func run() async throws {
        let feed = Task { await self.feed() }
        try? await gracefulShutdown()
        // Cancelled, not awaited: nothing the listener does matters once the server stops, and
        // a shutdown must not wait on its connection.
        feed.cancel()
    }
}

/// Makes SwiftNIO's singleton event loops Swift concurrency's global executor; call once, from
/// the main thread, before any task runs (the `gatehouse` command's entry does). True when it
/// took effect.
public func runConcurrencyOnEventLoops() -> Bool {
    NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
}
