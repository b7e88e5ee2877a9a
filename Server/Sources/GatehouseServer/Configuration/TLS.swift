import Foundation
import NIOSSL

extension GatehouseConfig {
    /// The server's TLS settings when a certificate and key are configured: TLS 1.2 or newer,
    /// NIOSSL's default cipher suites.
    func tlsConfiguration() throws -> TLSConfiguration? {
        guard let tlsCertificateFile, let tlsKeyFile else { return nil }
        let chain = try NIOSSLCertificate.fromPEMFile(tlsCertificateFile)
        guard !chain.isEmpty else { throw ConfigurationError(problems: ["no certificate in \(tlsCertificateFile)"]) }
        let key = try NIOSSLPrivateKey(file: tlsKeyFile, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }

    /// Why the configured certificate or key cannot be used, if it cannot.
    var tlsProblem: String? {
        do {
            _ = try tlsConfiguration()
            return nil
        } catch {
            return "cannot read the TLS certificate and key (PEM): \(error)"
        }
    }
}
