import Configuration
import Foundation
import JWTKit
import GatehouseCore
import GatehouseWire
import GatehouseStore
import Logging
import SystemPackage

extension GatehouseConfig {
    /// The settings a config file may hold (under `gatehouse`), each also an environment
    /// variable `GATEHOUSE_<NAME>`.
    static let knownKeys: [String] = [
        "host", "port", "database_url", "database_pool_size", "database_prepared_statements", "keep_migration_backup", "preset", "public_url", "environment", "smtp_url", "admin_key",
        "admin_key_file", "secret_key", "apple_audiences", "google_audiences", "apple_jwks_url",
        "google_jwks_url", "appstore_root_certs", "appstore_bundle_id", "appstore_environments", "captcha_verify_url", "captcha_secret", "tls_cert_file", "tls_key_file", "redirect_allowlist",
        "trusted_proxies", "ip_limits", "webhook_url", "webhook_secret", "max_body_bytes", "http_idle_timeout_seconds", "max_connections", "max_connections_per_ip", "log_level",
        "log_format", "argon2_memory_kib", "argon2_iterations", "argon2_parallelism", "hash_threads", "memory_trim_seconds",
        "breached_passwords_url", "token_audience", "smtp_ca_file", "mail_from", "apple_team_id", "apple_key_id",
        "apple_private_key_file", "apple_client_id", "apple_token_url", "apple_revoke_url", "service_key",
        "passkey_rp_id", "passkey_origins", "apple_app_ids", "supabase_anon_key", "supabase_service_role_key",
        "sms_hook_url", "sms_hook_secret", "sms_hook_format", "twilio_account_sid", "twilio_auth_token", "twilio_from", "twilio_messaging_service_sid",
        "twilio_api_url", "stripe_secret_key", "stripe_webhook_secrets", "stripe_api_url",
    ] + googlePlayKeys + hookKeys

    /// The SMS sender the settings name: the send hook or Twilio (not both), every part it needs.
    static func smsSender(_ settings: inout Settings) -> SMSSenderSettings? {
        let hookURL = settings.url("sms_hook_url", schemes: ["http", "https"])
        let twilio = settings.string("twilio_account_sid")
        if hookURL != nil, twilio != nil {
            settings.problem("sms_hook_url", "and GATEHOUSE_TWILIO_ACCOUNT_SID are both set; choose one SMS sender")
            return nil
        }
        if let hookURL {
            guard let secret = settings.string("sms_hook_secret") else {
                settings.problem("sms_hook_secret", "is required when GATEHOUSE_SMS_HOOK_URL is set")
                return nil
            }
            guard let bytes = HookCaller.secretBytes(secret) else {
                settings.problem("sms_hook_secret", "must be a Standard Webhooks secret: whsec_ and at least 16 bytes in base64")
                return nil
            }
            var format = HookFormat.gatehouse
            if let text = settings.string("sms_hook_format") {
                guard let named = HookFormat(rawValue: text.lowercased()) else {
                    settings.problem("sms_hook_format", "'\(text)' is not gatehouse or supabase")
                    return nil
                }
                format = named
            }
            return .hook(url: hookURL, secret: bytes, format: format)
        }
        guard let sid = twilio else { return nil }
        guard let token = settings.string("twilio_auth_token") else {
            settings.problem("twilio_auth_token", "is required when GATEHOUSE_TWILIO_ACCOUNT_SID is set")
            return nil
        }
        let sender: TwilioSettings.Sender
        switch (settings.string("twilio_from"), settings.string("twilio_messaging_service_sid")) {
        case (let from?, nil): sender = .from(from)
        case (nil, let service?): sender = .messagingService(service)
        default:
            settings.problem("twilio_from", "or GATEHOUSE_TWILIO_MESSAGING_SERVICE_SID must be set, one of them")
            return nil
        }
        let apiURL = settings.url("twilio_api_url", schemes: ["http", "https"]) ?? TwilioSettings.defaultAPIURL
        return .twilio(TwilioSettings(accountSID: sid, authToken: token, sender: sender, apiURL: apiURL))
    }

    static let secretKeys: Set<String> = Set(["admin_key", "service_key", "supabase_service_role_key", "secret_key", "webhook_secret", "smtp_url", "captcha_secret", "sms_hook_secret", "twilio_auth_token", "stripe_secret_key", "stripe_webhook_secrets"]).union(hookSecretKeys)

    /// Reads and validates the configuration from `environment` (normally the process's) and
    /// the file it names. Reports every problem at once.
    public static func load(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(ConfigurationError) -> GatehouseConfig {
        var problems: [String] = []
        var providers: [any ConfigProvider] = [EnvironmentVariablesProvider(environmentVariables: environment)]
        if let file = environment["GATEHOUSE_CONFIG_FILE"], !file.isEmpty {
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: file))
                problems += checkConfigFile(data, path: file)
                providers.append(try await FileProvider<JSONSnapshot>(filePath: FilePath(file)))
            } catch {
                problems.append("GATEHOUSE_CONFIG_FILE: cannot read \(file): \(Self.reason(error))")
            }
        }
        let reader = ConfigReader(providers: providers)
        var config = GatehouseConfig()
        var settings = Settings(reader: reader)

        if let host = settings.string("host") { config.host = host }
        if let port = settings.int("port", range: 0...65_535, meaning: "a port number from 1 to 65535 (or 0 for any free port)") {
            config.port = port
        }
        if let url = settings.string("database_url") {
            switch DatabaseURL.parse(url) {
            case .success(let database): config.database = database
            case .failure(let error): settings.problem("database_url", error.description)
            }
        }
        if let size = settings.int("database_pool_size", range: 2...500, meaning: "a number of connections from 2 to 500") {
            config.databasePoolSize = size
        }
        if let prepared = settings.onOff("database_prepared_statements") { config.databasePreparedStatements = prepared }
        if let keep = settings.onOff("keep_migration_backup") { config.keepMigrationBackup = keep }
        if let cache = settings.onOff("session_cache") { config.sessionCache = cache }
        if let metrics = settings.onOff("metrics") { config.metrics = metrics }
        if let token = settings.string("metrics_token") {
            if token.count >= 24 { config.metricsToken = token } else {
                settings.problem("metrics_token", "must be at least 24 characters long")
            }
        }
        if let level = settings.string("log_level") {
            if let parsed = Logger.Level(rawValue: level.lowercased()) {
                config.logLevel = parsed
            } else {
                settings.problem("log_level", "'\(level)' is not one of trace, debug, info, notice, warning, error, critical")
            }
        }
        if let format = settings.string("log_format") {
            if ["json", "text"].contains(format) { config.logFormat = format } else {
                settings.problem("log_format", "'\(format)' is not json or text")
            }
        }
        if let value = settings.string("environment") {
            if let parsed = Environment(rawValue: value.lowercased()) {
                config.environment = parsed
            } else {
                settings.problem("environment", "'\(value)' is not development or production")
            }
        }
        if let url = settings.url("public_url", schemes: ["http", "https"]) {
            config.publicURL = url
        } else if !settings.has("public_url") {
            config.publicURL = URL(string: "http://\(config.host.contains(":") ? "[\(config.host)]" : config.host):\(config.port)")!
        }
        if config.environment == .production, config.publicURL.scheme != "https" {
            settings.problem("public_url", "must be an https:// URL in production")
        }
        if let smtp = settings.string("smtp_url") {
            if let components = URLComponents(string: smtp), ["smtp", "smtps"].contains(components.scheme ?? ""),
                components.host?.isEmpty == false
            {
                config.smtpURL = smtp
            } else {
                settings.problem("smtp_url", "must look like smtp://user:pass@host:port")
            }
        }
        if let path = settings.string("smtp_ca_file") {
            if FileManager.default.isReadableFile(atPath: path) { config.smtpCAFile = path } else {
                settings.problem("smtp_ca_file", "cannot read \(path)")
            }
        }
        if let from = settings.string("mail_from") {
            if EmailAddress.isValid(MailComposer.address(in: from)) { config.mailFrom = from } else {
                settings.problem("mail_from", "'\(from)' is not an address like 'App <no-reply@example.com>'")
            }
        }
        if let key = settings.string("admin_key") {
            if key.count >= 24 { config.adminKey = key } else {
                settings.problem("admin_key", "must be at least 24 characters long")
            }
        }
        if let file = settings.string("admin_key_file") { config.adminKeyFile = file }
        if let key = settings.string("service_key") {
            if key.count >= 24 { config.serviceKey = key } else {
                settings.problem("service_key", "must be at least 24 characters long")
            }
        }
        if let key = settings.string("supabase_anon_key") {
            if key.count >= 16 { config.supabaseAnonKey = key } else {
                settings.problem("supabase_anon_key", "must be at least 16 characters long")
            }
        }
        if let key = settings.string("supabase_service_role_key") {
            if key.count < 24 {
                settings.problem("supabase_service_role_key", "must be at least 24 characters long")
            } else if config.supabaseAnonKey == nil {
                settings.problem("supabase_service_role_key", "needs GATEHOUSE_SUPABASE_ANON_KEY too: /auth/v1 is served only with both")
            } else if key == config.supabaseAnonKey {
                settings.problem("supabase_service_role_key", "must differ from the anon key, which apps ship in the clear")
            } else {
                config.supabaseServiceRoleKey = key
            }
        }
        if let key = settings.string("secret_key") {
            if key.utf8.count >= 32 { config.secretKey = key } else {
                settings.problem("secret_key", "must be at least 32 characters long")
            }
        } else if config.environment == .production {
            // Without it, signing keys, the refresh-chain key and provider tokens sit in the
            // database in clear.
            settings.problem("secret_key", "is required in production: it seals signing keys and provider tokens at rest")
        }
        config.appleAudiences = settings.list("apple_audiences") ?? []
        config.googleAudiences = settings.list("google_audiences") ?? []
        if let url = settings.url("apple_jwks_url", schemes: ["http", "https"]) { config.appleJWKSURL = url }
        if let url = settings.url("google_jwks_url", schemes: ["http", "https"]) { config.googleJWKSURL = url }
        config.appleTeamID = settings.string("apple_team_id")
        config.appleKeyID = settings.string("apple_key_id")
        config.appleClientID = settings.string("apple_client_id")
        if let path = settings.string("apple_private_key_file") {
            if let pem = try? String(contentsOfFile: path, encoding: .utf8), (try? ES256PrivateKey(pem: pem)) != nil {
                config.applePrivateKey = pem
            } else {
                settings.problem("apple_private_key_file", "cannot read an EC P-256 private key (PEM) from \(path)")
            }
        }
        let appleParts = [config.appleTeamID, config.appleKeyID, config.applePrivateKey].filter { $0 != nil }.count
        if appleParts != 0, appleParts != 3 {
            settings.problem("apple_team_id", "Apple token credentials need GATEHOUSE_APPLE_TEAM_ID, _KEY_ID and _PRIVATE_KEY_FILE together")
        }
        if let url = settings.url("apple_token_url", schemes: ["http", "https"]) { config.appleTokenURL = url }
        if let url = settings.url("apple_revoke_url", schemes: ["http", "https"]) { config.appleRevokeURL = url }
        if let path = settings.string("appstore_root_certs") {
            if let pem = try? String(contentsOfFile: path, encoding: .utf8), (try? AppStoreJWSVerifier.certificates(pem: pem)) != nil {
                config.appStoreRootCerts = path
            } else {
                settings.problem("appstore_root_certs", "cannot read PEM certificates from \(path)")
            }
        }
        config.appStoreBundleID = settings.string("appstore_bundle_id")
        if let list = settings.list("appstore_environments") {
            let known = ["Production", "Sandbox", "Xcode", "LocalTesting"]
            for entry in list where !known.contains(entry) {
                settings.problem("appstore_environments", "'\(entry)' is not one of \(known.joined(separator: ", "))")
            }
            config.appStoreEnvironments = list
        }
        config.tlsCertificateFile = settings.string("tls_cert_file")
        config.tlsKeyFile = settings.string("tls_key_file")
        if (config.tlsCertificateFile == nil) != (config.tlsKeyFile == nil) {
            settings.problem("tls_cert_file", "GATEHOUSE_TLS_CERT_FILE and GATEHOUSE_TLS_KEY_FILE go together")
        } else if config.tlsCertificateFile != nil, let problem = config.tlsProblem {
            settings.problem("tls_cert_file", problem)
        }
        if let url = settings.url("captcha_verify_url", schemes: ["http", "https"]) { config.captchaVerifyURL = url }
        config.captchaSecret = settings.string("captcha_secret")
        if config.captchaVerifyURL != nil, config.captchaSecret == nil {
            settings.problem("captcha_secret", "is required when GATEHOUSE_CAPTCHA_VERIFY_URL is set")
        }
        if let list = settings.list("redirect_allowlist") {
            // Web URLs need a host; app schemes (`handz://auth`) need only the scheme.
            for entry in list {
                let components = URLComponents(string: entry)
                let scheme = components?.scheme?.lowercased()
                let needsHost = scheme == "http" || scheme == "https"
                if scheme == nil || (needsHost && (components?.host ?? "").isEmpty) {
                    settings.problem("redirect_allowlist", "'\(entry)' is not an absolute URL")
                }
            }
            config.redirectAllowlist = list
        }
        if let list = settings.list("trusted_proxies") {
            for entry in list where IPRange(entry) == nil {
                settings.problem("trusted_proxies", "'\(entry)' is not an IP address or CIDR range")
            }
            config.trustedProxies = list
        }
        if let limits = settings.onOff("ip_limits") { config.ipLimits = limits }
        if let url = settings.url("webhook_url", schemes: ["http", "https"]) { config.webhookURL = url }
        config.webhookSecret = settings.string("webhook_secret")
        if config.webhookURL != nil, config.webhookSecret == nil {
            settings.problem("webhook_secret", "is required when GATEHOUSE_WEBHOOK_URL is set")
        }
        config.smsSender = smsSender(&settings)
        config.stripe = stripe(&settings)
        config.googlePlay = googlePlay(&settings)
        config.hooks = hooks(&settings)
        if let bytes = settings.int("max_body_bytes", range: 1_024...(64 << 20), meaning: "a size in bytes from 1024 to 67108864") {
            config.maxBodyBytes = bytes
        }
        if let seconds = settings.int("http_idle_timeout_seconds", range: 1...3_600, meaning: "a number of seconds from 1 to 3600") {
            config.httpIdleTimeoutSeconds = seconds
        }
        if let seconds = settings.int("http_body_timeout_seconds", range: 1...600, meaning: "a number of seconds from 1 to 600") {
            config.httpBodyTimeoutSeconds = seconds
        }
        if let count = settings.int("max_connections", range: 16...1_000_000, meaning: "a number of connections from 16 to 1000000") {
            config.maxConnections = count
        }
        if let count = settings.int("max_connections_per_ip", range: 1...1_000_000, meaning: "a number of connections from 1 to 1000000") {
            config.maxConnectionsPerAddress = count
        }
        if let memory = settings.int("argon2_memory_kib", range: 8...4_194_304, meaning: "a memory size in KiB from 8 to 4194304") {
            config.argon2.memoryKiB = UInt32(memory)
        }
        if let iterations = settings.int("argon2_iterations", range: 1...64, meaning: "a number of passes from 1 to 64") {
            config.argon2.iterations = UInt32(iterations)
        }
        if let lanes = settings.int("argon2_parallelism", range: 1...16, meaning: "a number of lanes from 1 to 16") {
            config.argon2.parallelism = UInt32(lanes)
        }
        if let threads = settings.int("hash_threads", range: 1...256, meaning: "a thread count from 1 to 256") {
            config.hashThreads = threads
        }
        if let seconds = settings.int("memory_trim_seconds", range: 0...3_600, meaning: "a number of seconds from 0 (never) to 3600") {
            config.memoryTrimSeconds = seconds
        }
        if let url = settings.url("breached_passwords_url", schemes: ["http", "https"]) {
            config.breachedPasswordsURL = url.absoluteString.hasSuffix("/") ? url.absoluteString : url.absoluteString + "/"
        }
        config.tokenAudience = settings.string("token_audience")
        var relyingParty = RelyingParty.derived(from: config.publicURL)
        if let id = settings.string("passkey_rp_id") {
            relyingParty.id = id.lowercased()
            relyingParty.webOrigins = []
        }
        if let origins = settings.list("passkey_origins") { relyingParty.webOrigins = origins.map { $0.lowercased() } }
        relyingParty.appleAppIDs = settings.list("apple_app_ids") ?? []
        // What the operator set is checked; the default follows the public URL, whatever it is.
        if ["passkey_rp_id", "passkey_origins", "apple_app_ids"].contains(where: settings.has) {
            for problem in relyingParty.problems() { settings.problem(problem.variable, problem.message) }
        }
        config.relyingParty = relyingParty
        let presetSource = settings.string("preset") ?? "default"
        config.presetSource = presetSource
        switch PresetLibrary.load(presetSource) {
        case .success(let preset): config.preset = preset
        case .failure(let error): settings.problem("preset", error.description)
        }
        if config.preset.signInMethods.phone, config.smsSender == nil, config.environment == .production {
            settings.problem("sms_hook_url", "or GATEHOUSE_TWILIO_ACCOUNT_SID must be set: the preset signs in with phone numbers")
        }

        problems += settings.problems
        problems += readTraces(environment, into: &config)
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
        return config
    }
}

/// Reads raw settings and collects problems, each naming the environment variable.
struct Settings {
    let reader: ConfigReader
    var problems: [String] = []

    init(reader: ConfigReader) { self.reader = reader }

    static func variable(_ name: String) -> String { "GATEHOUSE_" + name.uppercased() }

    mutating func problem(_ name: String, _ message: String) {
        problems.append("\(Self.variable(name)): \(message)")
    }

    func has(_ name: String) -> Bool { raw(name) != nil }

    /// The value as text, whatever type the file gave it.
    func raw(_ name: String) -> String? {
        let key = ConfigKey("gatehouse.\(name)")
        let secret = GatehouseConfig.secretKeys.contains(name)
        if let text = reader.string(forKey: key, isSecret: secret) { return text }
        if let number = reader.int(forKey: key, isSecret: secret) { return String(number) }
        if let flag = reader.bool(forKey: key, isSecret: secret) { return String(flag) }
        if let list = reader.stringArray(forKey: key, isSecret: secret) { return list.joined(separator: ",") }
        return nil
    }

    func string(_ name: String) -> String? {
        guard let value = raw(name)?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value
    }

    func list(_ name: String) -> [String]? {
        string(name).map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
    }

    /// `on`/`off` (or true/false, 1/0, yes/no).
    mutating func onOff(_ name: String) -> Bool? {
        guard let value = string(name) else { return nil }
        switch value.lowercased() {
        case "on", "true", "1", "yes": return true
        case "off", "false", "0", "no": return false
        default:
            problem(name, "'\(value)' is not on or off")
            return nil
        }
    }

    mutating func int(_ name: String, range: ClosedRange<Int>, meaning: String) -> Int? {
        guard let text = string(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            problem(name, "'\(text)' is not \(meaning)")
            return nil
        }
        return value
    }

    mutating func url(_ name: String, schemes: Set<String>) -> URL? {
        guard let text = string(name) else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme, schemes.contains(scheme), url.host?.isEmpty == false else {
            problem(name, "'\(text)' is not an absolute \(schemes.sorted().joined(separator: " or ")) URL")
            return nil
        }
        return url
    }
}
