import Crypto
import Foundation
import GatehouseCore
import GatehouseWire

/// The admin console's session cookie and CSRF tokens, signed with a key derived from the admin
/// key; the session also has a row (`console_sessions`, by its nonce's hash) that sign-out
/// deletes. A session is `<expiry>.<nonce>.<mac>`; a form's CSRF token is a MAC
/// of the session's nonce, so it is good for that session only. The sign-in form, before any
/// session, pairs a random cookie with a MAC of it.
struct ConsoleCookies: Sendable {
    let key: SymmetricKey
    /// Seconds a console session lasts from its sign-in; it is not extended by use.
    let lifetime: Int
    /// Over HTTPS: the `__Host-` names (Secure, Path=/, no Domain, enforced by browsers).
    let https: Bool

    var sessionName: String { https ? "__Host-gatehouse_admin" : "gatehouse_admin" }
    var preSessionName: String { https ? "__Host-gatehouse_admin_pre" : "gatehouse_admin_pre" }
    private var path: String { https ? "/" : "/admin" }

    struct Session: Sendable {
        /// What the session's CSRF token is a MAC of; its SHA-256 is the session's row
        /// (`console_sessions`), which must exist for the session to count.
        var nonce: String
        var expiresAt: Date

        var hash: [UInt8] { StoredSecret.hash(nonce) }
    }

    /// A new session and its cookie's `Set-Cookie` value.
    func newSession(now: Date) -> (session: Session, header: String) {
        let expires = now.unixSeconds + Int64(lifetime)
        let nonce = randomToken(bytes: 24)
        let signed = "\(expires).\(nonce)"
        return (Session(nonce: nonce, expiresAt: Date(unixSeconds: expires)), setCookie(sessionName, "\(signed).\(mac("session", signed))", maxAge: lifetime))
    }

    /// The session the request's cookie carries, when its MAC holds and it has not expired (the
    /// caller then asks the store whether it was signed out).
    func session(_ value: String?, now: Date) -> Session? {
        guard let value else { return nil }
        let parts = value.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let expires = Int64(parts[0]), PagesController.isToken(parts[1]),
            constantTimeEquals(Array(parts[2].utf8), Array(mac("session", "\(parts[0]).\(parts[1])").utf8)),
            now.unixSeconds < expires
        else { return nil }
        return Session(nonce: parts[1], expiresAt: Date(unixSeconds: expires))
    }

    func csrf(for session: Session) -> String { mac("csrf", session.nonce) }

    func checkCSRF(_ submitted: String?, session: Session) -> Bool {
        constantTimeEquals(Array((submitted ?? "").utf8), Array(csrf(for: session).utf8))
    }

    /// The sign-in form's pair: the cookie value and the token the form carries.
    func newSignInPair() -> (cookie: String, token: String, header: String) {
        let nonce = randomToken(bytes: 24)
        return (nonce, mac("sign-in", nonce), setCookie(preSessionName, nonce, maxAge: 3600))
    }

    func checkSignIn(cookie: String?, token: String?) -> Bool {
        guard let cookie, PagesController.isToken(cookie) else { return false }
        return constantTimeEquals(Array((token ?? "").utf8), Array(mac("sign-in", cookie).utf8))
    }

    /// Clears the cookie in this browser; the session's row is deleted too, so a copy of the
    /// cookie is refused everywhere.
    var clearSession: String { setCookie(sessionName, "", maxAge: 0) }

    private func setCookie(_ name: String, _ value: String, maxAge: Int) -> String {
        "\(name)=\(value); Path=\(path); Max-Age=\(maxAge); HttpOnly; Secure; SameSite=Strict"
    }

    private func mac(_ purpose: String, _ value: String) -> String {
        Data(HMAC<SHA256>.authenticationCode(for: Data("\(purpose)|\(value)".utf8), using: key)).base64URLEncoded
    }
}
