import Crypto
import Foundation
import GatehouseCore
import GatehouseWire

/// Makes the secrets that go out by mail and the links that carry them.
///
/// Link tokens are 256 random bits; only their SHA-256 is stored. Magic-link codes are six
/// random digits stored as an HMAC under a server key (derived from the refresh-chain key), so
/// a copy of the database does not give the codes away.
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

    func newCode() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(format: "%06d", Int(UInt32.random(in: 0..<1_000_000, using: &generator)))
    }

    /// The keyed hash of a code, bound to its link so one code's hash says nothing of another's.
    func codeHash(_ code: String, tokenHash: [UInt8]) throws -> [UInt8] {
        var message = Data(tokenHash)
        message.append(contentsOf: Array(code.utf8))
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: try chainKey.derived("gatehouse magic-link code")))
    }

    func codeMatches(_ code: String, token: EmailToken) throws -> Bool {
        guard let stored = token.codeHash, code.utf8.count == 6, code.utf8.allSatisfy({ (48...57).contains($0) }) else {
            return false
        }
        return constantTimeEquals(try codeHash(code, tokenHash: token.hash), stored)
    }

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
