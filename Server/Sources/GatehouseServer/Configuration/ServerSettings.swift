import Foundation
import GatehouseCore
import Logging

// The server section of the configuration: where it listens, what it answers as, its HTTP
// limits and its logs and metrics.
extension GatehouseConfig {
    /// The address, public URL and environment, logs and metrics, TLS, the HTTP limits, the proxies
    /// trusted for client addresses and the redirect allowlist.
    static func readServer(_ settings: inout Settings, into config: inout GatehouseConfig) {
        if let host = settings.string("host") { config.host = host }
        if let port = settings.int("port", range: 0...65_535, meaning: "a port number from 1 to 65535 (or 0 for any free port)") {
            config.port = port
        }
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
        config.tlsCertificateFile = settings.string("tls_cert_file")
        config.tlsKeyFile = settings.string("tls_key_file")
        if (config.tlsCertificateFile == nil) != (config.tlsKeyFile == nil) {
            settings.problem("tls_cert_file", "GATEHOUSE_TLS_CERT_FILE and GATEHOUSE_TLS_KEY_FILE go together")
        } else if config.tlsCertificateFile != nil, let problem = config.tlsProblem {
            settings.problem("tls_cert_file", problem)
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
        if let bytes = settings.int("max_body_bytes", range: 1_024...(64 << 20), meaning: "a size in bytes from 1024 to 67108864") {
            config.maxBodyBytes = bytes
        }
        if let seconds = settings.int("http_idle_timeout_seconds", range: 1...3_600, meaning: "a number of seconds from 1 to 3600") {
            config.httpIdleTimeoutSeconds = seconds
        }
        if let seconds = settings.int("http_body_timeout_seconds", range: 1...600, meaning: "a number of seconds from 1 to 600") {
            config.httpBodyTimeoutSeconds = seconds
        }
        if let milliseconds = settings.int("console_scan_milliseconds", range: 0...10_000, meaning: "a number of milliseconds from 0 to 10000") {
            config.consoleScanMilliseconds = milliseconds
        }
        if let count = settings.int("max_connections", range: 16...1_000_000, meaning: "a number of connections from 16 to 1000000") {
            config.maxConnections = count
        }
        if let count = settings.int("max_connections_per_ip", range: 1...1_000_000, meaning: "a number of connections from 1 to 1000000") {
            config.maxConnectionsPerAddress = count
        }
    }
}
