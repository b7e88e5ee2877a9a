import AsyncHTTPClient
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import ServiceLifecycle

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

    public init(
        clock: any WallClock = SystemClock(), logger: Logger? = nil, onListening: (@Sendable (Int) async -> Void)? = nil,
        onRoutes: (@Sendable ([String]) -> Void)? = nil
    ) {
        self.clock = clock
        self.logger = logger
        self.onListening = onListening
        self.onRoutes = onRoutes
    }
}

/// The logger the server and CLI use for `config`.
public func makeLogger(_ config: GatehouseConfig, label: String = "gatehouse") -> Logger {
    let level = config.logLevel
    let json = config.logFormat == "json"
    return Logger(label: label) { label in JSONLogHandler(label: label, level: level, json: json) }
}

/// The composition root: every service wired together, shared by `main` and every test.
///
/// Migrations, the signing key and the admin key are set up before the server accepts its
/// first request; a failure there stops the start with a one-line reason.
public func buildApplication(
    config: GatehouseConfig, dependencies: AppDependencies = AppDependencies()
) async throws -> some ApplicationProtocol {
    let logger = dependencies.logger ?? makeLogger(config)
    // Everything that can fail comes first, before threads and clients that need shutting down.
    let adminKey = try AdminKey.load(configured: config.adminKey, path: config.adminKeyFile)
    let blocklist = try CommonPasswords.load()
    let templates = try Templates(preset: config.preset)
    let openAPI = try OpenAPIDocument.load()
    let connections = ConnectionLimiter(
        total: config.maxConnections, perAddress: config.ipLimits ? config.maxConnectionsPerAddress : nil,
        trustedProxies: config.trustedProxies)
    let http1 = HTTPServerBuilder.http1(
        configuration: .init(
            additionalChannelHandlers: [ConnectionLimitHandler(limiter: connections, logger: logger)],
            idleTimeout: .seconds(Int64(config.httpIdleTimeoutSeconds))))
    let server: HTTPServerBuilder = try config.tlsConfiguration().map { try .tls(http1, tlsConfiguration: $0) } ?? http1
    let scheme = config.tlsCertificateFile == nil ? "http" : "https"
    let appStoreRoots = try config.appStoreRootCerts.map {
        try AppStoreJWSVerifier.certificates(pem: try String(contentsOfFile: $0, encoding: .utf8))
    } ?? AppStoreJWSVerifier.appleRoots()
    let database = try await config.database.open(logger: logger, poolSize: config.databasePoolSize)
    let store = SQLStore(database: database)
    let clock = dependencies.clock
    let preset = config.preset
    let keys = KeyRing(store: store, clock: clock, secretKey: config.secretKey, logger: logger)
    let tokens = preset.tokens
    let hasher = try PasswordHasher(parameters: config.argon2, threads: config.hashThreads)
    let httpClient = HTTPClient(eventLoopGroupProvider: .singleton)
    let chainKey = RefreshChainKey()
    let engine = EntitlementEngine(settings: preset.entitlements, copy: preset.copy)
    let tokenService = TokenService(
        keys: keys, chainKey: chainKey, issuer: config.issuer, audience: config.audience, settings: tokens, clock: clock, engine: engine)
    let throttle = ThrottleService(
        store: store, settings: preset.throttling, ipLimits: config.ipLimits, clock: clock, copy: preset.copy, chainKey: chainKey,
        recovery: preset.signInMethods)
    let links = EmailLinks(publicURL: config.publicURL, chainKey: chainKey)

    let transport: any MailTransport
    if let url = config.smtpURL, let settings = SMTPSettings(
        url: url, trustedCertificates: try config.smtpCAFile.map { try String(contentsOfFile: $0, encoding: .utf8) })
    {
        transport = SMTPTransport(
            settings: settings, composer: MailComposer(from: config.sender, domain: config.publicURL.host ?? "localhost"), clock: clock)
    } else {
        transport = DevOutboxTransport(logger: logger)
    }
    let mailWorker = MailWorker(
        store: store, transport: transport,
        composer: MailRequestComposer(store: store, templates: templates, links: links, preset: preset, clock: clock), clock: clock,
        logger: logger)
    let mail = MailService(worker: mailWorker, clock: clock)
    let accountMail = AccountMail(templates: templates, links: links, mail: mail, preset: preset, clock: clock)
    let sealer = SecretSealer(secret: config.secretKey)
    var appleTokens: AppleTokenClient?
    if let credentials = config.appleCredentials {
        // The key was parsed when the configuration was read, so this does not fail here.
        appleTokens = try await AppleTokenClient(credentials: credentials, client: httpClient, clock: clock)
    }
    var jobHandlers = AppleJobs(tokens: appleTokens, store: store, sealer: sealer, clock: clock, logger: logger).handlers
    if let url = config.webhookURL, let secret = config.webhookSecret {
        jobHandlers[WebhookSender.jobKind] = WebhookSender(url: url, secret: secret, client: httpClient, clock: clock).deliver
    }
    // Webhooks are retried for about a day (backoff capped at an hour) before they are given up.
    let jobs = JobWorker(
        store: store, sealer: sealer, clock: clock, logger: logger, handlers: jobHandlers,
        maximumAttempts: [WebhookSender.jobKind: 30])
    let events = EventRecorder(
        jobs: jobs, webhookConfigured: config.webhookURL != nil, clock: clock,
        trialStartsAtSignup: preset.entitlements.trial.startsAtSignup)
    let entitlements = EntitlementService(store: store, engine: engine, events: events, clock: clock)
    let auth = AuthService(
        store: store, hasher: hasher, tokens: tokenService, throttle: throttle,
        breached: BreachedPasswordChecker(client: httpClient, baseURL: config.breachedPasswordsURL, logger: logger),
        policy: PasswordPolicy(settings: preset.passwordPolicy, blocklist: blocklist, copy: preset.copy),
        preset: preset, clock: clock, mail: accountMail, events: events, entitlements: entitlements,
        captcha: config.captchaVerifyURL.map {
            CaptchaVerifier(verifyURL: $0, secret: config.captchaSecret ?? "", client: httpClient, logger: logger)
        })
    if preset.throttling.captchaAfterIPFailures != nil, config.captchaVerifyURL == nil {
        logger.warning(
            "the preset asks for a CAPTCHA after repeated failed logins, but GATEHOUSE_CAPTCHA_VERIFY_URL is not set: no CAPTCHA is asked for")
    }
    // The preset's own "open the app" address is trusted like an allowlist entry.
    let redirects = RedirectPolicy(allowlist: config.redirectAllowlist + [preset.app.openAppURL].compactMap { $0 })
    let merges = MergeTokens(chainKey: chainKey, clock: clock)
    let emails = EmailFlowService(
        store: store, auth: auth, mail: accountMail, links: links, throttle: throttle, redirects: redirects,
        preset: preset, clock: clock, merges: merges)
    let resolver = ClientAddressResolver(trustedProxies: config.trustedProxies)
    let appleKeys = ProviderKeySet(url: config.appleJWKSURL, client: httpClient, clock: clock, logger: logger)
    let googleKeys = ProviderKeySet(url: config.googleJWKSURL, client: httpClient, clock: clock, logger: logger)
    let idTokenFailure = preset.text("error.invalid_id_token", "Authentication with Google/Apple failed. Please try again.")
    let providers = ProviderSignInService(
        store: store, auth: auth,
        apple: ProviderTokenVerifier(
            provider: .apple, issuers: ProviderTokenVerifier.appleIssuers, audiences: Set(config.appleAudiences),
            keys: appleKeys, clock: clock,
            leeway: TimeInterval(tokens.leewaySeconds), failureMessage: idTokenFailure),
        google: ProviderTokenVerifier(
            provider: .google, issuers: ProviderTokenVerifier.googleIssuers, audiences: Set(config.googleAudiences),
            keys: googleKeys, clock: clock,
            leeway: TimeInterval(tokens.leewaySeconds), failureMessage: idTokenFailure),
        preset: preset, clock: clock, jobs: jobs, appleTokens: appleTokens != nil, merges: merges)

    let router = Router(context: GatehouseRequestContext.self)
    router.add(middleware: RequestIDMiddleware())
    router.add(middleware: SecurityHeadersMiddleware(hsts: config.publicURL.scheme == "https"))
    router.add(
        middleware: ErrorMiddleware(
            internalMessage: config.preset.text("error.internal", "Something went wrong on our end. Please try again in a few minutes."),
            aborted: AbortedRequests(logger: logger)))
    router.add(middleware: BodyLimitMiddleware(limit: config.maxBodyBytes))

    OperationsController(store: store, keys: keys, publicConfiguration: PublicConfiguration(preset: config.preset), openAPI: openAPI)
        .register(on: router)
    AuthController(auth: auth, tokens: tokenService, resolver: resolver, bodyLimit: config.maxBodyBytes).register(on: router)
    EmailController(emails: emails, auth: auth, tokens: tokenService, resolver: resolver, bodyLimit: config.maxBodyBytes)
        .register(on: router)
    let account = AccountService(store: store, auth: auth, providers: providers, emails: emails, preset: preset, clock: clock)
    ProviderController(
        providers: providers, account: account, auth: auth, tokens: tokenService, resolver: resolver, bodyLimit: config.maxBodyBytes
    ).register(on: router)
    let profiles = ProfileService(store: store, auth: auth, merges: merges, preset: preset, clock: clock)
    AccountController(
        profiles: profiles, entitlements: entitlements, usage: UsageService(store: store, entitlements: entitlements, clock: clock),
        serviceKey: config.serviceKey.map { AdminKey(key: $0, file: nil, generated: false) }, analytics: AnalyticsService(store: store, throttle: throttle, clock: clock), auth: auth, tokens: tokenService, resolver: resolver, bodyLimit: config.maxBodyBytes
    ).register(on: router)
    PurchaseController(
        purchases: PurchaseService(
            store: store, verifier: AppStoreJWSVerifier(roots: appStoreRoots),
            bundleID: config.appStoreBundleID ?? config.appleAudiences.first, environments: config.appStoreEnvironments,
            entitlements: entitlements, events: events, clock: clock, logger: logger),
        auth: auth, tokens: tokenService, bodyLimit: config.maxBodyBytes
    ).register(on: router)
    PagesController(
        emails: emails, templates: templates, resolver: resolver, preset: preset,
        secureCookies: config.publicURL.scheme == "https", bodyLimit: config.maxBodyBytes
    ).register(on: router)
    if config.isDevelopment {
        DevController(store: store).register(on: router)
    }
    AdminController(
        users: UserAdminService(store: store, clock: clock, events: events), keys: keys, adminKey: adminKey, mail: mail, store: store,
        bodyLimit: config.maxBodyBytes, retiredKeyPublishSeconds: KeyRing.retiredKeyPublishSeconds(accessTokenTTLSeconds: tokens.accessTokenTTLSeconds, leewaySeconds: tokens.leewaySeconds)
    ).register(on: router)

    dependencies.onRoutes?(
        router.routes.map { route in "\(route.method) /" + route.path.components.map(\.description).joined(separator: "/") })

    var services: [any Service] = [
        KeyRefreshService(keys: keys, logger: logger), DatabaseShutdownService(database: database),
        PasswordHasherService(hasher: hasher), HTTPClientService(client: httpClient), mailWorker, jobs,
    ]
    if let postgres = database as? PostgresDatabase {
        services.insert(postgres.service, at: 0)
    }
    let cleanup = preset.privacy.anonymousCleanupDays.map {
        AnonymousCleanup(store: store, events: events, days: $0, clock: clock, logger: logger)
    }
    if let cleanup { services.append(cleanup) }
    let retention = RetentionSweep(
        store: store, days: preset.privacy.retentionDays, idleSeconds: tokens.refreshTokenTTLSeconds, clock: clock, logger: logger)
    services.append(retention)
    // Only the providers an app is configured for (it has their audiences).
    let configuredKeys = (config.appleAudiences.isEmpty ? [] : [appleKeys]) + (config.googleAudiences.isEmpty ? [] : [googleKeys])
    if !configuredKeys.isEmpty {
        services.append(ProviderKeysService(keySets: configuredKeys, clock: clock, logger: logger))
    }
    let onListening = dependencies.onListening
    var app = Application(
        router: router,
        server: server,
        configuration: .init(address: .hostname(config.host, port: config.port), serverName: nil),
        services: services,
        onServerRunning: { channel in
            let port = channel.localAddress?.port ?? config.port
            logger.notice("gatehouse is listening", metadata: ["url": "\(scheme)://\(config.host):\(port)"])
            await onListening?(port)
        },
        logger: logger)
    app.beforeServerStarts {
        try await waitForDatabase(database, logger: logger)
        let applied = try await Migrator(database: database).migrate(now: clock.now.unixSeconds)
        if !applied.isEmpty {
            logger.notice("applied migrations", metadata: ["versions": .string(applied.map(String.init).joined(separator: ","))])
        }
        try await keys.start()
        try await chainKey.load(store: store, sealer: sealer, now: clock.now)
        mailWorker.start()
        jobs.start()
        cleanup?.start()
        retention.start()
        logger.info("configuration", metadata: config.redactedSummary.mapValues { .string($0) })
    }
    return app
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
struct KeyRefreshService: Service {
    let keys: KeyRing
    let logger: Logger
    var interval: Duration = .seconds(KeyRing.reloadIntervalSeconds)

    func run() async throws {
        // Ends as soon as shutdown begins instead of finishing a sleep first.
        try? await cancelWhenGracefulShutdown {
            while true {
                try await Task.sleep(for: interval)
                do {
                    try await keys.reload()
                } catch {
                    logger.warning("could not reload signing keys", metadata: ["cause": .string("\(error)")])
                }
            }
        }
    }
}

/// Shuts the outbound HTTP client down once the server has stopped.
struct HTTPClientService: Service {
    let client: HTTPClient

    func run() async throws {
        try? await gracefulShutdown()
        try? await client.shutdown()
    }
}

/// Closes SQLite connections once the server has stopped.
struct DatabaseShutdownService: Service {
    let database: any SQLDatabase

    func run() async throws {
        try? await gracefulShutdown()
        await database.shutdown()
    }
}
