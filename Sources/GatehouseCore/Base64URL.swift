import Foundation
import GatehouseWire

extension Data {
    /// Base64url without padding (RFC 4648 §5), as JOSE uses it.
    public var base64URLEncoded: String {
        // Byte by byte: `replacingOccurrences` goes through NSString on Linux and was 8 % of a
        // passkey sign-in's CPU time (BENCHMARKS.md).
        var bytes = [UInt8](base64EncodedData())
        while bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "+"): bytes[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): bytes[index] = UInt8(ascii: "_")
            default: break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Decodes base64url in its one exact form (RFC 7515 §2, "base64url" without padding):
    /// only `A–Z a–z 0–9 - _`, no `=`, no white space, and no stray bits in the last character.
    /// Anything else is nil, so a token can be spelled only one way (finding 12: a signature
    /// with `=` appended was accepted).
    public init?(base64URLEncoded text: String) {
        var bytes = [UInt8](text.utf8)
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "-"): bytes[index] = UInt8(ascii: "+")
            case UInt8(ascii: "_"): bytes[index] = UInt8(ascii: "/")
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): return nil  // base64's, not base64url's
            default: break
            }
        }
        while bytes.count % 4 != 0 { bytes.append(UInt8(ascii: "=")) }
        // Whatever decodes but does not encode back to the same text (white space, stray bits in
        // the last character) is not the exact form.
        guard let decoded = Data(base64Encoded: Data(bytes)), decoded.base64URLEncoded == text else { return nil }
        self = decoded
    }
}
