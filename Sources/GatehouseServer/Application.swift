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
    let accountMail = AccountMail(templates: templates, links: links, preset: preset)
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
    if preset.throttling.captchaAfterIPFailures != nil, config.captchaVerifyURL == nil {
        logger.warning(
            "the preset asks for a CAPTCHA after repeated failed logins, but GATEHOUSE_CAPTCHA_VERIFY_URL is not set: no CAPTCHA is asked for")
    }

    // The parts the use cases share.
    let unitOfWork = UnitOfWork(store: store, events: events, mail: mailWorker, jobs: jobs, privacy: preset.privacy, clock: clock)
    let gate = SignInGate(
        preset: preset, throttle: throttle,
        captcha: config.captchaVerifyURL.map {
            CaptchaVerifier(verifyURL: $0, secret: config.captchaSecret ?? "", client: httpClient, logger: logger)
        })
    let credentials = Credentials(
        hasher: hasher, policy: PasswordPolicy(settings: preset.passwordPolicy, blocklist: blocklist, copy: preset.copy),
        breached: BreachedPasswordChecker(client: httpClient, baseURL: config.breachedPasswordsURL, logger: logger),
        throttle: throttle, preset: preset, audits: unitOfWork)
    let issuer = SessionIssuer(tokens: tokenService, mail: accountMail, settings: tokens)
    let lifecycle = AccountLifecycle(handles: preset.handles)
    let authenticator = Authenticator(tokens: tokenService, store: store, preset: preset, clock: clock)
    let merges = MergeTokens(chainKey: chainKey, clock: clock)
    let codes = MagicCodes(store: store, links: links, preset: preset, clock: clock)
    let requests = InboxRequests(throttle: throttle, credentials: credentials, settings: preset.email)
    let resolver = ClientAddressResolver(trustedProxies: config.trustedProxies)
    let input = HTTPInput(resolver: resolver, bodyLimit: config.maxBodyBytes)
    let appleKeys = ProviderKeySet(url: config.appleJWKSURL, client: httpClient, clock: clock, logger: logger)
    let googleKeys = ProviderKeySet(url: config.googleJWKSURL, client: httpClient, clock: clock, logger: logger)
    let idTokenFailure = preset.text("error.invalid_id_token", "Authentication with Google/Apple failed. Please try again.")
    let verifiers = ProviderVerifiers(
        apple: ProviderTokenVerifier(
            provider: .apple, issuers: ProviderTokenVerifier.appleIssuers, audiences: Set(config.appleAudiences),
            keys: appleKeys, clock: clock, leeway: TimeInterval(tokens.leewaySeconds), failureMessage: idTokenFailure),
        google: ProviderTokenVerifier(
            provider: .google, issuers: ProviderTokenVerifier.googleIssuers, audiences: Set(config.googleAudiences),
            keys: googleKeys, clock: clock, leeway: TimeInterval(tokens.leewaySeconds), failureMessage: idTokenFailure))

    // The use cases.
    let entitlements = EntitlementService(store: store, unitOfWork: unitOfWork, engine: engine, clock: clock)
    let passwords = PasswordService(
        store: store, unitOfWork: unitOfWork, throttle: throttle, gate: gate, credentials: credentials, sessions: issuer,
        lifecycle: lifecycle, mail: accountMail, preset: preset, clock: clock)
    let sessions = SessionService(store: store, unitOfWork: unitOfWork, sessions: issuer, tokens: tokenService, preset: preset, clock: clock)
    let verification = EmailVerificationService(store: store, unitOfWork: unitOfWork, mail: accountMail, preset: preset, clock: clock)
    let reset = PasswordResetService(
        store: store, unitOfWork: unitOfWork, gate: gate, credentials: credentials, requests: requests, lifecycle: lifecycle,
        mail: accountMail, throttle: throttle, preset: preset, clock: clock)
    // The preset's own "open the app" address is trusted like an allowlist entry.
    let redirects = RedirectPolicy(allowlist: config.redirectAllowlist + [preset.app.openAppURL].compactMap { $0 })
    let magicLinks = MagicLinkService(
        store: store, unitOfWork: unitOfWork, gate: gate, requests: requests, codes: codes, sessions: issuer, lifecycle: lifecycle,
        mail: accountMail, merges: merges, redirects: redirects, throttle: throttle, preset: preset, clock: clock)
    let providers = ProviderSignInService(
        store: store, unitOfWork: unitOfWork, gate: gate, credentials: credentials, sessions: issuer, lifecycle: lifecycle,
        mail: accountMail, throttle: throttle, verifiers: verifiers, preset: preset, clock: clock, appleTokens: appleTokens != nil,
        merges: merges)
    let profiles = ProfileService(
        store: store, unitOfWork: unitOfWork, gate: gate, sessions: issuer, lifecycle: lifecycle, throttle: throttle,
        entitlements: entitlements, merges: merges, preset: preset, clock: clock)
    let account = AccountService(
        store: store, unitOfWork: unitOfWork, credentials: credentials, lifecycle: lifecycle, verifiers: verifiers, codes: codes,
        preset: preset, clock: clock)
    let purchases = PurchaseService(
        store: store, verifier: AppStoreJWSVerifier(roots: appStoreRoots),
        bundleID: config.appStoreBundleID ?? config.appleAudiences.first, environments: config.appStoreEnvironments,
        entitlements: entitlements, unitOfWork: unitOfWork, clock: clock, logger: logger)

    // What is mounted: middleware for every route, then each resource's routes; the signed-in
    // routes share one group behind the access-token check.
    let router = Router(context: GatehouseRequestContext.self)
    router.add(middleware: RequestIDMiddleware())
    router.add(middleware: SecurityHeadersMiddleware(hsts: config.publicURL.scheme == "https"))
    router.add(
        middleware: ErrorMiddleware(
            internalMessage: config.preset.text("error.internal", "Something went wrong on our end. Please try again in a few minutes."),
            aborted: AbortedRequests(logger: logger)))
    router.add(middleware: BodyLimitMiddleware(limit: config.maxBodyBytes))
    let signedIn = router.group().add(middleware: AccessTokenMiddleware(authenticator: authenticator)).group(context: AuthenticatedContext.self)

    OperationsController(store: store, keys: keys, publicConfiguration: PublicConfiguration(preset: config.preset), openAPI: openAPI)
        .register(on: router)
    SignInController(
        passwords: passwords, profiles: profiles, providers: providers, magicLinks: magicLinks, authenticator: authenticator, input: input
    ).register(on: router)
    SessionsController(sessions: sessions, input: input).register(on: router, signedIn: signedIn)
    PasswordController(passwords: passwords, reset: reset, input: input).register(on: router, signedIn: signedIn)
    EmailVerificationController(verification: verification, input: input).register(on: router, signedIn: signedIn)
    IdentitiesController(providers: providers, profiles: profiles, input: input).register(signedIn: signedIn)
    MeController(
        profiles: profiles, account: account, export: ExportService(store: store, entitlements: entitlements, clock: clock), input: input
    ).register(on: router, signedIn: signedIn)
    EntitlementsController(
        entitlements: entitlements, usage: UsageService(store: store, unitOfWork: unitOfWork, entitlements: entitlements, clock: clock),
        serviceKey: config.serviceKey.map { AdminKey(key: $0, file: nil, generated: false) }, authenticator: authenticator, input: input
    ).register(on: router, signedIn: signedIn)
    AnalyticsController(
        analytics: AnalyticsService(unitOfWork: unitOfWork, throttle: throttle, clock: clock), authenticator: authenticator,
        input: input
    ).register(on: router)
    PurchaseController(purchases: purchases, authenticator: authenticator, input: input).register(on: router)
    WebhooksController(providers: providers, purchases: purchases, input: input).register(on: router)
    PagesController(
        verification: verification, reset: reset,
        links: LinkPagesService(store: store, clock: clock, verification: verification, reset: reset, magicLinks: magicLinks),
        templates: templates, resolver: resolver, preset: preset, secureCookies: config.publicURL.scheme == "https",
        bodyLimit: config.maxBodyBytes
    ).register(on: router)
    if config.isDevelopment {
        DevController(store: store).register(on: router)
    }
    AdminController(
        users: UserAdminService(store: store, unitOfWork: unitOfWork, lifecycle: lifecycle, clock: clock), keys: keys, adminKey: adminKey,
        testMail: TestMailService(unitOfWork: unitOfWork), bodyLimit: config.maxBodyBytes,
        retiredKeyPublishSeconds: KeyRing.retiredKeyPublishSeconds(
            accessTokenTTLSeconds: tokens.accessTokenTTLSeconds, leewaySeconds: tokens.leewaySeconds)
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
        AnonymousCleanup(store: store, unitOfWork: unitOfWork, lifecycle: lifecycle, days: $0, clock: clock, logger: logger)
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
