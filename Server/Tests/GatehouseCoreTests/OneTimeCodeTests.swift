import Crypto
import Foundation
import GatehouseCore
import Testing

/// TOTP (RFC 6238 over RFC 4226), base32 (RFC 4648) and the QR code's structure. The tools'
/// cross-checks (pyotp, oathtool, zbar reading the QR image) are in `OneTimeCodeToolTests`.
@Suite struct OneTimeCodeTests {
    static func hmac(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }

    /// RFC 6238 appendix B's and RFC 4226 appendix D's secret.
    static let rfc = TOTP(secret: Array("12345678901234567890".utf8), hmacSHA1: hmac)

    /// RFC 4226 appendix D: HOTP values for counters 0 to 9.
    @Test func hotpValuesOfRFC4226() {
        let expected = ["755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489"]
        #expect((0..<10).map { Self.rfc.code(step: Int64($0)) } == expected)
    }

    /// RFC 6238 appendix B, SHA-1 rows: the last six of the eight digits listed there.
    @Test(arguments: [
        (59.0, "287082"), (1_111_111_109, "081804"), (1_111_111_111, "050471"), (1_234_567_890, "005924"),
        (2_000_000_000, "279037"), (20_000_000_000, "353130"),
    ])
    func totpValuesOfRFC6238(_ time: Double, _ code: String) {
        #expect(Self.rfc.code(at: Date(timeIntervalSince1970: time)) == code)
    }

    /// One step either side is accepted (and says which), two are not; only six digits count.
    @Test func theWindowIsOneStepEitherSide() {
        let now = Date(timeIntervalSince1970: 1_700_000_015)
        let step = TOTP.step(at: now)
        for offset in Int64(-1)...1 {
            #expect(Self.rfc.step(matching: Self.rfc.code(step: step + offset), at: now) == step + offset)
        }
        for offset: Int64 in [-3, -2, 2, 3] {
            #expect(Self.rfc.step(matching: Self.rfc.code(step: step + offset), at: now) == nil)
        }
        let code = Self.rfc.code(step: step)
        for typed in [String(code.dropLast()), code + "0", " " + code, "12345a", "１２３４５６"] {
            #expect(Self.rfc.step(matching: typed, at: now) == nil, "\(typed)")
        }
    }

    /// RFC 4648 §10's vectors, without padding; read back in either case, with spaces or padding.
    @Test func base32OfRFC4648() {
        let vectors = ["": "", "f": "MY", "fo": "MZXQ", "foo": "MZXW6", "foob": "MZXW6YQ", "fooba": "MZXW6YTB", "foobar": "MZXW6YTBOI"]
        for (text, encoded) in vectors {
            #expect(Base32.encode(Array(text.utf8)) == encoded)
            #expect(Base32.decode(encoded) == Array(text.utf8))
            #expect(Base32.decode(encoded.lowercased()) == Array(text.utf8))
        }
        #expect(Base32.decode("MZXW 6YQ=") == Array("foob".utf8))
        for wrong in ["MZ", "M", "MZXW1", "MZXW6Y!"] { #expect(Base32.decode(wrong) == nil, "\(wrong)") }
    }

    @Test func theKeyURINamesIssuerAndAccount() {
        let uri = TOTP.uri(secret: Array("foobar".utf8), issuer: "Hannah Health", account: "pia@example.com")
        #expect(uri == "otpauth://totp/Hannah%20Health:pia%40example.com?secret=MZXW6YTBOI&issuer=Hannah%20Health&algorithm=SHA1&digits=6&period=30")
    }

    /// The smallest version that holds the bytes at level M; past version 20, an error.
    @Test(arguments: [(0, 1), (14, 1), (15, 2), (26, 2), (27, 3), (180, 9), (181, 10), (666, 20)])
    func theSmallestVersionIsChosen(_ count: Int, _ version: Int) throws {
        let code = try QRCode(encoding: [UInt8](repeating: 0x61, count: count))
        #expect(code.version == version && code.size == 17 + 4 * version)
    }

    @Test func tooMuchIsRefused() {
        #expect(throws: QRCode.Failure.tooLong(667)) { try QRCode(encoding: [UInt8](repeating: 0x61, count: 667)) }
    }

    /// Both copies of the format information say level M and the chosen mask, with a valid BCH
    /// code; the finder patterns sit in three corners and the always-dark module is dark.
    @Test(arguments: [1, 6, 7, 12, 20])
    func theFunctionPatternsAreInPlace(_ version: Int) throws {
        let count = [1: 10, 6: 100, 7: 110, 12: 280, 20: 640][version]!
        let code = try QRCode(encoding: [UInt8](repeating: 0x41, count: count))
        #expect(code.version == version)
        let size = code.size
        var first = 0
        var second = 0
        let firstCopy = (0...5).map { ($0, 8) } + [(7, 8), (8, 8), (8, 7)] + (9..<15).map { (8, 14 - $0) }
        let secondCopy = (0..<8).map { (8, size - 1 - $0) } + (8..<15).map { (size - 15 + $0, 8) }
        for (index, position) in firstCopy.enumerated() where code[position.0, position.1] { first |= 1 << index }
        for (index, position) in secondCopy.enumerated() where code[position.0, position.1] { second |= 1 << index }
        #expect(first == second)
        let format = first ^ 0x5412
        #expect(format >> 13 == 0b00, "level M")
        #expect((format >> 10) & 0b111 == code.mask)
        var remainder = format >> 10
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        #expect(remainder == format & 0x3ff, "BCH")
        #expect(code[size - 8, 8])
        for (top, left) in [(0, 0), (0, size - 7), (size - 7, 0)] {
            let ring = (0..<7).allSatisfy { code[top, left + $0] && code[top + 6, left + $0] && code[top + $0, left] && code[top + $0, left + 6] }
            #expect(ring && code[top + 3, left + 3] && !code[top + 1, left + 1])
        }
    }
}
