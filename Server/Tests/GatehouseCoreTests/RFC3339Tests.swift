import Foundation
import GatehouseCore
import Testing

/// `Date.rfc3339` is written by arithmetic (issue 47): it must say what Foundation's
/// `ISO8601DateFormatter` says for the same instant, to the character, from 1583 (Foundation's
/// calendar is Julian before October 1582, where RFC 3339's proleptic Gregorian dates differ;
/// no timestamp Gatehouse sends is that old). The civil dates it reads go through the same
/// arithmetic (`UTCCivil`).
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

    /// `UTCCivil.validDays` knows the calendar's days and no others: every month from 0 to 13
    /// and day from 0 to 32 of leap and common years (1900 and 2100 are not leap years, 1600,
    /// 2000 and 2400 are), held to the Gregorian calendar's own.
    @Test func theDaysOfTheCalendarAndNoOthers() {
        let calendar = Calendar.utcReference
        var (valid, wrong) = (0, [String]())
        for year in [1600, 1700, 1900, 1968, 1969, 1970, 1971, 2000, 2023, 2024, 2100, 2400] {
            for month in 0...13 {
                let length = (1...12).contains(month)
                    ? calendar.range(of: .day, in: .month, for: calendar.date(from: DateComponents(year: year, month: month, day: 1))!)!.count : 0
                for day in 0...32 {
                    let expected = day >= 1 && day <= length
                        ? Int64(calendar.date(from: DateComponents(year: year, month: month, day: day))!.timeIntervalSince1970 / 86_400) : nil
                    let days = UTCCivil.validDays(year: Int64(year), month: Int64(month), day: Int64(day))
                    if days != expected { wrong.append("\(year)-\(month)-\(day): \(String(describing: days)), not \(String(describing: expected))") }
                    if days != nil { valid += 1 }
                }
            }
        }
        let first = Array(wrong.prefix(3))
        #expect(first.isEmpty, "\(wrong.count) wrong")
        #expect(valid == 12 * 365 + 5)  // 1600, 1968, 2000, 2024 and 2400 are leap years.
    }

    /// An imported `timestamptz` is read through the same arithmetic in each form PostgreSQL
    /// writes it, its offset applied; a day or time the calendar does not have is refused.
    @Test func importedTimestampsAreTheInstantTheyName() {
        let may = Date(timeIntervalSince1970: 1_714_557_600)  // 2024-05-01T10:00:00Z
        for text in ["2024-05-01T10:00:00.123456+00:00", "2024-05-01 10:00:00+00", "2024-05-01T10:00:00Z", "2024-05-01 15:30:00+05:30",
                     "2024-05-01 05:00:00-05", "2024-05-01T10:00:00"] {
            #expect(SupabaseExport.timestamp(text) == may, "\(text)")
        }
        #expect(SupabaseExport.timestamp("2024-02-29 00:00:00+00") == Date(timeIntervalSince1970: 1_709_164_800))
        #expect(SupabaseExport.timestamp("1969-12-31 23:59:59+00") == Date(timeIntervalSince1970: -1))
        for text in ["2023-02-29 00:00:00+00", "2024-13-01 00:00:00+00", "2024-04-31 00:00:00+00", "2024-05-01 24:00:00+00",
                     "2024-05-01 10:60:00+00", "2024-05-01 10:00:60+00", "2024-05-01 10:00:00+0", "2024-05-01"] {
            #expect(SupabaseExport.timestamp(text) == nil, "\(text)")
        }
    }
}

extension Calendar {
    /// The Gregorian calendar in UTC: the reference `UTCCivil`'s arithmetic (dates, credit
    /// periods, usage windows) is held to.
    static let utcReference: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()
}
