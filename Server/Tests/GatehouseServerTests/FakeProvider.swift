import Crypto
import CryptoExtras
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import NIOCore
import Synchronization

/// A stand-in for Apple's or Google's key endpoint: RSA keys made in the test, their JWKS
/// served over plain HTTP on a loopback port, and id_tokens minted with them.
final class FakeProvider: Sendable {
    struct Key: @unchecked Sendable {
        // SAFETY: an immutable RSA private key, only read to sign.
        let kid: String
        let key: _RSA.Signing.PrivateKey
    }

    struct State {
        var published: [Key] = []
        var down = false
        var fetches = 0
        /// Form bodies posted to the token and revoke endpoints (Apple's), in order.
        var tokenRequests: [[String: String]] = []
        var revokeRequests: [[String: String]] = []
    }

    let issuer: String
    let audience: String
    private let state = Mutex(State())
    let signing: Key

    init(issuer: String, audience: String) throws {
        self.issuer = issuer
        self.audience = audience
        signing = Key(kid: "key-\(UUID().uuidString.prefix(8))", key: try Self.sharedKey.get())
        state.withLock { $0.published = [signing] }
    }

    /// One RSA key for every provider's signing key in the process (under its own `kid` each):
    /// a 2048-bit key takes about a second of CPU in a debug build, and dozens of them made the
    /// parallel suite slow enough for timing-sensitive tests to fail. Keys for rotation tests
    /// still come fresh from `newKey`.
    private static let sharedKey = Result { try _RSA.Signing.PrivateKey(keySize: .bits2048) }

    var fetches: Int { state.withLock { $0.fetches } }
    var tokenRequests: [[String: String]] { state.withLock { $0.tokenRequests } }
    var revokeRequests: [[String: String]] { state.withLock { $0.revokeRequests } }
    func setDown(_ down: Bool) { state.withLock { $0.down = down } }
    func publish(_ key: Key) { state.withLock { $0.published.append(key) } }

    func newKey(kid: String? = nil) throws -> Key {
        Key(kid: kid ?? "key-\(UUID().uuidString.prefix(8))", key: try _RSA.Signing.PrivateKey(keySize: .bits2048))
    }

    /// Runs `body` with the URL of the live key endpoint.
    func serve(_ body: @escaping @Sendable (URL) async throws -> Void) async throws {
        let router = Router()
        router.get("/keys") { _, _ -> Response in
            let (down, keys) = self.state.withLock { state -> (Bool, [Key]) in
                state.fetches += 1
                return (state.down, state.published)
            }
            if down { return Response(status: .internalServerError) }
            let jwks: [[String: String]] = try keys.map { key in
                let primitives = try key.key.publicKey.getKeyPrimitives()
                return ["kty": "RSA", "kid": key.kid, "use": "sig", "alg": "RS256",
                        "n": Self.base64URL(primitives.modulus), "e": Self.base64URL(primitives.publicExponent)]
            }
            let data = try JSONSerialization.data(withJSONObject: ["keys": jwks])
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "public, max-age=3600"],
                body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        // Apple's token and revoke endpoints.
        router.post("/auth/token") { request, _ -> Response in
            let form = Self.parseForm(String(buffer: try await request.body.collect(upTo: 65_536)))
            self.state.withLock { $0.tokenRequests.append(form) }
            let data = try JSONSerialization.data(withJSONObject: [
                "access_token": "at", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "apple-refresh-\(form["code"] ?? "")",
            ])
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        router.post("/auth/revoke") { request, _ -> HTTPResponse.Status in
            let form = Self.parseForm(String(buffer: try await request.body.collect(upTo: 65_536)))
            self.state.withLock { $0.revokeRequests.append(form) }
            return .ok
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            try await body(URL(string: "http://127.0.0.1:\(client.port!)/keys")!)
        }
    }

    /// A signed id_token with the usual claims, `extra` merged over them.
    func token(
        sub: String = "sub-1", email: String? = nil, extra: [String: Any] = [:], key: Key? = nil, alg: String = "RS256",
        now: Date = Date()
    ) throws -> String {
        var claims: [String: Any] = [
            "iss": issuer, "aud": audience, "sub": sub, "iat": Int(now.timeIntervalSince1970),
            "exp": Int(now.timeIntervalSince1970) + 600,
        ]
        if let email { claims["email"] = email }
        for (name, value) in extra { claims[name] = value }
        return try sign(claims, key: key ?? signing, alg: alg)
    }

    func sign(_ claims: [String: Any], key: Key, alg: String = "RS256") throws -> String {
        let header = try JSONSerialization.data(withJSONObject: ["alg": alg, "kid": key.kid, "typ": "JWT"])
        let payload = try JSONSerialization.data(withJSONObject: claims)
        let input = Self.base64URL(header) + "." + Self.base64URL(payload)
        switch alg {
        case "none":
            return input + "."
        case "HS256":
            let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data("secret".utf8)))
            return input + "." + Self.base64URL(Data(mac))
        default:
            let signature = try key.key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
            return input + "." + Self.base64URL(signature.rawRepresentation)
        }
    }

    static func parseForm(_ body: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func sha256Hex(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
