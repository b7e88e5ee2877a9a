import Crypto
import GatehouseCore
import GatehouseWire

/// The hashing and ES256 checks of the passkey ceremonies, on swift-crypto.
struct SwiftCryptoPasskeys: PasskeyCrypto {
    func sha256(_ bytes: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: bytes))
    }

    func isValidES256(signature: [UInt8], of message: [UInt8], by key: COSEKey) -> Bool {
        guard let publicKey = try? P256.Signing.PublicKey(x963Representation: [0x04] + key.x + key.y),
            let signature = try? P256.Signing.ECDSASignature(derRepresentation: signature)
        else { return false }
        return publicKey.isValidSignature(signature, for: message)
    }
}
