import Configuration
import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import Logging
import SystemPackage

/// Everything the server reads from its environment, validated in one place.
///
/// Precedence: environment variables, then the optional JSON config file named by
/// `GATEHOUSE_CONFIG_FILE` (`{"gatehouse": {"port": 8080, …}}`), then defaults. With no
/// configuration at all the server runs on `127.0.0.1:8080` with `./gatehouse.sqlite`, the
/// dev mail outbox and a generated signing key.
public struct GatehouseConfig: Sendable {
    public enum Environment: String, Sendable {
        case development
        case production
    }

    public var host = "127.0.0.1"
    public var port = 8080
    public var database = DatabaseURL.sqlite(path: "gatehouse.sqlite")
    public var preset = Preset(name: "default")
    /// Where the preset came from: a built-in name or a file path.
    public var presetSource = "default"
    /// Base of links in emails and of the token issuer.
    public var publicURL = URL(string: "http://127.0.0.1:8080")!
    public var environment = Environment.development
    public var smtpURL: String?
    /// PEM certificates the SMTP client trusts beside the system's (a private CA).
    public var smtpCAFile: String?
    /// `From` of every mail; defaults to `<app name> <no-reply@<public host>>`.
    public var mailFrom: String?
    /// When unset, a key is generated into `adminKeyFile` on first start.
    public var adminKey: String?
    public var adminKeyFile = "gatehouse-admin-key"
    /// What the app's own backends present to `POST /v1/usage/{meter}`; unset, that call
    /// answers 401 to everyone.
    public var serviceKey: String?
    /// Supabase's publishable (anon) key that apps send as `apikey`: set, `/auth/v1` (Supabase
    /// Auth's API) is served; unset, it is not.
    public var supabaseAnonKey: String?
    /// Supabase's service role key: `/auth/v1/admin/users` answers to it (24+ characters).
    public var supabaseServiceRoleKey: String?
    /// Encrypts signing keys at rest when set.
    public var secretKey: String?
    public var appleAudiences: [String] = []
    public var googleAudiences: [String] = []
    public var appleJWKSURL = URL(string: "https://appleid.apple.com/auth/keys")!
    /// Sign in with Apple credentials for exchanging and revoking Apple's tokens (all four or none).
    public var appleTeamID: String?
    public var appleKeyID: String?
    /// The PEM of the Sign in with Apple private key (read from `GATEHOUSE_APPLE_PRIVATE_KEY_FILE`).
    public var applePrivateKey: String?
    /// Defaults to the first of `appleAudiences`.
    public var appleClientID: String?
    public var appleTokenURL = URL(string: "https://appleid.apple.com/auth/token")!
    public var appleRevokeURL = URL(string: "https://appleid.apple.com/auth/revoke")!
    public var googleJWKSURL = URL(string: "https://www.googleapis.com/oauth2/v3/certs")!
    /// A PEM file of the roots App Store JWS must chain to (default: Apple Root CA - G3).
    public var appStoreRootCerts: String?
    /// The app's bundle id; defaults to the first Apple sign-in audience (a native app's
    /// audience is its bundle id).
    public var appStoreBundleID: String?
    /// The App Store environments whose purchases count: `Production` by default; add
    /// `Sandbox` for TestFlight and App Review.
    public var appStoreEnvironments = ["Production"]
    /// HTTPS served by Gatehouse itself: a PEM certificate chain and its private key (both or
    /// neither). Without them, put Gatehouse behind a TLS-terminating reverse proxy.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    /// The CAPTCHA provider's siteverify URL (Turnstile, hCaptcha, reCAPTCHA) and secret.
    public var captchaVerifyURL: URL?
    public var captchaSecret: String?
    public var redirectAllowlist: [String] = []
    public var trustedProxies: [String] = []
    /// `false` lifts per-IP request limits (load tests); per-account limits stay on.
    public var ipLimits = true
    public var webhookURL: URL?
    public var webhookSecret: String?
    /// Where SMS codes go (`GATEHOUSE_SMS_HOOK_URL`, or `GATEHOUSE_TWILIO_*`); nil: the dev
    /// outbox, in development only.
    public var smsSender: SMSSenderSettings?
    /// Stripe's API and webhook secrets (`GATEHOUSE_STRIPE_*`); nil: web checkout answers 503.
    public var stripe: StripeAPISettings?
    /// Google Play's service account and push checks (`GATEHOUSE_GOOGLE_PLAY_*`); nil: Google
    /// Play purchases answer 503.
    var googlePlay: GooglePlayAPISettings?
    /// The app's auth hooks (`GATEHOUSE_HOOK_*`, docs/hooks.md); none by default.
    public var hooks = HookSettings()
    public var maxBodyBytes = 65_536
    /// `GATEHOUSE_MEMORY_TRIM_SECONDS`: how often the free memory malloc holds is checked, going
    /// back to the system over 16 MiB (`MemoryTrim`); 0 never.
    public var memoryTrimSeconds = 1
    /// PostgreSQL connections each node may open (PostgreSQL's `max_connections` must exceed the
    /// sum over all nodes, see docs/scaling.md).
    public var databasePoolSize = 20
    /// `GATEHOUSE_DATABASE_POOL_MINIMUM`: of those, the connections kept open when idle; nil, the
    /// default, keeps them all (a fixed-size pool). The others close after 60 s idle.
    public var databasePoolMinimum: Int?
    /// The connections the pool keeps open: `databasePoolMinimum`, or the whole pool.
    public var databasePoolKept: Int { min(databasePoolMinimum ?? databasePoolSize, databasePoolSize) }
    /// PostgreSQL: queries as named prepared statements, parsed and planned once per connection.
    /// Off for a connection pooler that cannot keep them (PgBouncer in transaction mode before 1.21).
    public var databasePreparedStatements = true
    /// SQLite: keep the copy a start makes before migrating (`<file>.schema-<version>.bak`)
    /// after the server is up, instead of removing it.
    public var keepMigrationBackup = false
    /// Each node keeps recent sessions, and what the entitlement snapshot reads of their
    /// accounts, in memory for token-authenticated reads (`SessionCache`; bound in
    /// docs/scaling.md): dropped across nodes by LISTEN/NOTIFY on PostgreSQL; on SQLite by this
    /// process's own writes and, for another process's (the CLI), a poll of `PRAGMA data_version`.
    public var sessionCache = true
    /// `GET /metrics` (Prometheus text) is served: `GATEHOUSE_METRICS=on`, or a token set.
    public var metrics = false
    /// When set, `GET /metrics` asks for `Authorization: Bearer <token>` (24+ characters).
    public var metricsToken: String?
    public var metricsEnabled: Bool { metrics || metricsToken != nil }
    /// Where spans are exported by OTLP/HTTP (protobuf); nil: traces are off. From
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, or `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`.
    public var tracesEndpoint: String?
    /// The `service.name` of the spans (`OTEL_SERVICE_NAME`).
    public var tracesServiceName = "gatehouse"
    /// A connection that sends nothing for this long (a request's head included, so a client
    /// trickling its headers in) is closed.
    public var httpIdleTimeoutSeconds = 30
    /// A request's whole body must arrive within this long of its head (408 after): a body
    /// trickled in a byte at a time stays under the idle timeout but not under this.
    public var httpBodyTimeoutSeconds = 15
    /// `GATEHOUSE_CONSOLE_SCAN_MILLISECONDS`: how long a console page filtered by plan or
    /// provider keeps testing accounts (200 at a time, at least one batch, 2,000 at most, and no
    /// batch that would end past it, judged by the slowest so far) before it
    /// shows what it found and offers to go on (issue 65: a page answers in bounded time
    /// whatever the number of accounts).
    public var consoleScanMilliseconds = 20
    /// Open connections in all; one more is closed as it opens. With `maxBodyBytes` this bounds
    /// what request bodies can hold in memory.
    public var maxConnections = 4_096
    /// Open connections from one client address (trusted proxies excepted; off with the other
    /// per-IP limits).
    public var maxConnectionsPerAddress = 256
    /// Argon2id cost for new password hashes; older hashes are upgraded at login.
    public var argon2 = Argon2Parameters()
    /// Threads that hash passwords (never the event loops).
    public var hashThreads = ProcessInfo.processInfo.activeProcessorCount
    /// The k-anonymity range endpoint for the breached-password check.
    public var breachedPasswordsURL = "https://api.pwnedpasswords.com/range/"
    /// `aud` of access tokens; defaults to the preset's name.
    public var tokenAudience: String?
    /// Passkeys' rp id, origins and iOS apps (`GATEHOUSE_PASSKEY_RP_ID`, `_ORIGINS`,
    /// `GATEHOUSE_APPLE_APP_IDS`); by default the public URL's host and origin.
    public var relyingParty = RelyingParty.derived(from: URL(string: "http://127.0.0.1:8080")!)
    public var logLevel = Logger.Level.info
    /// `json` (one object a line) or `text`.
    public var logFormat = "json"

    public init() {}

    /// The token issuer (`iss`): the public URL without a trailing slash.
    public var issuer: String {
        var text = publicURL.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    /// Apple's token credentials when they are all set.
    var appleCredentials: AppleCredentials? {
        guard let appleTeamID, let appleKeyID, let applePrivateKey, let client = appleClientID ?? appleAudiences.first else { return nil }
        return AppleCredentials(
            teamID: appleTeamID, keyID: appleKeyID, clientID: client, privateKeyPEM: applePrivateKey, tokenURL: appleTokenURL,
            revokeURL: appleRevokeURL)
    }

    /// The sender of Gatehouse's mail.
    public var sender: String { mailFrom ?? "\(preset.app.name) <no-reply@\(publicURL.host ?? "localhost")>" }

    /// The `aud` claim of access tokens.
    public var audience: String { tokenAudience ?? preset.name }

    /// Development mode serves `/dev/outbox` and allows `http://` public URLs.
    public var isDevelopment: Bool { environment == .development }

    /// One line per setting, secrets redacted; for the start-up log.
    public var redactedSummary: [String: String] {
        [
            "host": host, "port": String(port), "database": database.description, "preset": presetSource,
            "public_url": publicURL.absoluteString, "environment": environment.rawValue,
            "smtp": smtpURL.map(Self.redactURL) ?? "dev outbox",
            "sms": smsSender?.summary ?? "dev outbox",
            "stripe": stripe.map { "on at \($0.apiURL.absoluteString), \($0.webhookSecrets.count) webhook secret(s)" } ?? "off",
            "google_play": googlePlay.map { "on at \($0.apiURL.absoluteString) as \($0.account.clientEmail), pushes for \($0.pushAudience)" } ?? "off",
            "admin_key": adminKey == nil ? "file \(adminKeyFile)" : "<redacted>",
            "secret_key": secretKey == nil ? "unset (signing keys stored unencrypted)" : "<redacted>",
            "ip_limits": ipLimits ? "on" : "off", "max_body_bytes": String(maxBodyBytes),
            "supabase_auth": supabaseAnonKey == nil ? "off" : (supabaseServiceRoleKey == nil ? "on, no admin routes" : "on, with admin routes"),
            "metrics": metricsToken != nil ? "on, bearer token" : (metrics ? "on, no token" : "off"),
            "traces": tracesEndpoint.map { "otlp \(Self.redactURL($0))" } ?? "off",
        ]
    }

    static func redactURL(_ string: String) -> String {
        guard var components = URLComponents(string: string) else { return "<redacted>" }
        if components.password != nil { components.password = "***" }
        return components.string ?? "<redacted>"
    }
}

/// Every configuration problem found, each naming its variable.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var problems: [String]
    public var description: String { problems.joined(separator: "\n") }
}

/// Where SMS codes go.
public enum SMSSenderSettings: Sendable, Equatable {
    /// The app's own send hook, signed as Standard Webhooks with the `whsec_` secret's bytes, in
    /// Gatehouse's payload or Supabase Auth's `send-sms` one (`GATEHOUSE_SMS_HOOK_FORMAT`).
    case hook(url: URL, secret: [UInt8], format: HookFormat = .gatehouse)
    case twilio(TwilioSettings)

    /// The send hook at `url` with a Standard Webhooks secret (`whsec_` and base64); nil when the
    /// secret is not one.
    public static func hook(url: URL, secret: String, format: HookFormat = .gatehouse) -> SMSSenderSettings? {
        HookCaller.secretBytes(secret).map { .hook(url: url, secret: $0, format: format) }
    }

    var summary: String {
        switch self {
        case .hook(let url, _, let format): "hook \(GatehouseConfig.redactURL(url.absoluteString)) (\(format.rawValue))"
        case .twilio(let settings): "twilio \(settings.accountSID) at \(settings.apiURL.absoluteString)"
        }
    }
}

/// Twilio's Messages API: the account, its auth token, and who the messages come from.
public struct TwilioSettings: Sendable, Equatable {
    public enum Sender: Sendable, Equatable {
        /// `GATEHOUSE_TWILIO_FROM`: a Twilio number (E.164) or alphanumeric sender id.
        case from(String)
        /// `GATEHOUSE_TWILIO_MESSAGING_SERVICE_SID`: a Messaging Service that picks the sender.
        case messagingService(String)
    }

    public var accountSID: String
    public var authToken: String
    public var sender: Sender
    /// `GATEHOUSE_TWILIO_API_URL`; Twilio's own by default.
    public var apiURL: URL

    public static let defaultAPIURL = URL(string: "https://api.twilio.com")!

    public init(accountSID: String, authToken: String, sender: Sender, apiURL: URL = Self.defaultAPIURL) {
        (self.accountSID, self.authToken, self.sender, self.apiURL) = (accountSID, authToken, sender, apiURL)
    }
}
