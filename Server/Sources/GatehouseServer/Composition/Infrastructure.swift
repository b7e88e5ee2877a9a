import AsyncHTTPClient
import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import Logging
import Tracing
import X509

/// What the use cases stand on, built once from the configuration: the database and its store,
/// signing keys, the hasher, outbound HTTP, mail and jobs with their workers, and the unit of
/// work that ties a transaction to them.
///
/// Everything that can fail without side effects (the admin key, the password blocklist, the
/// templates, the OpenAPI document, App Store roots) is loaded before threads and clients that
/// need shutting down are made.
struct Infrastructure {
    let config: GatehouseConfig
    let preset: Preset
    let logger: Logger
    let clock: any WallClock
    let adminKey: AdminKey
    let blocklist: Set<String>
    let templates: Templates
    let consoleViews: ConsoleViews
    let openAPI: [UInt8]
    let appStoreRoots: [Certificate]
    let database: any SQLDatabase
    let store: SQLStore
    let keys: KeyRing
    let chainKey: RefreshChainKey
    let sealer: SecretSealer
    let hasher: PasswordHasher
    /// The Firebase projects' hash parameters imported accounts are verified with.
    let firebaseKeys: FirebaseHashKeys
    let httpClient: HTTPClient
    /// For requests whose URL is not for traces: the breached-password check names five hex
    /// digits of the password's SHA-1 in its path. The same client as `httpClient` when traces
    /// are off.
    let untracedHTTPClient: HTTPClient
    /// The one caller of the app's hooks (the auth hooks and the SMS send hook).
    let hookCaller: HookCaller
    let links: EmailLinks
    let engine: EntitlementEngine
    let tokens: AccessTokens
    let throttle: Throttle
    let mailWorker: MailWorker
    let jobs: JobWorker
    let unitOfWork: UnitOfWork<any GatehouseStore>
    let appleTokens: AppleTokenClient?
    /// Stripe's API (`GATEHOUSE_STRIPE_*`); nil when not configured.
    let stripe: StripeClient?
    /// The Play Developer API's client, when Google Play is configured (settings and preset).
    let googlePlay: GooglePlayClient?
    let appleKeys: ProviderKeySet
    /// This node's copies of sessions (PostgreSQL with `GATEHOUSE_SESSION_CACHE` on).
    let sessionCache: SessionCache?
    let googleKeys: ProviderKeySet
    /// `GET /metrics`'s series (`ServerMetrics.off` unless configured).
    let metrics: ServerMetrics
    /// Traces (`Telemetry.off` unless configured).
    let telemetry: Telemetry
    /// The time-outs of work in flight: request bodies (`WholeBodyHandler`) and hook calls;
    /// a service beside the server.
    let deadlines: Deadlines

    init(config: GatehouseConfig, dependencies: AppDependencies, telemetry: Telemetry = .off, logger: Logger) async throws {
        let preset = config.preset
        let clock = dependencies.clock
        self.config = config
        self.preset = preset
        self.logger = logger
        self.clock = clock
        adminKey = try AdminKey.load(configured: config.adminKey, path: config.adminKeyFile)
        blocklist = try CommonPasswords.load()
        templates = try Templates(preset: preset)
        consoleViews = try ConsoleViews(preset: preset)
        openAPI = try OpenAPIDocument.load()
        appStoreRoots = try config.appStoreRootCerts.map {
            try AppStoreJWSVerifier.certificates(pem: try String(contentsOfFile: $0, encoding: .utf8))
        } ?? AppStoreJWSVerifier.appleRoots()
        let smtpCA = try config.smtpCAFile.map { try String(contentsOfFile: $0, encoding: .utf8) }

        let metrics = config.metricsEnabled ? ServerMetrics(enabled: true) : ServerMetrics.off
        self.metrics = metrics
        self.telemetry = telemetry
        let tracer = telemetry.tracer
        database = try await config.database.open(
            logger: logger, poolSize: config.databasePoolSize, poolMinimum: config.databasePoolKept,
            preparedStatements: config.databasePreparedStatements,
            observer: metrics.isEnabled ? metrics : nil)
        // PostgreSQL only: SQLite is one node reading a local file, with no round trip to save.
        sessionCache = config.sessionCache ? SessionCache() : nil
        let store = SQLStore(database: database, sessionCache: sessionCache, tracer: tracer)
        self.store = store
        keys = KeyRing(store: store, transactions: Transactions(store) { $0 }, clock: clock, secretKey: config.secretKey, logger: logger)
        chainKey = RefreshChainKey()
        sealer = SecretSealer(secret: config.secretKey)
        firebaseKeys = FirebaseHashKeys(store: store, sealer: sealer)
        var timed: (@Sendable (String, Duration) -> Void)?
        if metrics.isEnabled {
            timed = { operation, duration in metrics.passwordHash(operation, duration: duration) }
        }
        hasher = try PasswordHasher(
            parameters: config.argon2, threads: config.hashThreads, firebaseKeys: firebaseKeys, timed: timed, tracer: tracer)
        // With traces on, every outbound request is a client span and carries `traceparent`.
        // No outgoing call follows a redirect (issue 58): a hook or a provider answering 3xx
        // could re-post a signed body, codes included, to another host, or turn a POST into a
        // bodiless GET whose 2xx would count as delivered. The 3xx is the answer, a failure.
        var httpConfiguration = HTTPClient.Configuration()
        httpConfiguration.redirectConfiguration = .disallow
        httpConfiguration.tracing.tracer = tracer
        httpClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        if tracer == nil {
            untracedHTTPClient = httpClient
        } else {
            var untraced = HTTPClient.Configuration()
            untraced.redirectConfiguration = .disallow
            untraced.tracing.tracer = nil
            untracedHTTPClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: untraced)
        }
        let deadlines = Deadlines()
        self.deadlines = deadlines
        hookCaller = HookCaller(
            client: httpClient, clock: clock, timeout: config.hooks.timeout, deadlines: deadlines, metrics: metrics, health: HookHealth(),
            tracer: tracer)
        links = EmailLinks(publicURL: config.publicURL, chainKey: chainKey)
        engine = EntitlementEngine(preset: preset)
        tokens = AccessTokens(
            keys: keys, chainKey: chainKey, issuer: config.issuer, audience: config.audience, settings: preset.tokens, clock: clock,
            engine: engine)
        throttle = Throttle(
            store: store, settings: preset.throttling, ipLimits: config.ipLimits, clock: clock, copy: preset.copy, chainKey: chainKey,
            recovery: preset.signInMethods)

        let transport: any MailTransport
        if let hook = config.hooks[.sendEmail] {
            // The app's SEND_EMAIL hook takes every mail instead of SMTP.
            transport = EmailHookTransport(endpoint: hook, caller: hookCaller)
        } else if let url = config.smtpURL, let settings = SMTPSettings(url: url, trustedCertificates: smtpCA) {
            transport = SMTPTransport(
                settings: settings, composer: MailComposer(from: config.sender, domain: config.publicURL.host ?? "localhost"), clock: clock,
                tracer: tracer)
        } else {
            transport = DevOutboxTransport(logger: logger)
        }
        let smsSender: any SMSSender
        switch config.smsSender {
        case .hook(let url, let secret, let format)?: smsSender = SMSHookSender(url: url, secret: secret, format: format, caller: hookCaller)
        case .twilio(let settings)?: smsSender = TwilioSender(settings: settings, client: httpClient)
        case nil: smsSender = DevSMSSender(logger: logger)
        }
        let delivery = OutboxDelivery(
            mail: transport, sms: smsSender,
            failures: SMSFailures(store: store, threshold: preset.sms.pauseAfterFailures, clock: clock, metrics: metrics, logger: logger))
        mailWorker = MailWorker(
            store: store, transport: delivery,
            composer: MailRequestComposer(transactions: Transactions(store) { $0 }, templates: templates, links: links, preset: preset, clock: clock), clock: clock,
            logger: logger, metrics: metrics, telemetry: telemetry)
        if let credentials = config.appleCredentials {
            // The key was parsed when the configuration was read, so this does not fail here.
            appleTokens = try await AppleTokenClient(credentials: credentials, client: httpClient, clock: clock)
        } else {
            appleTokens = nil
        }
        let appleJobs = AppleJobs(tokens: appleTokens, store: store, sealer: sealer, clock: clock, logger: logger).handlers
        let stripeClient = config.stripe.map { [httpClient] in StripeClient(settings: $0, client: httpClient) }
        stripe = stripeClient
        // Google Play needs the service account and the app's package name (the preset's).
        if let settings = config.googlePlay, let packageName = preset.googlePlay.packageName {
            googlePlay = GooglePlayClient(account: settings.account, packageName: packageName, apiURL: settings.apiURL, client: httpClient, clock: clock)
        } else {
            googlePlay = nil
        }
        let stripeJobs = StripeJobs(client: stripeClient, logger: logger)
        var sender: WebhookSender?
        if let url = config.webhookURL, let secret = config.webhookSecret {
            sender = WebhookSender(url: url, secret: secret, client: httpClient, clock: clock, tracer: tracer)
        }
        // Every kind of job is named here: a new kind does not compile until it has a handler
        // (or is said to need none).
        var jobHandlers: [JobKind: JobWorker.Handler] = [:]
        for kind in JobKind.allCases {
            switch kind {
            case .appleExchange, .appleRevoke:
                jobHandlers[kind] = appleJobs[kind]
            case .stripeCancel:
                jobHandlers[kind] = stripeJobs.cancel
            case .phoneSignUp, .googlePlayAcknowledge, .googlePlayCancel:
                // The work of a use case (`PhoneService.finishSignUp`,
                // `GooglePlayPurchaseService.acknowledge` and `cancel`), set when it is made (UseCases).
                continue
            case .webhook:
                // Queued only when a webhook is configured (`EventRecorder.webhookConfigured`).
                guard let sender else { continue }
                jobHandlers[kind] = { job, payload in
                    do {
                        try await sender.deliver(job, payload)
                        metrics.webhookDelivery("delivered")
                    } catch {
                        metrics.webhookDelivery("failed")
                        throw error
                    }
                }
            }
        }
        // Webhooks are retried for about a day (backoff capped at an hour) before they are given up.
        jobs = JobWorker(
            store: store, sealer: sealer, clock: clock, logger: logger, handlers: jobHandlers, maximumAttempts: [WebhookSender.jobKind: 30, .stripeCancel: 30, .googlePlayAcknowledge: 30, .googlePlayCancel: 30],
            telemetry: telemetry, metrics: metrics)
        let events = EventRecorder(
            jobs: jobs, webhookConfigured: config.webhookURL != nil, clock: clock, trialStartsAtSignup: preset.entitlements.trial.startsAtSignup)
        var unitOfWork = UnitOfWork(
            store: store, narrow: { $0 }, events: events, mail: mailWorker, jobs: jobs, privacy: preset.privacy, clock: clock)
        unitOfWork.metrics = metrics
        unitOfWork.telemetry = telemetry
        self.unitOfWork = unitOfWork
        appleKeys = ProviderKeySet(url: config.appleJWKSURL, client: httpClient, clock: clock, logger: logger, tracer: tracer)
        googleKeys = ProviderKeySet(url: config.googleJWKSURL, client: httpClient, clock: clock, logger: logger, tracer: tracer)
        if preset.throttling.captchaAfterIPFailures != nil, config.captchaVerifyURL == nil {
            logger.warning(
                "the preset asks for a CAPTCHA after repeated failed logins, but GATEHOUSE_CAPTCHA_VERIFY_URL is not set: no CAPTCHA is asked for")
        }
    }
}
