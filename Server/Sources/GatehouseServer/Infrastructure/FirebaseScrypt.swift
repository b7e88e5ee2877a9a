import Crypto
import CryptoExtras
import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import Synchronization

/// Firebase Auth's modified scrypt, for accounts imported from Firebase: scrypt (N = 2^memory
/// cost, r = rounds, p = 1) of the password over the user's salt and the project's salt
/// separator, whose first 32 bytes are the AES-256-CTR key (zero counter) that encrypts the
/// project's signer key; the result is the stored hash.
///
/// A stored hash is `$firebase-scrypt$<key id>$<salt>$<hash>` (base64): the project's
/// parameters are not in it but in `server_secrets` under `firebase-scrypt:<key id>`, sealed
/// like the signing keys, so that a copy of the users table alone cannot be attacked.
enum FirebaseScrypt {
    static let prefix = "$firebase-scrypt$"

    static func encode(keyID: String, salt: [UInt8], hash: [UInt8]) -> String {
        "\(prefix)\(keyID)$\(Data(salt).base64EncodedString())$\(Data(hash).base64EncodedString())"
    }

    static func decode(_ text: String) -> (keyID: String, salt: [UInt8], hash: [UInt8])? {
        guard text.hasPrefix(prefix) else { return nil }
        let fields = text.dropFirst(prefix.count).split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 3, !fields[0].isEmpty, let salt = Data(base64Encoded: String(fields[1])),
            let hash = Data(base64Encoded: String(fields[2])), !hash.isEmpty
        else { return nil }
        return (String(fields[0]), Array(salt), Array(hash))
    }

    /// The hash Firebase would store for `password` with `salt` (CPU- and memory-heavy: call
    /// it on the hasher's threads).
    static func hash(_ password: [UInt8], salt: [UInt8], parameters: FirebaseHashParameters) throws -> [UInt8] {
        let derived = try KDF.Scrypt.deriveKey(
            from: password, salt: salt + parameters.saltSeparator, outputByteCount: 64, rounds: 1 << parameters.memoryCost,
            blockSize: parameters.rounds, parallelism: 1)
        let key = derived.withUnsafeBytes { SymmetricKey(data: Data($0.prefix(32))) }
        return Array(try AES._CTR.encrypt(parameters.signerKey, using: key, nonce: AES._CTR.Nonce(nonceBytes: [UInt8](repeating: 0, count: 16))))
    }

    /// Names a project's parameters without revealing them: 16 hex digits of SHA-256 over them.
    static func keyID(_ parameters: FirebaseHashParameters) -> String {
        var material = Array("firebase-scrypt-v1".utf8)
        material += [UInt8(parameters.rounds), UInt8(parameters.memoryCost), UInt8(truncatingIfNeeded: parameters.saltSeparator.count)]
        material += parameters.saltSeparator + parameters.signerKey
        return SHA256.hash(data: material).prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}

/// The Firebase projects' hash parameters this server holds, read from `server_secrets` once
/// and kept (they never change under a key id).
final class FirebaseHashKeys: Sendable {
    private let store: any SecretStore
    private let sealer: SecretSealer
    private let cache = Mutex<[String: FirebaseHashParameters]>([:])

    init(store: any SecretStore, sealer: SecretSealer) {
        self.store = store
        self.sealer = sealer
    }

    private struct Stored: Codable {
        var signerKey: String
        var saltSeparator: String
        var rounds: Int
        var memoryCost: Int
    }

    static func secretName(_ keyID: String) -> String { "firebase-scrypt:\(keyID)" }

    /// The parameters stored under `keyID`; nil when this server has none by that id.
    func parameters(keyID: String) async throws -> FirebaseHashParameters? {
        if let known = cache.withLock({ $0[keyID] }) { return known }
        guard let stored = try await store.secret(named: Self.secretName(keyID)) else { return nil }
        let plain = try sealer.open(stored.value, encryption: stored.encryption, what: "the Firebase hash parameters \(keyID)")
        let decoded = try JSONDecoder().decode(Stored.self, from: plain)
        guard let signer = Data(base64Encoded: decoded.signerKey), let separator = Data(base64Encoded: decoded.saltSeparator) else {
            throw KeyRingError("the Firebase hash parameters \(keyID) are damaged")
        }
        let parameters = FirebaseHashParameters(
            signerKey: Array(signer), saltSeparator: Array(separator), rounds: decoded.rounds, memoryCost: decoded.memoryCost)
        cache.withLock { $0[keyID] = parameters }
        return parameters
    }

    /// Stores `parameters` (once: a second import of the same project finds them) and answers their key id.
    func remember(_ parameters: FirebaseHashParameters, at date: Date) async throws -> String {
        let keyID = FirebaseScrypt.keyID(parameters)
        if try await self.parameters(keyID: keyID) != nil { return keyID }
        let plain = try JSONEncoder().encode(
            Stored(
                signerKey: Data(parameters.signerKey).base64EncodedString(), saltSeparator: Data(parameters.saltSeparator).base64EncodedString(),
                rounds: parameters.rounds, memoryCost: parameters.memoryCost))
        let sealed = try sealer.seal(plain)
        do {
            try await store.insertSecret(named: Self.secretName(keyID), value: sealed.bytes, encryption: sealed.encryption, at: date)
        } catch {
            // Another import of the same project stored them first: the same parameters.
            guard case .uniqueViolation = error else { throw error }
        }
        cache.withLock { $0[keyID] = parameters }
        return keyID
    }
}
