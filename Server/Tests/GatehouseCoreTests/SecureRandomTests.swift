import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseTestSupport
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
        Self.expectBits(ones, of: count, in: 0..<128, fixed: [48: false, 49: true, 50: false, 51: false, 64: true, 65: false])
    }

    /// The `fixed` bits (version and variant) are fixed, and every other bit of `bits` is set
    /// about half the time in `count` ids (a bit stuck at 0 or 1, or bytes left unfilled, would be
    /// far outside 45–55 %).
    static func expectBits(_ ones: [Int], of count: Int, in bits: Range<Int>, fixed: [Int: Bool]) {
        for bit in bits {
            if let value = fixed[bit] {
                #expect(ones[bit] == (value ? count : 0), "bit \(bit)")
            } else {
                #expect((count * 45 / 100...count * 55 / 100).contains(ones[bit]), "bit \(bit): \(ones[bit])")
            }
        }
    }

    /// Time-ordered ids (version 7, RFC 9562) begin with their time's Unix milliseconds, so ids
    /// made later sort after, as bytes and as their lowercase text; the 74 other bits are random
    /// (each set about half the time) and no two ids repeat, even within one millisecond.
    @Test func timeOrderedIdsBeginWithTheirMillisecond() {
        let start = Date(timeIntervalSince1970: 1_796_400_000.123)
        var seen = Set<UUID>()
        var ones = [Int](repeating: 0, count: 128)
        let count = 20_000
        var previous: (UUID, Date)?
        for index in 0..<count {
            // Twenty ids a millisecond, then the next one.
            let time = start.addingTimeInterval(Double(index / 20) / 1000)
            let uuid = SecureRandom.timeOrderedUUID(at: time)
            #expect(TimeOrderedIDs.milliseconds(uuid) == TimeOrderedIDs.milliseconds(time), "\(UUIDText.lowercase(uuid))")
            #expect(seen.insert(uuid).inserted)
            if let (before, then) = previous, TimeOrderedIDs.milliseconds(then) < TimeOrderedIDs.milliseconds(time) {
                #expect(UUIDText.lowercase(before) < UUIDText.lowercase(uuid))
            }
            previous = (uuid, time)
            withUnsafeBytes(of: uuid.uuid) { bytes in
                for bit in 48..<128 where bytes[bit / 8] & (0x80 >> (bit % 8)) != 0 { ones[bit] += 1 }
            }
        }
        Self.expectBits(ones, of: count, in: 48..<128, fixed: [48: false, 49: true, 50: true, 51: true, 64: true, 65: false])
        // 2026-12-04T16:00:00.123Z is 0x01a241c8ac7b milliseconds after 1970.
        #expect(UUIDText.lowercase(SecureRandom.timeOrderedUUID(at: start)).hasPrefix("01a241c8-ac7b-7"))
        // Times outside what 48 bits hold are clamped, never wrapped.
        #expect(TimeOrderedIDs.milliseconds(SecureRandom.timeOrderedUUID(at: Date(timeIntervalSince1970: -5))) == 0)
        #expect(TimeOrderedIDs.milliseconds(SecureRandom.timeOrderedUUID(at: Date(timeIntervalSince1970: 3e11))) == (1 << 48) - 1)
    }

    /// Rows appended as time passes take ids that begin with their own time; accounts keep random
    /// ones (a user id never tells when the account was made: docs/accounts.md).
    @Test func appendedRowsTakeTimeOrderedIdsAndAccountsRandomOnes() {
        let at = Date(timeIntervalSince1970: 1_700_000_000.5)
        let user = UserID.random()
        let expected = UInt64(1_700_000_000_500)
        let ids: [(String, UUID)] = [
            ("audit row", AuditEvent(createdAt: at, event: .login, outcome: .success).id),
            ("event", DomainEvent(type: .userCreated, userID: user, createdAt: at).id),
            ("session", Session(userID: user, provider: .email, createdAt: at).id.rawValue),
            ("job", Job(kind: "k", payload: [], encryption: "none", createdAt: at).id),
            ("mail", OutboxMessage(createdAt: at, kind: "k", recipient: "r", subject: "s", textBody: nil, htmlBody: nil).id),
            ("SMS code", PhoneCode(phone: "+15555550100", purpose: .signIn, userID: nil, codeHash: [], createdAt: at, expiresAt: at).id),
            ("credit spend", CreditSpend(userID: user, credit: "c", action: "a", subject: nil, idempotencyKey: "k", periodStart: at, createdAt: at).id),
        ]
        for (what, id) in ids {
            #expect(TimeOrderedIDs.milliseconds(id) == expected, "\(what): \(UUIDText.lowercase(id))")
        }
        #expect(TimeOrderedIDs.milliseconds(user.rawValue) == nil)
        #expect(Array(user.description)[14] == "4")
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
