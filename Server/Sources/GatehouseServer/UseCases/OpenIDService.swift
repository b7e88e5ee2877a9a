import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// An answer of the OAuth endpoints in RFC 6749's shape (`{"error", "error_description"}`),
/// not Gatehouse's own: relying parties' libraries read this one.
struct OAuthProtocolError: Error, Sendable, Equatable {
    var status: Int
    var error: String
    var description: String
    /// Seconds, for 429.
    var retryAfter: Int? = nil

    static func invalidRequest(_ text: String) -> Self { .init(status: 400, error: "invalid_request", description: text) }
    static func invalidGrant(_ text: String) -> Self { .init(status: 400, error: "invalid_grant", description: text) }
    static let invalidClient = Self(status: 401, error: "invalid_client", description: "The client could not be authenticated.")
    static func invalidToken(_ text: String) -> Self { .init(status: 401, error: "invalid_token", description: text) }
}

/// Gatehouse as an OpenID provider (issues 45 and 60), split by what it decides:
/// - `+Authorization`: what `/oauth/authorize` does next (`OAuthInteraction`'s rules) and codes;
/// - `+Exchange`: the token endpoint and client authentication;
/// - `+Resource`: userinfo, revocation, introspection;
/// - `+BrowserSessions`: the browser's sign-in at the provider, the hand-over, logout and the
///   person's connected clients.
/// Every session it opens (a client's, the hand-over's web session) is opened by
/// `SessionIssuer.carry`, inside the write, from a session a way in already opened.
struct OpenIDService: Sendable {
    typealias Stores = any UserStore & SessionStore & RefreshTokenStore & OAuthClientStore & OAuthGrantStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let tokens: OpenIDTokens
    let chains: RefreshChains
    let sessions: SessionIssuer
    let throttle: Throttle
    let preset: Preset
    let clock: any WallClock

    var issuer: String { tokens.issuer }

    func client(_ id: String?) async throws -> OAuthClient? {
        guard let id, !id.isEmpty, id.count <= 128 else { return nil }
        return try await store.oauthClient(id: id)
    }

    func live(_ session: Session, _ user: User) -> Bool {
        !user.isDisabled && session.isLive(at: clock.now, settings: preset.tokens)
    }

    /// `items` added to `uri`'s query, which is kept byte for byte (RFC 6749 §3.1.2: the
    /// registered URI's own query is the client's), each name and value percent-encoded.
    static func append(to uri: String, _ items: [(String, String?)]) -> String {
        // Unreserved characters and those a query may hold as they are (RFC 3986 §3.4); `+`,
        // `&`, `=`, `#` and `%` are encoded.
        var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        allowed.insert(charactersIn: "-._~:/?@")
        func encode(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        let added = items.compactMap { name, value in value.map { "\(encode(name))=\(encode($0))" } }
        guard !added.isEmpty else { return uri }
        let separator = !uri.contains("?") ? "?" : (uri.hasSuffix("?") || uri.hasSuffix("&") ? "" : "&")
        return uri + separator + added.joined(separator: "&")
    }
}
