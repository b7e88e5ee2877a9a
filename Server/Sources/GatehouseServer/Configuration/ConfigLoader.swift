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
        "host", "port", "database_url", "database_pool_size", "database_pool_minimum", "database_prepared_statements",
        "keep_migration_backup", "preset", "public_url", "environment", "smtp_url", "admin_key",
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

        // One reader per section, each beside what it configures; every problem is collected.
        readServer(&settings, into: &config)
        readDatabase(&settings, into: &config)
        readMail(&settings, into: &config)
        readKeys(&settings, into: &config)
        readProviders(&settings, into: &config)
        readPasskeys(&settings, into: &config)
        readHashing(&settings, into: &config)
        readOutbound(&settings, into: &config)
        config.smsSender = smsSender(&settings)
        config.stripe = stripe(&settings)
        config.googlePlay = googlePlay(&settings)
        config.hooks = hooks(&settings)
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
