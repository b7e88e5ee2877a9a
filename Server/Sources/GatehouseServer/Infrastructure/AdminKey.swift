import Crypto
import Foundation
import GatehouseCore
import GatehouseWire

/// The operator's key for `/admin/v1`. From `GATEHOUSE_ADMIN_KEY`, or generated once into a
/// file readable only by its owner; only its hash is kept in memory and comparisons take
/// the same time whatever the input.
public struct AdminKey: Sendable {
    private let digest: [UInt8]
    /// Where a generated key was written; `nil` when it came from the environment.
    public let file: String?
    /// True when this start wrote the file.
    public let generated: Bool

    init(key: String, file: String?, generated: Bool) {
        digest = Array(SHA256.hash(data: Data(key.utf8)))
        self.file = file
        self.generated = generated
    }

    /// Uses `configured` when set; otherwise reads `path`, creating it with a new random key
    /// (mode 0600) when missing.
    public static func load(configured: String?, path: String) throws -> AdminKey {
        if let configured { return AdminKey(key: configured, file: nil, generated: false) }
        let url = URL(fileURLWithPath: path)
        if let existing = try? String(contentsOf: url, encoding: .utf8) {
            let key = existing.trimmingCharacters(in: .whitespacesAndNewlines)
            guard key.count >= 24 else {
                throw KeyRingError("the admin key file \(url.path) does not hold a key of at least 24 characters")
            }
            return AdminKey(key: key, file: url.path, generated: false)
        }
        let key = "gh_admin_" + randomToken(bytes: 32)
        let created = FileManager.default.createFile(
            atPath: url.path, contents: Data((key + "\n").utf8), attributes: [.posixPermissions: 0o600])
        guard created else { throw KeyRingError("cannot write the admin key file \(url.path)") }
        return AdminKey(key: key, file: url.path, generated: true)
    }

    /// Constant-time comparison of the presented key's hash with the real one.
    public func matches(_ presented: String) -> Bool {
        constantTimeEquals(digest, StoredSecret.hash(presented))
    }

    /// The key the admin console signs its session cookies and CSRF tokens with: derived from
    /// the admin key, so a new admin key ends every console session.
    var consoleKey: SymmetricKey {
        SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Data("gatehouse admin console v1".utf8), using: SymmetricKey(data: digest)))
    }
}

/// `bytes` random bytes from the system CSPRNG, base64url-encoded.
func randomToken(bytes count: Int) -> String {
    Data(randomBytes(count)).base64URLEncoded
}

/// `count` random bytes from the system CSPRNG, drawn in one call (`SecureRandom`).
func randomBytes(_ count: Int) -> [UInt8] {
    SecureRandom.bytes(count)
}
