import Foundation
import GatehouseCore
import GatehouseWire

/// Makes the secrets that go out by mail and the links that carry them.
///
/// Link tokens are 256 random bits; only their SHA-256 is stored. A magic link's six-digit code
/// is made, hashed and checked by `OneTimeCodes`, bound to its link's hash.
struct EmailLinks: Sendable {
    let publicURL: URL
    let chainKey: RefreshChainKey

    /// Hosted page paths (under `GATEHOUSE_PUBLIC_URL`).
    static let verifyPath = Endpoints.verifyEmailPage.path.template
    static let resetPath = Endpoints.resetPasswordPage.path.template
    static let magicPath = Endpoints.magicLinkPage.path.template
    static let resendPath = Endpoints.resendLinkForm.path.template

    func newToken() -> (token: String, hash: [UInt8]) {
        let token = randomToken(bytes: 32)
        return (token, StoredSecret.hash(token))
    }

    /// The magic-link codes: the mail channel of the one code part.
    var codes: OneTimeCodes { OneTimeCodes(channel: .mail, chainKey: chainKey) }

    /// `<public URL><path>?token=<token>`.
    func link(_ path: String, token: String) -> URL {
        var components = URLComponents(url: publicURL, resolvingAgainstBaseURL: false)!
        var base = components.path
        while base.hasSuffix("/") { base.removeLast() }
        components.path = base + path
        components.queryItems = [URLQueryItem(name: "token", value: token)]
        return components.url!
    }
}
