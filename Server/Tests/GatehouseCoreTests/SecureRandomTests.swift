import Foundation
import GatehouseCore
import Testing

/// Random bytes and ids drawn in one call (`SecureRandom`), and flat maps written as JSON by hand
/// (`JSONText`), held to what they replaced (issue 61 step 17).
@Suite struct SecureRandomTests {
    /// Ids are version 4, variant 1, as Foundation's `UUID()` makes them, and never repeat.
    @Test func idsAreVersionFourAndDistinct() {
        var seen = Set<UUID>()
        var ones = [Int](repeating: 0, count: 128)
        let count = 20_000
        for _ in 0..<count {
            let uuid = SecureRandom.uuid()
            let text = UUIDText.lowercase(uuid)
            #expect(Array(text)[14] == "4", "\(text)")
            #expect("89ab".contains(Array(text)[19]), "\(text)")
            #expect(seen.insert(uuid).inserted)
            withUnsafeBytes(of: uuid.uuid) { bytes in
                for bit in 0..<128 where bytes[bit / 8] & (0x80 >> (bit % 8)) != 0 { ones[bit] += 1 }
            }
        }
        // The six fixed bits are fixed, and every other bit is set about half the time (a bit stuck
        // at 0 or 1, or bytes left unfilled, would be far outside 45–55 %).
        let fixed: [Int: Bool] = [48: false, 49: true, 50: false, 51: false, 64: true, 65: false]
        for bit in 0..<128 {
            if let value = fixed[bit] {
                #expect(ones[bit] == (value ? count : 0), "bit \(bit)")
            } else {
                #expect((count * 45 / 100...count * 55 / 100).contains(ones[bit]), "bit \(bit): \(ones[bit])")
            }
        }
    }

    /// Every byte of a buffer is filled, whatever its length: each byte position takes many values.
    @Test func everyByteIsFilled() {
        for length in [0, 1, 7, 16, 32, 33, 255, 256, 257, 4_096] {
            let draws = (0..<64).map { _ in SecureRandom.bytes(length) }
            #expect(draws.allSatisfy { $0.count == length })
            for position in 0..<length {
                #expect(Set(draws.map { $0[position] }).count > 16, "length \(length), byte \(position)")
            }
        }
    }

    /// A flat map as JSON is `JSONEncoder`'s bytes with `[.sortedKeys, .withoutEscapingSlashes]`, and
    /// reads back as the same map: plain text, quotes, back- and forward slashes, every control
    /// character, non-ASCII text and keys whose byte order differs from their scalars' order.
    @Test func flatMapsAreWrittenAsJSONEncoderWritesThem() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let pieces = ["", "a", "reason", "account locked", "\"", "\\", "/", "</script>", "é", "e\u{301}", "Z", "_", "~", "\u{7f}",
                      "日本", "🙂", "\u{fffd}", "\u{2028}", "ß", "İ"] + (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }
        var generator = SystemRandomNumberGenerator()
        var maps: [[String: String]] = [[:], ["reason": "invalid credentials"], ["aal": "aal1", "door": "password", "provider": "email"]]
        for _ in 0..<2_000 {
            var map: [String: String] = [:]
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                let key = (0..<Int.random(in: 1...3, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
                map[key] = (0..<Int.random(in: 0...4, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            }
            maps.append(map)
        }
        for map in maps {
            let ours = JSONText.object(map)
            #expect(ours == String(decoding: try encoder.encode(map), as: UTF8.self))
            let read = try JSONSerialization.jsonObject(with: Data(ours.utf8)) as? [String: String]
            #expect(read == map)
        }
        #expect(JSONText.object(["b": "1", "a": "x/y", "B": "\n"]) == #"{"B":"\n","a":"x/y","b":"1"}"#)
    }
}
