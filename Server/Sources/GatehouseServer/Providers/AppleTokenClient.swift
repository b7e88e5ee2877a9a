import AsyncHTTPClient
import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import JWTKit
import Logging
import NIOCore

/// What Gatehouse needs to talk to Apple's token endpoints for the app: the team, the Sign in
/// with Apple key (id and PEM private key) and the client id (the app's bundle id or services id).
struct AppleCredentials: Sendable {
    var teamID: String
    var keyID: String
    var clientID: String
    var privateKeyPEM: String
    var tokenURL: URL
    var revokeURL: URL
}

/// Exchanges an app's `authorization_code` for Apple's refresh token and revokes it later (at
/// deletion or unlinking), as Apple requires of apps that offer account deletion. The client
/// secret is a short-lived ES256 JWT signed with the team's key.
struct AppleTokenClient: Sendable {
    let credentials: AppleCredentials
    let keys: JWTKeyCollection
    let client: HTTPClient
    let clock: any WallClock

    init(credentials: AppleCredentials, client: HTTPClient, clock: any WallClock) async throws {
        self.credentials = credentials
        self.client = client
        self.clock = clock
        keys = await JWTKeyCollection().add(
            ecdsa: try ES256PrivateKey(pem: credentials.privateKeyPEM), kid: JWKIdentifier(string: credentials.keyID))
    }

    struct ClientSecret: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        var aud: AudienceClaim
        var sub: SubjectClaim
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    func clientSecret() async throws -> String {
        let now = clock.now
        return try await keys.sign(
            ClientSecret(
                iss: .init(value: credentials.teamID), iat: .init(value: now), exp: .init(value: now.addingTimeInterval(300)),
                aud: .init(value: ["https://appleid.apple.com"]), sub: .init(value: credentials.clientID)),
            kid: JWKIdentifier(string: credentials.keyID))
    }

    /// Apple's refresh token for the code.
    func exchange(code: String) async throws -> String {
        let data = try await post(
            credentials.tokenURL, ["code": code, "grant_type": "authorization_code"])
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let refresh = object["refresh_token"] as? String
        else { throw ProviderError("Apple's token answer has no refresh_token") }
        return refresh
    }

    func revoke(refreshToken: String) async throws {
        _ = try await post(credentials.revokeURL, ["token": refreshToken, "token_type_hint": "refresh_token"])
    }

    private func post(_ url: URL, _ fields: [String: String]) async throws -> Data {
        var form = fields
        form["client_id"] = credentials.clientID
        form["client_secret"] = try await clientSecret()
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: Self.formEncoded(form)))
        let response = try await client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else {
            // Apple's error body names the problem (`invalid_grant`, …) and holds no secret.
            throw ProviderError("Apple answered \(response.status.code): \(String(buffer: body).prefix(200))")
        }
        return Data(buffer: body)
    }

    static func formEncoded(_ fields: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.sorted { $0.key < $1.key }.map { name, value in
            "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
    }
}

/// The background jobs around Apple's tokens.
struct AppleJobs: Sendable {
    let tokens: AppleTokenClient?
    let store: any JobStore
    let sealer: SecretSealer
    let clock: any WallClock
    let logger: Logger
    /// Apple's authorization codes work for five minutes.
    static let codeLifetime: TimeInterval = 300

    var handlers: [JobKind: JobWorker.Handler] {
        [.appleExchange: exchange, .appleRevoke: revoke]
    }

    private func client() throws -> AppleTokenClient {
        guard let tokens else { throw ProviderError("Apple token credentials are not configured") }
        return tokens
    }

    @Sendable func exchange(_ job: Job, _ payload: Data) async throws {
        let fields = try JSONDecoder().decode([String: String].self, from: payload)
        guard let userText = fields["user_id"], let user = UserID(userText), let subject = fields["subject"], let code = fields["code"] else {
            throw ProviderError("malformed apple_exchange job")
        }
        guard clock.now.timeIntervalSince(job.createdAt) < Self.codeLifetime else {
            logger.warning("an Apple authorization code expired before it could be exchanged", metadata: ["user_id": "\(user)"])
            return
        }
        let refresh = try await client().exchange(code: code)
        let sealed = try sealer.seal(Data(refresh.utf8))
        try await store.setProviderToken(userID: user, provider: .apple, subject: subject, value: sealed.bytes, encryption: sealed.encryption)
    }

    @Sendable func revoke(_ job: Job, _ payload: Data) async throws {
        let fields = try JSONDecoder().decode([String: String].self, from: payload)
        guard let token = fields["token"] else { throw ProviderError("malformed apple_revoke job") }
        try await client().revoke(refreshToken: token)
    }
}

extension JobWorker {
    /// Queues the revocation of the user's Apple token, if Gatehouse holds one (unlinking,
    /// deletion); inside the caller's transaction.
    /// True when a job was queued (Gatehouse held a token).
    @discardableResult
    func queueAppleRevocation(_ tx: any JobStore, user: UserID, traceContext: String? = nil) async throws -> Bool {
        guard let stored = try await tx.providerToken(of: user, provider: .apple) else { return false }
        let token = try sealer.open(stored.value, encryption: stored.encryption, what: "Apple's refresh token")
        try await enqueue(tx, kind: .appleRevoke, payload: ["token": String(decoding: token, as: UTF8.self)], traceContext: traceContext)
        return true
    }
}
