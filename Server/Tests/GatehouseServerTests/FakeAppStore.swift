import Crypto
import Foundation
import SwiftASN1
import X509

/// Stands in for Apple's signing: its own root, a WWDR-like intermediate and a leaf carrying
/// Apple's marker extensions, and real ES256 JWS signed by the leaf, as the App Store signs
/// transactions, renewal information and notifications.
struct FakeAppStore: Sendable {
    struct Options: Sendable {
        var leafMarker = true
        var intermediateMarker = true
        /// The leaf's validity, relative to now.
        var leafValidity: ClosedRange<TimeInterval> = -86_400 * 30...86_400 * 365
    }

    let rootKey: P384.Signing.PrivateKey
    let intermediateKey = P256.Signing.PrivateKey()
    let leafKey = P256.Signing.PrivateKey()
    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate

    static let bundleID = "com.example.gatehouse-tests"

    /// `sharingRootOf`: a new intermediate and leaf under another store's root (to vary them
    /// alone while the chain still reaches a trusted root).
    init(_ options: Options = Options(), sharingRootOf other: FakeAppStore? = nil, now: Date = Date()) throws {
        let rootName = try DistinguishedName { CommonName("Test Root CA - G3"); OrganizationName("Gatehouse Tests") }
        let intermediateName = try DistinguishedName { CommonName("Test Worldwide Developer Relations"); OrganizationName("Gatehouse Tests") }
        let leafName = try DistinguishedName { CommonName("Test StoreKit Signing"); OrganizationName("Gatehouse Tests") }
        let marker: ArraySlice<UInt8> = [0x05, 0x00]  // ASN.1 NULL, as Apple's markers carry.
        if let other {
            rootKey = other.rootKey
            root = other.root
        } else {
            rootKey = P384.Signing.PrivateKey()
            root = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: now - 86_400 * 3650,
                notValidAfter: now + 86_400 * 3650, issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA384,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                },
                issuerPrivateKey: .init(rootKey))
        }
        var intermediateExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
        }
        if options.intermediateMarker {
            try intermediateExtensions.append(Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 2, 1], critical: false, value: marker))
        }
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey), notValidBefore: now - 86_400 * 3650,
            notValidAfter: now + 86_400 * 3650, issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA384,
            extensions: intermediateExtensions, issuerPrivateKey: .init(rootKey))
        var leafExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
        }
        if options.leafMarker {
            try leafExtensions.append(Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 11, 1], critical: false, value: marker))
        }
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: now + options.leafValidity.lowerBound, notValidAfter: now + options.leafValidity.upperBound,
            issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256, extensions: leafExtensions,
            issuerPrivateKey: .init(intermediateKey))
    }

    /// The root as the server's `GATEHOUSE_APPSTORE_ROOT_CERTS` file holds it.
    func rootPEM() throws -> String { try root.serializeAsPEM().pemString }

    /// Writes the root to a PEM file in `directory` and returns its path.
    func writeRoot(in directory: URL) throws -> String {
        let url = directory.appendingPathComponent("appstore-root-\(UUID().uuidString).pem")
        try rootPEM().write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    /// A compact JWS of `payload` with `x5c` = leaf, intermediate, root (or `chain`).
    func sign(_ payload: [String: Any], alg: String = "ES256", chain: [Certificate]? = nil) throws -> String {
        let certificates = try (chain ?? [leaf, intermediate, root]).map { certificate -> String in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return Data(serializer.serializedBytes).base64EncodedString()
        }
        let header = try JSONSerialization.data(withJSONObject: ["alg": alg, "x5c": certificates], options: [.sortedKeys])
        let body = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        let input = "\(Self.base64URL(header)).\(Self.base64URL(body))"
        let signature = try leafKey.signature(for: Data(input.utf8)).rawRepresentation
        return "\(input).\(Self.base64URL(signature))"
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }

    /// A StoreKit 2 transaction payload.
    static func transaction(
        id: String, original: String, product: String, user: String?, purchased: Date, expires: Date, signed: Date,
        offerType: Int? = nil, environment: String = "Production", bundleID: String = bundleID, revoked: Date? = nil
    ) -> [String: Any] {
        var payload: [String: Any] = [
            "transactionId": id, "originalTransactionId": original, "bundleId": bundleID, "productId": product,
            "purchaseDate": ms(purchased), "originalPurchaseDate": ms(purchased), "expiresDate": ms(expires), "signedDate": ms(signed),
            "environment": environment, "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "quantity": 1,
            "storefront": "USA", "price": 9990, "currency": "USD",
        ]
        if let user { payload["appAccountToken"] = user }
        if let offerType { payload["offerType"] = offerType }
        if let revoked {
            payload["revocationDate"] = ms(revoked)
            payload["revocationReason"] = 0
        }
        return payload
    }

    /// A renewal-information payload.
    static func renewal(original: String, product: String, willRenew: Bool, signed: Date, graceEnds: Date? = nil) -> [String: Any] {
        var payload: [String: Any] = [
            "originalTransactionId": original, "productId": product, "autoRenewProductId": product, "autoRenewStatus": willRenew ? 1 : 0,
            "signedDate": ms(signed), "environment": "Production",
        ]
        if let graceEnds {
            payload["gracePeriodExpiresDate"] = ms(graceEnds)
            payload["isInBillingRetryPeriod"] = true
        }
        return payload
    }

    /// A signed Server Notification V2 with signed transaction and renewal information.
    func notification(
        type: String, subtype: String? = nil, uuid: String = UUID().uuidString, signed: Date, transaction: [String: Any],
        renewal: [String: Any]?, status: Int? = nil
    ) throws -> String {
        var data: [String: Any] = [
            "bundleId": Self.bundleID, "environment": "Production", "appAppleId": 1_234_567_890,
            "signedTransactionInfo": try sign(transaction),
        ]
        if let renewal { data["signedRenewalInfo"] = try sign(renewal) }
        if let status { data["status"] = status }
        var payload: [String: Any] = [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": Self.ms(signed), "data": data,
        ]
        if let subtype { payload["subtype"] = subtype }
        return try sign(payload)
    }
}
