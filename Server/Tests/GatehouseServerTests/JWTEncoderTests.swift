import Foundation
@testable import GatehouseServer
import GatehouseWire
import JWTKit
import Testing

/// The JSON of every token the server signs is written by `JWTEncoder` (`CompactJSON`), and must
/// be the bytes Foundation's `JSONEncoder` wrote with the settings the key ring gave it before
/// (issue 61 step 18): keys sorted, slashes unescaped, dates in Unix seconds. Headers and the
/// app's access tokens' claims are written by themselves (step 24), other claims through `Encoder`.
@Suite struct JWTEncoderTests {
    static let reference: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    func same(_ value: some Encodable, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let expected = try Self.reference.encode(value)
        let written = try JWTEncoder().encode(value)
        #expect(
            written == expected, "\(String(decoding: written, as: UTF8.self))\n!=\n\(String(decoding: expected, as: UTF8.self))",
            sourceLocation: sourceLocation)
    }

    /// Every claim of the app's access tokens, the provider's access tokens and its ID tokens, each
    /// set (decoded from a whole claim set), and each with only what is required.
    @Test func theSignedClaimsAreJSONEncodersBytes() throws {
        let app: [String: JSONValue] = ["tier": .string("gold/\"vip\""), "n": .number(2.5), "list": .array([.bool(true), .null])]
        var full = AccessTokenClaims(
            iss: "https://auth.example.com/", aud: "handz", sub: "6f1e0b0c-5d0a-4b8e-9a57-3c1c2f1d9e01",
            sid: "0b3a5f5e-7c1d-4e2f-8a9b-1c2d3e4f5a6b", iat: 1_764_669_600, nbf: 1_764_669_600, exp: 1_764_670_500, isAnonymous: false,
            plan: .trial, emailVerified: true, planExpiresAt: 1_765_274_400,
            amr: [AuthenticationMethodReference(method: "password", timestamp: 1_764_669_600)], aal: .aal2, phoneVerified: false)
        full.role = "authenticated"
        full.email = "ada@example.com"
        full.phone = ""
        full.appMetadata = ["provider": .string("email"), "providers": .array([.string("email"), .string("apple")])]
        full.userMetadata = ["name": .string("Ada \u{1F}\n")]
        full.sessionID = full.sid
        full.app = app
        // The app's claims write themselves (`DirectJSON`); with every claim set, a claim their
        // writer left out, or put out of order, fails the comparison.
        #expect(DirectJSONTests.unset(full).isEmpty, "\(DirectJSONTests.unset(full))")
        #expect((full as Any) is any DirectJSON)
        try same(full)
        try same(AccessTokenClaims(iss: "i", aud: "a", sub: "s", sid: "d", iat: nil, nbf: nil, exp: 0, isAnonymous: nil, plan: nil,
                                   emailVerified: nil, planExpiresAt: nil))
        try same(
            OAuthAccessTokenClaims(
                iss: "https://auth.example.com", sub: "s", aud: "https://api.example.com/", exp: 2, iat: 1, nbf: 1, jti: "j",
                clientID: "client", scope: "openid email", sid: "d", authTime: 1, acr: "aal1"))
        try same(
            IDTokenClaims(
                iss: "https://auth.example.com", sub: "s", aud: "client", exp: 2, iat: 1, authTime: 1, nonce: "n/1", amr: ["pwd", "otp"],
                acr: "aal2", atHash: "abc", sid: "d", email: "ada@example.com", emailVerified: true, name: "Ada"))
    }

    /// A token's header, and dates (none is signed today): whole, fractional, before 1970.
    @Test func headersAndDatesAreJSONEncodersBytes() throws {
        var header = JWTHeader()
        header.typ = "at+jwt"
        header.alg = "ES256"
        header.kid = "key-2026/1"
        try same(header)
        // Every kind of field a header can hold, written by itself as the encoder writes it.
        #expect((header as Any) is any DirectJSON)
        header.fields["crit"] = .array([.string("b64"), .null])
        header.fields["b64"] = .bool(false)
        header.fields["n"] = .int(-7)
        header.fields["x"] = .decimal(2.5)
        header.fields["w"] = .decimal(3)
        header.fields["jwk"] = .object(["kty": .string("EC"), "crv": .string("P-256"), "A": .null, "é": .string("\u{1F}/\"")])
        try same(header)
        struct Dated: Encodable {
            var whole = Date(timeIntervalSince1970: 1_764_669_600)
            var fraction = Date(timeIntervalSince1970: 1_764_669_600.25)
            var early = Date(timeIntervalSince1970: -86_400.5)
            var optional: Date? = Date(timeIntervalSinceReferenceDate: 0)
            var list = [Date(timeIntervalSince1970: 0)]
        }
        try same(Dated())
    }
}
