// The authenticator app of the tour: GatehouseCore's TOTP (RFC 6238, as the server checks it)
// with an HMAC-SHA-1 written here, since Foundation has none on Linux and the consumer depends on
// nothing but the repository's own products.
import GatehouseCore

enum Authenticator {
    /// The app a person scans the QR code into: `secret` is the enrollment's base32 secret.
    static func app(secret: String) throws -> TOTP {
        TOTP(secret: try Base32.decode(secret).orThrow("the factor's base32 secret"), hmacSHA1: hmacSHA1)
    }

    /// RFC 6238's first SHA-1 vector (the secret `12345678901234567890`, 59 s after the epoch:
    /// `94287082`, whose last six digits an app shows).
    static var passesRFC6238: Bool {
        TOTP(secret: Array("12345678901234567890".utf8), hmacSHA1: hmacSHA1).code(step: 1) == "287082"
    }

    /// HMAC-SHA-1 (RFC 2104).
    @Sendable static func hmacSHA1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? sha1(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        return sha1(block.map { $0 ^ 0x5c } + sha1(block.map { $0 ^ 0x36 } + message))
    }

    /// SHA-1 (RFC 3174).
    static func sha1(_ message: [UInt8]) -> [UInt8] {
        var state: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        var data = message + [0x80]
        while data.count % 64 != 56 { data.append(0) }
        let bits = UInt64(message.count) * 8
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        for chunk in stride(from: 0, to: data.count, by: 64) {
            var words = [UInt32](repeating: 0, count: 80)
            for index in 0..<16 {
                let at = chunk + index * 4
                words[index] = UInt32(data[at]) << 24 | UInt32(data[at + 1]) << 16 | UInt32(data[at + 2]) << 8 | UInt32(data[at + 3])
            }
            for index in 16..<80 { words[index] = rotate(words[index - 3] ^ words[index - 8] ^ words[index - 14] ^ words[index - 16], 1) }
            var (a, b, c, d, e) = (state[0], state[1], state[2], state[3], state[4])
            for index in 0..<80 {
                let (f, k): (UInt32, UInt32) =
                    switch index {
                    case 0..<20: ((b & c) | (~b & d), 0x5A82_7999)
                    case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
                    case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                    default: (b ^ c ^ d, 0xCA62_C1D6)
                    }
                let next = rotate(a, 5) &+ f &+ e &+ k &+ words[index]
                (e, d, c, b, a) = (d, c, rotate(b, 30), a, next)
            }
            state[0] &+= a
            state[1] &+= b
            state[2] &+= c
            state[3] &+= d
            state[4] &+= e
        }
        return state.flatMap { word in [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: word >> UInt32($0)) } }
    }

    private static func rotate(_ word: UInt32, _ count: UInt32) -> UInt32 { word << count | word >> (32 - count) }
}
