import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore

/// Asks a k-anonymity range API (the Pwned Passwords protocol) whether a password appears in
/// known breaches. Only the first five hex digits of its SHA-1 leave the server; the answer
/// lists the suffixes that share them.
public struct BreachedPasswordChecker: Sendable {
    let client: HTTPClient
    /// The range endpoint; the five-digit prefix is appended.
    let baseURL: String
    let logger: Logger

    /// `true` or `false`, or `nil` when the service could not be asked (sign-up then goes on,
    /// and the skip is logged).
    func isBreached(_ password: String) async -> Bool? {
        let digest = Insecure.SHA1.hash(data: Data(password.utf8)).map { String(format: "%02X", $0) }.joined()
        let prefix = String(digest.prefix(5))
        let suffix = digest.dropFirst(5)
        var request = HTTPClientRequest(url: baseURL + prefix)
        request.headers.add(name: "Add-Padding", value: "true")
        request.headers.add(name: "User-Agent", value: "Gatehouse")
        do {
            let response = try await client.execute(request, timeout: .seconds(3))
            guard response.status == .ok else {
                logger.warning("breached-password check skipped", metadata: ["reason": "status \(response.status.code)"])
                return nil
            }
            let body = try await response.body.collect(upTo: 4 << 20)
            for line in String(buffer: body).split(whereSeparator: \.isNewline) {
                let parts = line.split(separator: ":")
                guard parts.count == 2, parts[0].uppercased() == suffix else { continue }
                // Padding entries have a count of zero.
                return (Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0) > 0
            }
            return false
        } catch {
            logger.warning("breached-password check skipped", metadata: ["reason": "\(error)"])
            return nil
        }
    }
}
