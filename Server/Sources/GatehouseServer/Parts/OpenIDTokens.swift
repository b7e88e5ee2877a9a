import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import JWTKit

extension OAuthAccessTokenClaims: @retroactive JWTPayload {
    /// Times are checked by `OpenIDTokens` with the injected clock.
    public func verify(using algorithm: some JWTAlgorithm) throws {}
}

extension IDTokenClaims: @retroactive JWTPayload {
    public func verify(using algorithm: some JWTAlgorithm) throws {}
}

/// The OpenID provider's tokens (issue 45), signed by the same rotating keys as the app's and
/// published in the same JWKS: access tokens as RFC 9068 JWTs (`typ: at+jwt`, `client_id`,
/// `scope`), which `GatehouseVerifier` checks offline for a resource server, and ID tokens.
struct OpenIDTokens: Sendable {
    let tokens: AccessTokens
    let settings: TokenSettings
    let clock: any WallClock

    var issuer: String { tokens.issuer }

    /// An access token for `client`: for a person's session, or (`session` nil) for the client
    /// itself (`client_credentials`).
    func accessToken(client: OAuthClient, subject: String, session: Session?, scopes: [String]) async throws -> (token: String, expiresIn: Int) {
        let now = clock.now.unixSeconds
        let claims = OAuthAccessTokenClaims(
            iss: issuer, sub: subject, aud: client.tokenAudience, exp: now + Int64(settings.accessTokenTTLSeconds), iat: now, nbf: now,
            jti: randomToken(bytes: 16), clientID: client.id, scope: scopes.joined(separator: " "), sid: session?.id.description,
            authTime: session.map { ($0.authTime ?? $0.createdAt).unixSeconds }, acr: session.map(OpenIDAuthentication.acr(of:)))
        var header = JWTHeader()
        header.typ = AccessTokens.accessTokenType
        return (try await sign(claims, header: header), settings.accessTokenTTLSeconds)
    }

    /// An ID token for the person behind `session`, for `client`: `at_hash` binds it to
    /// `accessToken`, `nonce` to the authorization request (absent on a refresh).
    func idToken(client: OAuthClient, user: User, session: Session, scopes: [String], nonce: String?, accessToken: String) async throws -> String {
        let now = clock.now.unixSeconds
        let digest = Array(SHA256.hash(data: Data(accessToken.utf8)))
        let email = scopes.contains(OAuthScope.email.rawValue)
        let claims = IDTokenClaims(
            iss: issuer, sub: user.id.description, aud: client.id, exp: now + Int64(settings.accessTokenTTLSeconds), iat: now,
            authTime: (session.authTime ?? session.createdAt).unixSeconds, nonce: nonce, amr: OpenIDAuthentication.amr(of: session),
            acr: OpenIDAuthentication.acr(of: session), atHash: Data(digest.prefix(16)).base64URLEncoded, sid: session.id.description,
            email: email ? user.email : nil, emailVerified: email ? user.emailVerified : nil,
            name: scopes.contains(OAuthScope.profile.rawValue) ? user.displayName : nil)
        var header = JWTHeader()
        header.typ = "JWT"
        return try await sign(claims, header: header)
    }

    private func sign(_ claims: some JWTPayload, header: JWTHeader) async throws -> String {
        guard let collection = tokens.keys.collection, let kid = tokens.keys.activeKID else { throw GatehouseError.internalError(nil) }
        return try await collection.sign(claims, kid: JWKIdentifier(string: kid), header: header)
    }

    /// An access token this provider issued: `typ: at+jwt`, a published key, this issuer, a
    /// `client_id`, unexpired (with the preset's leeway). Nil for anything else, the app's own
    /// tokens included.
    func verifyAccessToken(_ token: String) async -> OAuthAccessTokenClaims? {
        guard let (claims, header) = await verified(token, as: OAuthAccessTokenClaims.self), header.typ == AccessTokens.accessTokenType,
            claims.iss == issuer, !claims.clientID.isEmpty
        else { return nil }
        let now = clock.now.unixSeconds
        let leeway = Int64(settings.leewaySeconds)
        guard claims.exp + leeway > now, (claims.nbf ?? claims.iat) <= now + leeway else { return nil }
        return claims
    }

    /// An ID token this provider issued, expired or not (`id_token_hint` names a past sign-in).
    func verifyIDTokenHint(_ token: String) async -> IDTokenClaims? {
        guard let (claims, header) = await verified(token, as: IDTokenClaims.self), header.typ == "JWT", claims.iss == issuer else { return nil }
        return claims
    }

    private struct Header: Decodable {
        var alg: String
        var typ: String?
        var kid: String?
    }

    private func verified<Claims: JWTPayload>(_ token: String, as type: Claims.Type) async -> (Claims, Header)? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Data(base64URLEncoded: String(parts[0])), Data(base64URLEncoded: String(parts[1])) != nil,
            Data(base64URLEncoded: String(parts[2])) != nil, let header = try? JSONDecoder().decode(Header.self, from: headerData),
            header.alg == KeyRing.algorithm, let kid = header.kid, await tokens.keys.isPublishedReloadingIfUnknown(kid),
            let collection = tokens.keys.collection, let claims = try? await collection.verify(token, as: Claims.self)
        else { return nil }
        return (claims, header)
    }
}
