import Foundation
import GatehouseCore
import Testing

/// `Date.rfc3339` is written by arithmetic (issue 47): it must say what Foundation's
/// `ISO8601DateFormatter` says for the same instant, to the character, from 1583 (Foundation's
/// calendar is Julian before October 1582, where RFC 3339's proleptic Gregorian dates differ;
/// no timestamp Gatehouse sends is that old).
@Suite struct RFC3339Tests {
    @Test func theArithmeticSaysWhatTheFormatterSays() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var generator = SystemRandomNumberGenerator()
        // Leap days, month and year ends, the epoch, before it, and the far years.
        var instants: [TimeInterval] = [
            0, -1, 1, 59, 60, 86_399, 86_400, -86_400, -86_401, 951_782_399, 951_782_400, 951_868_800,  // 2000-02-28/29, 03-01
            1_709_164_800, 4_107_542_399, 4_102_444_800, -2_208_988_800, -12_212_553_600, 253_402_300_799, 1_800_000_000.999, 1_800_000_000.9996, 30.9995, 30.9994, -0.5, -1.5,
        ]
        for _ in 0..<5_000 { instants.append(TimeInterval(Int64.random(in: -12_212_553_600...253_402_300_799, using: &generator))) }
        for _ in 0..<500 { instants.append(Double.random(in: -1e9...4e9, using: &generator)) }
        for instant in instants {
            let date = Date(timeIntervalSince1970: instant)
            #expect(date.rfc3339 == formatter.string(from: date), "\(instant)")
        }
        #expect(Date(timeIntervalSince1970: 1_800_000_000).rfc3339 == "2027-01-15T08:00:00Z")
    }
}
