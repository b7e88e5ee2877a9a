import Crypto
import Foundation
import GatehouseCore
import GatehouseWire

/// The two short-lived values `/auth/v1` hands out that GoTrue keeps in its database, made here
/// without one: a PKCE flow's auth code (the refresh token of the session the link opened,
/// sealed with AES-GCM under a key derived from the refresh-chain key, with the client's code
/// challenge) and an MFA challenge id (the factor, the session and an expiry under HMAC). Both
/// are opaque to the client and checked in constant time; the refresh token inside an auth
/// code is single-use by the refresh rotation itself.
struct GoTrueCodes: Sendable {
    let chainKey: RefreshChainKey
    let clock: any WallClock

    /// GoTrue's flow-state and challenge lifetimes.
    static let authCodeLifetime: TimeInterval = 300
    static let challengeLifetime: TimeInterval = 300

    static let flowInvalid = GoTrueError(status: 404, .flowStateNotFound, "invalid flow state, no valid flow state found")
    static let badVerifier = GoTrueError(status: 400, .badCodeVerifier, "code challenge does not match previously saved code verifier")
    static let challengeInvalid = GoTrueError(status: 400, .mfaChallengeExpired, "The challenge has expired or is not this factor's.")

    /// GoTrue's only check of a number: E.164's shape (a `+` may lead; then 2 to 15 digits, the
    /// first not 0). Gatehouse itself checks numbers against the numbering plan (docs/phone.md).
    static func isE164Shaped(_ number: String) -> Bool {
        let digits = number.hasPrefix("+") ? number.dropFirst() : Substring(number)
        return (2...15).contains(digits.count) && digits.allSatisfy { $0.isASCII && $0.isNumber } && digits.first != "0"
    }

    /// RFC 7636: a challenge or verifier is 43–128 characters of `[A-Za-z0-9-._~]`.
    static func isPKCEValue(_ text: String) -> Bool {
        (43...128).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || [0x2D, 0x2E, 0x5F, 0x7E].contains(byte)
        }
    }

    /// GoTrue's methods, as clients send them (`s256`, `plain`; any case).
    static func method(_ text: String?) throws -> String {
        switch text?.lowercased() {
        case "s256", nil: return "s256"
        case "plain": return "plain"
        default: throw GatehouseError.invalidRequest("code_challenge_method must be s256 or plain.")
        }
    }

    private struct AuthCode: Codable {
        var refresh: String
        var challenge: String
        var method: String
        var expires: Int64
    }

    func authCode(refreshToken: String, challenge: String, method: String) throws -> String {
        let expires = clock.now.addingTimeInterval(Self.authCodeLifetime).unixSeconds
        let plain = try JSONEncoder().encode(AuthCode(refresh: refreshToken, challenge: challenge, method: method, expires: expires))
        let sealed = try AES.GCM.seal(plain, using: try chainKey.derived("gotrue-pkce-auth-code-v1"))
        guard let combined = sealed.combined else { throw GatehouseError.internalError(nil) }
        return combined.base64URLEncoded
    }

    /// The refresh token an auth code carries, once `verifier` matches its challenge.
    func refreshToken(authCode: String, verifier: String) throws -> String {
        guard let bytes = Data(base64URLEncoded: authCode), let box = try? AES.GCM.SealedBox(combined: bytes),
            let plain = try? AES.GCM.open(box, using: try chainKey.derived("gotrue-pkce-auth-code-v1")),
            let code = try? JSONDecoder().decode(AuthCode.self, from: plain), code.expires > clock.now.unixSeconds
        else { throw Self.flowInvalid }
        let expected = code.method == "plain" ? verifier : Data(SHA256.hash(data: Data(verifier.utf8))).base64URLEncoded
        guard Self.isPKCEValue(verifier), constantTimeEquals(Array(expected.utf8), Array(code.challenge.utf8)) else { throw Self.badVerifier }
        return code.refresh
    }

    func challenge(factor: UUID, session: SessionID) throws -> (id: String, expiresAt: Date) {
        let expires = clock.now.addingTimeInterval(Self.challengeLifetime)
        let body = Self.bytes(factor) + Self.bytes(session.rawValue) + withUnsafeBytes(of: expires.unixSeconds.bigEndian, Array.init)
        let mac = HMAC<SHA256>.authenticationCode(for: body, using: try chainKey.derived("gotrue-mfa-challenge-v1"))
        return ((Data(body) + Data(mac)).base64URLEncoded, expires)
    }

    func checkChallenge(_ id: String, factor: UUID, session: SessionID) throws {
        guard let bytes = Data(base64URLEncoded: id), bytes.count == 40 + 32 else { throw Self.challengeInvalid }
        let body = Array(bytes.prefix(40)), mac = Array(bytes.suffix(32))
        let expected = HMAC<SHA256>.authenticationCode(for: body, using: try chainKey.derived("gotrue-mfa-challenge-v1"))
        let expires = body[32..<40].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        guard constantTimeEquals(Array(expected), mac), Array(body[0..<16]) == Self.bytes(factor),
            Array(body[16..<32]) == Self.bytes(session.rawValue), expires > clock.now.unixSeconds
        else { throw Self.challengeInvalid }
    }

    private static func bytes(_ uuid: UUID) -> [UInt8] {
        withUnsafeBytes(of: uuid.uuid, Array.init)
    }
}
