import Foundation
import NIOSSL
import PostgresNIO

/// The parts of a `postgres://user:pass@host:port/db?sslmode=…` URL.
struct PostgresURL {
    var host: String
    var port: Int
    var username: String
    var password: String?
    var database: String?
    var tls: PostgresClient.Configuration.TLS
    var redacted: String

    init(_ string: String) throws(StoreError) {
        guard let components = URLComponents(string: string),
            let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql"
        else {
            throw .unavailable("not a postgres:// URL")
        }
        guard let host = components.host, !host.isEmpty else {
            throw .unavailable("the PostgreSQL URL has no host")
        }
        self.host = host
        port = components.port ?? 5432
        username = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        password = components.password.flatMap { $0.removingPercentEncoding }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? nil : path
        let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer"
        switch mode {
        case "disable": tls = .disable
        case "require", "verify-full", "verify-ca": tls = .require(.makeClientConfiguration())
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        default: throw .unavailable("unknown sslmode '\(mode)' (use disable, prefer or require)")
        }
        var masked = components
        if masked.password != nil { masked.password = "***" }
        redacted = masked.string ?? "postgres://\(host)"
    }
}
