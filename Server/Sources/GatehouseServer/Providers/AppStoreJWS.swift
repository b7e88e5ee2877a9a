import Crypto
import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Verifies the JWS the App Store signs (StoreKit 2 transactions, renewal information and
/// Server Notifications V2) as Apple specifies: ES256 only; an `x5c` chain of exactly three
/// certificates that builds from the leaf, through the intermediate, to one of the *pinned*
/// roots (the chain's own third certificate is never trusted); every certificate valid at the
/// payload's `signedDate`; Apple's marker extensions on the intermediate and the leaf; the
/// signature made by the leaf's key. Offline: no OCSP, no network.
struct AppStoreJWSVerifier: Sendable {
    /// Apple's marker on the leaf certificate that signs App Store JWS.
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    /// Apple's marker on the Worldwide Developer Relations intermediate.
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    let roots: [Certificate]

    /// Apple Root CA - G3, shipped in `Resources/apple`.
    static func appleRoots() throws -> [Certificate] {
        guard let url = Bundle.module.url(forResource: "AppleRootCA-G3", withExtension: "pem", subdirectory: "Resources/apple") else {
            throw ConfigurationError(problems: ["the Apple Root CA - G3 certificate is missing from the build"])
        }
        return try certificates(pem: try String(contentsOf: url, encoding: .utf8))
    }

    /// Every certificate in a PEM text.
    static func certificates(pem: String) throws -> [Certificate] {
        let documents = try PEMDocument.parseMultiple(pemString: pem)
        let certificates = try documents.map { try Certificate(pemDocument: $0) }
        guard !certificates.isEmpty else { throw ConfigurationError(problems: ["no certificate in the App Store root certificates"]) }
        return certificates
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    private struct Header: Decodable {
        var alg: String
        var x5c: [String]?
    }

    private struct Signed: Decodable {
        var signedDate: Int64?
    }

    /// The verified payload and its `signedDate`; throws `Failure` saying what was wrong.
    func verify(_ jws: String) async throws -> (payload: Data, signedDate: Date) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Data(base64URLEncoded: String(parts[0])),
            let payload = Data(base64URLEncoded: String(parts[1])), let signature = Data(base64URLEncoded: String(parts[2]))
        else { throw Failure("not a compact JWS") }
        guard let header = try? JSONDecoder().decode(Header.self, from: headerData) else { throw Failure("unreadable JWS header") }
        guard header.alg == "ES256" else { throw Failure("algorithm \(header.alg) is not ES256") }
        guard let x5c = header.x5c, x5c.count == 3 else { throw Failure("x5c must hold three certificates") }
        let chain = try x5c.map { text -> Certificate in
            guard let der = Data(base64Encoded: text), let certificate = try? Certificate(derEncoded: Array(der)) else {
                throw Failure("unreadable certificate in x5c")
            }
            return certificate
        }
        guard let decoded = try? JSONDecoder().decode(Signed.self, from: payload), let ms = decoded.signedDate else {
            throw Failure("the payload has no signedDate")
        }
        let signedDate = Date(unixMilliseconds: ms)

        // The signature, by the leaf's P-256 key over "header.payload".
        guard let key = P256.Signing.PublicKey(chain[0].publicKey),
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            key.isValidSignature(ecdsa, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { throw Failure("bad signature") }

        // The chain, to a pinned root only: the third x5c certificate is left out on purpose.
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: signedDate)
            AppleMarkerPolicy()
        }
        let result = await verifier.validate(leaf: chain[0], intermediates: CertificateStore([chain[1]]))
        guard case .validCertificate(let built) = result else {
            if case .couldNotValidate(let failures) = result, let first = failures.first {
                throw Failure("certificate chain rejected: \(first.policyFailureReason)")
            }
            throw Failure("the certificate chain does not lead to a trusted root")
        }
        guard built.count == 3, built[1] == chain[1] else { throw Failure("the certificate chain is not leaf, intermediate, root") }
        return (payload, signedDate)
    }
}

/// Apple's marker extensions: the leaf must carry 1.2.840.113635.100.6.11.1 and the
/// intermediate 1.2.840.113635.100.6.2.1, in a chain of exactly three.
struct AppleMarkerPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [
        AppStoreJWSVerifier.leafMarker, AppStoreJWSVerifier.intermediateMarker,
    ]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        let certificates = Array(chain)
        guard certificates.count == 3 else { return .failsToMeetPolicy(reason: "the chain is not three certificates long") }
        guard certificates[0].extensions[oid: AppStoreJWSVerifier.leafMarker] != nil else {
            return .failsToMeetPolicy(reason: "the leaf lacks Apple's App Store marker")
        }
        guard certificates[1].extensions[oid: AppStoreJWSVerifier.intermediateMarker] != nil else {
            return .failsToMeetPolicy(reason: "the intermediate lacks Apple's marker")
        }
        return .meetsPolicy
    }
}
