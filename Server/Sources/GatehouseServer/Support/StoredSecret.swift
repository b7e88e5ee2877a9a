import Crypto
import Foundation

/// What the database keeps of a high-entropy secret the client holds (refresh tokens, emailed
/// links, Idempotency-Keys): its SHA-256, looked up by equality, never the secret itself.
/// Passwords are not such secrets: they go through `PasswordHasher`.
enum StoredSecret {
    static func hash(_ secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(secret.utf8)))
    }
}
