import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// Every use case, wired from the infrastructure and the parts they share. No use case holds
/// another to borrow its fields: the shared parts (`SessionIssuer`, `Credentials`,
/// `AccountLifecycle`, `SignInGate`, `UnitOfWork`…) are built here and handed to each.
struct UseCases {
    let authenticator: Authenticator
    let passwords: PasswordService
    let sessions: SessionService
    let verification: EmailVerificationService
    let reset: PasswordResetService
    let magicLinks: MagicLinkService
    let linkStates: EmailLinkStates
    let providers: ProviderSignInService
    let profiles: ProfileService
    let account: AccountService
    let export: ExportService
    let entitlements: EntitlementService
    let usage: UsageService
    let analytics: AnalyticsService
    let purchases: AppStorePurchaseService
    let stripe: StripeService
    let googlePlay: GooglePlayPurchaseService
    let users: OperatorService
    let imports: ImportService
    let operatorMail: OperatorMailService
    let operatorKeys: OperatorKeysService
    let passkeys: PasskeyService
    let mfa: MFAService
    let phone: PhoneService
    let lifecycle: AccountLifecycle
    let console: ConsoleService
    /// The console overview's background counts: a service of the app.
    let overviewCounts: OverviewCounts
    let openID: OpenIDService
    let clients: OperatorClientsService

    init(_ infra: Infrastructure) {
        let (config, preset, store, clock, unitOfWork, throttle) = (
            infra.config, infra.preset, infra.store, infra.clock, infra.unitOfWork, infra.throttle
        )
        let accountMail = AccountMail(templates: infra.templates, links: infra.links, preset: preset)
        let gate = SignInGate(
            preset: preset, throttle: throttle,
            captcha: config.captchaVerifyURL.map {
                CaptchaVerifier(verifyURL: $0, secret: config.captchaSecret ?? "", client: infra.httpClient, logger: infra.logger)
            })
        let credentials = Credentials(
            hasher: infra.hasher, policy: PasswordPolicy(settings: preset.passwordPolicy, blocklist: infra.blocklist, copy: preset.copy),
            breached: BreachedPasswordChecker(client: infra.untracedHTTPClient, baseURL: config.breachedPasswordsURL, logger: infra.logger),
            throttle: throttle, preset: preset, audits: unitOfWork.narrowed { _ in () })
        let hooks = AuthHooks(
            caller: infra.hookCaller, settings: config.hooks, preset: preset, presetName: preset.name,
            audits: unitOfWork.narrowed { _ in () })
        let issuer = SessionIssuer(tokens: infra.tokens, mail: accountMail, settings: preset.tokens, mfa: preset.mfa, hooks: hooks)
        let lifecycle = AccountLifecycle(handles: preset.handles, hooks: hooks)
        let merges = MergeTokens(chainKey: infra.chainKey, clock: clock)
        let codes = MagicCodes(store: store, links: infra.links, preset: preset, clock: clock)
        let requests = InboxRequests(throttle: throttle, credentials: credentials, settings: preset.email)
        let idTokenFailure = preset.text("error.invalid_id_token", "Authentication with Google/Apple failed. Please try again.")
        let leeway = TimeInterval(preset.tokens.leewaySeconds)
        let verifiers = ProviderVerifiers(
            apple: ProviderTokenVerifier(
                provider: .apple, issuers: ProviderTokenVerifier.appleIssuers, audiences: Set(config.appleAudiences),
                keys: infra.appleKeys, clock: clock, leeway: leeway, failureMessage: idTokenFailure),
            google: ProviderTokenVerifier(
                provider: .google, issuers: ProviderTokenVerifier.googleIssuers, audiences: Set(config.googleAudiences),
                keys: infra.googleKeys, clock: clock, leeway: leeway, failureMessage: idTokenFailure))
        // The preset's own "open the app" address is trusted like an allowlist entry.
        let redirects = RedirectPolicy(allowlist: config.redirectAllowlist + [preset.app.openAppURL].compactMap { $0 })

        let stepUp = StepUpGate(engine: infra.engine, store: store, clock: clock)
        let assertions = PasskeyAssertions(
            store: store, ceremony: WebAuthnCeremony(crypto: SwiftCryptoPasskeys()), relyingParty: config.relyingParty,
            settings: preset.passkeys, clock: clock)

        self.lifecycle = lifecycle
        authenticator = Authenticator(tokens: infra.tokens, store: store, preset: preset, clock: clock)
        let entitlementReads = Entitlements(store: store, engine: infra.engine, clock: clock)
        entitlements = EntitlementService(unitOfWork: unitOfWork.narrowed { $0 }, entitlements: entitlementReads, clock: clock)
        passwords = PasswordService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, throttle: throttle, stepUp: stepUp, gate: gate, credentials: credentials, sessions: issuer,
            lifecycle: lifecycle, mail: accountMail, preset: preset, clock: clock)
        let chains = RefreshChains(tokens: infra.tokens, preset: preset)
        sessions = SessionService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, sessions: issuer, tokens: infra.tokens, chains: chains, preset: preset, clock: clock)
        verification = EmailVerificationService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, mail: accountMail, sessions: issuer, preset: preset, clock: clock)
        reset = PasswordResetService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, gate: gate, credentials: credentials, requests: requests, lifecycle: lifecycle,
            mail: accountMail, throttle: throttle, sessions: issuer, preset: preset, clock: clock)
        magicLinks = MagicLinkService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, gate: gate, requests: requests, codes: codes, sessions: issuer, lifecycle: lifecycle,
            mail: accountMail, merges: merges, redirects: redirects, throttle: throttle, preset: preset, clock: clock)
        linkStates = EmailLinkStates(store: store, clock: clock)
        providers = ProviderSignInService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, gate: gate, credentials: credentials, sessions: issuer, lifecycle: lifecycle,
            mail: accountMail, throttle: throttle, verifiers: verifiers, preset: preset,
            appleTokens: infra.appleTokens != nil, merges: merges, stepUp: stepUp)
        profiles = ProfileService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, gate: gate, sessions: issuer, lifecycle: lifecycle, throttle: throttle,
            entitlements: entitlementReads, merges: merges, preset: preset, clock: clock)
        let phoneCodes = PhoneCodes(chainKey: infra.chainKey, preset: preset, domain: config.publicURL.host ?? "localhost", decoys: store)
        account = AccountService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, credentials: credentials, lifecycle: lifecycle, verifiers: verifiers, codes: codes,
            phoneCodes: phoneCodes,
            passkeys: assertions, stepUp: stepUp, preset: preset, clock: clock)
        export = ExportService(store: store, entitlements: entitlementReads, stepUp: stepUp, clock: clock)
        usage = UsageService(store: store, unitOfWork: unitOfWork.narrowed { $0 }, entitlements: entitlementReads, engine: infra.engine, clock: clock)
        analytics = AnalyticsService(unitOfWork: unitOfWork.narrowed { $0 }, throttle: throttle, clock: clock)
        purchases = AppStorePurchaseService(
            store: store, verifier: AppStoreJWSVerifier(roots: infra.appStoreRoots),
            bundleID: config.appStoreBundleID ?? config.appleAudiences.first, environments: config.appStoreEnvironments,
            entitlements: entitlementReads, engine: infra.engine, unitOfWork: unitOfWork.narrowed { $0 }, clock: clock, logger: infra.logger)
        stripe = StripeService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, client: infra.stripe, webhookSecrets: config.stripe?.webhookSecrets ?? [],
            prices: preset.stripe.prices, copy: preset.copy, redirects: redirects, entitlements: entitlementReads, clock: clock,
            logger: infra.logger)
        let removal = FactorRemoval(mail: accountMail)
        users = OperatorService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, lifecycle: lifecycle, removal: removal, engine: infra.engine,
            tokens: preset.tokens, clock: clock)
        imports = ImportService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, lifecycle: lifecycle, firebaseKeys: infra.firebaseKeys, clock: clock, hasher: infra.hasher)
        operatorMail = OperatorMailService(store: store, unitOfWork: unitOfWork.narrowed { $0 }, mail: accountMail, preset: preset)
        operatorKeys = OperatorKeysService(
            unitOfWork: unitOfWork.narrowed { _ in () }, keys: infra.keys, metrics: infra.metrics,
            retiredKeyPublishSeconds: KeyRing.retiredKeyPublishSeconds(
                accessTokenTTLSeconds: preset.tokens.accessTokenTTLSeconds, leewaySeconds: preset.tokens.leewaySeconds))
        let ownerProof = OwnerProof(preset: preset, clock: clock)
        passkeys = PasskeyService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, gate: gate, sessions: issuer, lifecycle: lifecycle, assertions: assertions,
            credentials: credentials, throttle: throttle, ownerProof: ownerProof, mail: accountMail, preset: preset, clock: clock,
            decoyKey: infra.chainKey)
        mfa = MFAService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, sessions: issuer, throttle: throttle, ownerProof: ownerProof, sealer: infra.sealer,
            codeKey: infra.chainKey, mail: accountMail, removal: removal, preset: preset, clock: clock)
        phone = PhoneService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, gate: gate,
            codes: phoneCodes,
            defences: SMSDefences(
                throttle: throttle, gate: gate, settings: preset.sms, presetName: preset.name, audit: unitOfWork.narrowed { _ in () },
                metrics: infra.metrics, clock: clock, copy: preset.copy),
            notices: PhoneNotices(mail: accountMail, preset: preset),
            sessions: issuer, lifecycle: lifecycle, ownerProof: ownerProof, credentials: credentials, throttle: throttle, preset: preset,
            clock: clock)
        googlePlay = GooglePlayPurchaseService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, client: infra.googlePlay,
            pushVerifier: ProviderTokenVerifier(
                provider: .google, issuers: ProviderTokenVerifier.googleIssuers, audiences: Set(config.googlePlay.map { [$0.pushAudience] } ?? []),
                keys: infra.googleKeys, clock: clock, leeway: leeway, failureMessage: "The push is not signed by Google."),
            settings: config.googlePlay, products: preset.googlePlay.products, entitlements: entitlementReads, clock: clock, logger: infra.logger)
        infra.jobs.handle(.googlePlayAcknowledge) { [googlePlay] _, payload in
            try await googlePlay.acknowledge(try JSONDecoder().decode(GooglePlayPurchaseService.Acknowledgement.self, from: payload))
        }
        infra.jobs.handle(.googlePlayCancel) { [googlePlay] _, payload in
            guard let token = try JSONDecoder().decode([String: String].self, from: payload)["token"] else {
                throw ProviderError("malformed google_play_cancel job")
            }
            try await googlePlay.cancel(token: token)
        }
        infra.jobs.handle(.phoneSignUp) { [phone] _, payload in
            try await phone.finishSignUp(try JSONDecoder().decode(PhoneService.SignUpJob.self, from: payload))
        }
        openID = OpenIDService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, tokens: OpenIDTokens(tokens: infra.tokens, settings: preset.tokens, clock: clock),
            chains: chains, sessions: issuer, throttle: throttle, preset: preset, clock: clock)
        clients = OperatorClientsService(store: store, unitOfWork: unitOfWork.narrowed { $0 }, appAudience: infra.tokens.audience, clock: clock)
        overviewCounts = OverviewCounts(store: store, engine: infra.engine, clock: clock, logger: infra.logger)
        console = ConsoleService(
            store: store, unitOfWork: unitOfWork.narrowed { $0 }, entitlements: entitlementReads, engine: infra.engine, keys: infra.keys,
            preset: preset, clock: clock, hookHealth: infra.hookCaller.health,
            hooks: HookName.allCases.filter { config.hooks[$0] != nil }.map(\.label)
                + (config.smsSender.map { if case .hook = $0 { [SMSHookSender.label] } else { [] } } ?? []),
            overviewCounts: overviewCounts, scanBudget: .milliseconds(config.consoleScanMilliseconds))
    }
}
