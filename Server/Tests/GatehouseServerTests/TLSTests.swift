import AsyncHTTPClient
import Crypto
import Foundation
import GatehouseServer
import GatehouseTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOSSL
import SwiftASN1
import Testing
import X509

/// HTTPS served by Gatehouse itself (`GATEHOUSE_TLS_CERT_FILE`, `GATEHOUSE_TLS_KEY_FILE`).
@Suite struct TLSTests {
    /// A self-signed certificate for 127.0.0.1 and its key, as PEM files in `directory`.
    static func certificate(in directory: URL) throws -> (certificate: String, key: String, pem: String) {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("gatehouse test") }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: now - 3600, notValidAfter: now + 86_400,
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])), .dnsName("localhost")])
            },
            issuerPrivateKey: .init(key))
        let pem = try certificate.serializeAsPEM().pemString
        let certificatePath = directory.appendingPathComponent("tls-\(UUID().uuidString).pem").path
        let keyPath = directory.appendingPathComponent("tls-\(UUID().uuidString).key").path
        try pem.write(toFile: certificatePath, atomically: true, encoding: .utf8)
        try key.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
        return (certificatePath, keyPath, pem)
    }

    @Test func servesHTTPSWithTheConfiguredCertificate() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try Self.certificate(in: directory)

        try await TestApp.run(.sqlite, setup: .ahc(.https), adjust: {
            $0.tlsCertificateFile = files.certificate
            $0.tlsKeyFile = files.key
            $0.publicURL = URL(string: "https://127.0.0.1")!
        }) { client, _ in
            let port = try #require(client.port)

            // A client that trusts only this certificate reaches the server and checks its name.
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(files.pem.utf8)))
            let https = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            do {
                let response = try await https.execute(HTTPClientRequest(url: "https://127.0.0.1:\(port)/health"), timeout: .seconds(10))
                #expect(response.status == .ok)
                // An HTTPS public URL turns HSTS on.
                #expect(response.headers.first(name: "Strict-Transport-Security")?.contains("max-age=") == true)

                // Plain HTTP on the TLS port gets no answer.
                await #expect(throws: (any Error).self) {
                    _ = try await https.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/health"), timeout: .seconds(5))
                }
            } catch {
                try await https.shutdown()
                throw error
            }
            try await https.shutdown()

            // SyncWell §6: TLS 1.2 is the floor. A client that stops at 1.1 gets no connection;
            // one pinned to exactly 1.2 gets its answer.
            for (version, accepted) in [(TLSVersion.tlsv11, false), (TLSVersion.tlsv12, true)] {
                var pinned = TLSConfiguration.makeClientConfiguration()
                pinned.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(files.pem.utf8)))
                pinned.minimumTLSVersion = .tlsv1
                pinned.maximumTLSVersion = version
                let old = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: pinned))
                // A route without the database: under the parallel suite's load `/health` may
                // answer 503 (its ping has a deadline), which says nothing about TLS.
                let status = try? await old.execute(HTTPClientRequest(url: "https://127.0.0.1:\(port)/v1/config"), timeout: .seconds(10)).status
                #expect((status == .ok) == accepted, "TLS up to \(version): \(String(describing: status))")
                try await old.shutdown()
            }
        }
    }

    @Test func aMissingHalfOrAnUnreadableFileIsAConfigurationError() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try Self.certificate(in: directory)
        let bad = directory.appendingPathComponent("garbage.pem").path
        try "not a certificate".write(toFile: bad, atomically: true, encoding: .utf8)
        let cases: [([String: String], String)] = [
            (["GATEHOUSE_TLS_CERT_FILE": files.certificate], "go together"),
            (["GATEHOUSE_TLS_CERT_FILE": bad, "GATEHOUSE_TLS_KEY_FILE": files.key], "cannot read the TLS certificate"),
        ]
        for (environment, expected) in cases {
            do throws(ConfigurationError) {
                _ = try await GatehouseConfig.load(environment: environment)
                Issue.record("accepted \(environment)")
            } catch {
                #expect(error.description.contains(expected), "\(error.description)")
            }
        }
    }
}
