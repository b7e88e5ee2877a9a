import Crypto
import Foundation

/// Seals secrets kept in the database (signing keys, the refresh-chain key) with AES-256-GCM
/// under a key derived from `GATEHOUSE_SECRET_KEY`; without one they are stored as they are.
public struct SecretSealer: Sendable {
    static let algorithm = "aes-256-gcm"
    private let key: SymmetricKey?

    public init(secret: String?) {
        key = secret.map {
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: Data($0.utf8)), salt: Data("gatehouse".utf8),
                info: Data("signing-key-encryption-v1".utf8), outputByteCount: 32)
        }
    }

    /// Whether new material is sealed.
    public var seals: Bool { key != nil }

    /// The stored form of `plain` and the name of its encryption.
    func seal(_ plain: some DataProtocol) throws -> (bytes: [UInt8], encryption: String) {
        guard let key else { return (Array(plain), "none") }
        return (Array(try AES.GCM.seal(plain, using: key).combined ?? Data()), Self.algorithm)
    }

    /// The plain material of a stored secret; `what` names it in errors.
    func open(_ bytes: [UInt8], encryption: String, what: String) throws -> Data {
        switch encryption {
        case "none":
            return Data(bytes)
        case Self.algorithm:
            guard let key else {
                throw KeyRingError("\(what) is encrypted: set GATEHOUSE_SECRET_KEY to the secret it was encrypted with")
            }
            do {
                return try AES.GCM.open(AES.GCM.SealedBox(combined: bytes), using: key)
            } catch {
                throw KeyRingError("\(what) cannot be decrypted: GATEHOUSE_SECRET_KEY is not the secret it was encrypted with")
            }
        default:
            throw KeyRingError("\(what) uses unknown encryption '\(encryption)'")
        }
    }
}
