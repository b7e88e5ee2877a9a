import Foundation
import GatehouseWire

/// Which URLs are Gatehouse's own links, for `Gatehouse.handle(url:)`. Everything else is
/// another service's business: its query (an OAuth callback's `token`, say) must never reach
/// the auth server.
struct GatehouseLinks {
    enum Kind: Equatable {
        case magicLink
        case verifyEmail
        case resetPassword
    }

    /// The hosted pages the mailed links open.
    static let pages: [(path: String, kind: Kind)] = [
        (Endpoints.magicLinkPage.path.template, .magicLink), (Endpoints.verifyEmailPage.path.template, .verifyEmail),
        (Endpoints.resetPasswordPage.path.template, .resetPassword),
    ]

    let publicURL: URL
    let appLinks: [URL]

    init(configuration: ClientConfiguration, openAppURL: String?) {
        publicURL = configuration.publicURL ?? configuration.baseURL
        appLinks = configuration.appLinks + [openAppURL.flatMap(URL.init(string:))].compactMap { $0 }
    }

    /// The link's kind and token, or nil when `url` is not one of Gatehouse's links.
    func match(_ url: URL) -> (Kind, String)? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false), components.user == nil,
            components.password == nil, components.fragment == nil,
            let items = components.queryItems, items.count == 1, items[0].name == "token",
            let token = items[0].value, !token.isEmpty, token.utf8.allSatisfy(Self.isTokenByte)
        else { return nil }
        if Self.sameOrigin(url, publicURL) {
            let base = Self.trimmed(URLComponents(url: publicURL, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? "")
            if let page = Self.pages.first(where: { components.percentEncodedPath == base + $0.path }) { return (page.kind, token) }
        }
        for link in appLinks where Self.sameOrigin(url, link) {
            let expected = URLComponents(url: link, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
            if Self.trimmed(components.percentEncodedPath) == Self.trimmed(expected) { return (.magicLink, token) }
        }
        return nil
    }

    /// Scheme, host and port equal (scheme and host compared without case; a default port
    /// written out or not is the same port).
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        guard let schemeA = a.scheme?.lowercased(), let schemeB = b.scheme?.lowercased(), schemeA == schemeB,
            let hostA = a.host?.lowercased(), let hostB = b.host?.lowercased(), hostA == hostB, !hostA.isEmpty
        else { return false }
        return port(a, schemeA) == port(b, schemeB)
    }

    private static func port(_ url: URL, _ scheme: String) -> Int? {
        url.port ?? ["https": 443, "http": 80][scheme]
    }

    private static func trimmed(_ path: String) -> String {
        var path = path
        while path.hasSuffix("/") { path.removeLast() }
        return path
    }

    /// Link tokens are base64url; anything else is not one of ours.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }
}
