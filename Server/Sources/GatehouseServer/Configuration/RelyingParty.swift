import Foundation

/// Passkeys' relying party: the rp id the credentials are bound to, the origins whose answers
/// count, and the iOS apps that share the credentials (`webcredentials`).
public struct RelyingParty: Sendable, Equatable {
    /// A domain (`example.com`), never a URL.
    public var id: String
    /// Web origins (`https://example.com`, `https://app.example.com`) besides the native apps'.
    public var webOrigins: [String]
    /// `TEAMID.bundle.id`.
    public var appleAppIDs: [String]

    public init(id: String, webOrigins: [String], appleAppIDs: [String]) {
        self.id = id
        self.webOrigins = webOrigins
        self.appleAppIDs = appleAppIDs
    }

    /// What clientDataJSON's origin may be: `https://<rp id>`, which an iOS app's
    /// `ASAuthorizationPlatformPublicKeyCredentialProvider` reports, and the web origins.
    public var allowedOrigins: Set<String> {
        Set(["https://\(id)"] + webOrigins)
    }

    /// The default: the public URL's host and origin.
    static func derived(from publicURL: URL) -> RelyingParty {
        RelyingParty(id: publicURL.host?.lowercased() ?? "localhost", webOrigins: [origin(of: publicURL)].compactMap { $0 }, appleAppIDs: [])
    }

    /// `scheme://host[:port]` of an absolute URL.
    static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }

    /// What is wrong with the settings, by variable (WebAuthn §5.1.3: an origin's host is the
    /// rp id or a subdomain of it; https except on loopback hosts).
    func problems() -> [(variable: String, message: String)] {
        var problems: [(String, String)] = []
        let label = #"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"#
        if id.range(of: "^\(label)(\\.\(label))*$", options: .regularExpression) == nil {
            problems.append(("passkey_rp_id", "'\(id)' is not a domain name like example.com (no scheme, port or path)"))
        }
        for entry in webOrigins {
            guard let url = URL(string: entry), let host = url.host?.lowercased(), let scheme = url.scheme?.lowercased(),
                Self.origin(of: url) == entry.lowercased(), url.path.isEmpty || url.path == "/"
            else {
                problems.append(("passkey_origins", "'\(entry)' is not an origin like https://example.com"))
                continue
            }
            let loopback = ["localhost", "127.0.0.1", "::1"].contains(host)
            if scheme != "https", !(scheme == "http" && loopback) {
                problems.append(("passkey_origins", "'\(entry)' must be https:// (http:// only on localhost)"))
            }
            if host != id, !host.hasSuffix(".\(id)") {
                problems.append(("passkey_origins", "'\(entry)' is not on the rp id '\(id)' or a subdomain of it"))
            }
        }
        for app in appleAppIDs where app.range(of: #"^[A-Z0-9]{10}\.[A-Za-z0-9.-]+$"#, options: .regularExpression) == nil {
            problems.append(("apple_app_ids", "'\(app)' is not an app id like ABCDE12345.com.example.app"))
        }
        return problems
    }
}
