import Foundation
import GatehouseWire
import Synchronization

/// The source of "now" for every decision that depends on time. Injected everywhere so that
/// tests can move time instead of sleeping.
public protocol WallClock: Sendable {
    var now: Date { get }
}

/// The real clock.
public struct SystemClock: WallClock {
    public init() {}
    public var now: Date { Date() }
}

/// A clock that only moves when told to; for tests and simulations.
public final class ManualClock: WallClock {
    private let current: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Mutex(start)
    }

    public var now: Date { current.withLock { $0 } }

    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}

extension Date {
    /// Whole Unix seconds, as stored in the database and sent in tokens.
    public var unixSeconds: Int64 { Int64(timeIntervalSince1970.rounded(.down)) }

    public init(unixSeconds: Int64) {
        self.init(timeIntervalSince1970: TimeInterval(unixSeconds))
    }

    /// Milliseconds since 1970, as App Store payloads carry dates.
    public var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }

    public init(unixMilliseconds: Int64) {
        self.init(timeIntervalSince1970: TimeInterval(unixMilliseconds) / 1000)
    }

    /// RFC 3339 UTC with whole seconds, as the contract sends timestamps
    /// (`2026-11-28T01:40:00Z`; the time to the nearest millisecond, its fraction of a second dropped). Written from the civil date
    /// by arithmetic: `ISO8601DateFormatter` went through ICU and a lock on every call, a few
    /// times in every `GET /v1/me` (issue 47). `ClockTests` holds it to the formatter's output.
    public var rfc3339: String {
        // As Foundation's formatter does: to the nearest millisecond, then the whole second.
        let milliseconds = Int64((timeIntervalSince1970 * 1000).rounded())
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let inDay = seconds - days * 86_400
        let (year, month, day) = UTCCivil.date(days: days)
        // Written in place, into the string's own storage: a buffer of digits per field (six
        // arrays a date) was 1.4 % of a `GET /v1/me` (BENCHMARKS.md, issue 61, step 14).
        return String(unsafeUninitializedCapacity: 20) { text in
            func put(_ value: Int64, width: Int, at start: Int, then separator: UInt8) {
                var rest = value
                for index in stride(from: start + width - 1, through: start, by: -1) {
                    text[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
                text[start + width] = separator
            }
            put(year, width: 4, at: 0, then: UInt8(ascii: "-"))
            put(month, width: 2, at: 5, then: UInt8(ascii: "-"))
            put(day, width: 2, at: 8, then: UInt8(ascii: "T"))
            put(inDay / 3600, width: 2, at: 11, then: UInt8(ascii: ":"))
            put(inDay / 60 % 60, width: 2, at: 14, then: UInt8(ascii: ":"))
            put(inDay % 60, width: 2, at: 17, then: UInt8(ascii: "Z"))
            return 20
        }
    }

    /// Parses an RFC 3339 time (with an offset or `Z`; fractional seconds allowed).
    public init?(rfc3339 text: String) {
        // RFC 3339's year is four digits: a fifth (10000-01-01) parses, but is written back as
        // 0000-01-01, a time long past (issue 59, finding 7).
        let head = Array(text.utf8.prefix(5))
        guard head.count == 5, head[..<4].allSatisfy({ (48...57).contains($0) }), head[4] == UInt8(ascii: "-") else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) {
            self = date
            return
        }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = formatter.date(from: text) else { return nil }
        self = date
    }
}

/// Days since 1970-01-01 and the proleptic Gregorian date in UTC, both ways, by arithmetic
/// (era-based, exact for any year): the one conversion `Date.rfc3339`, the credit periods, the
/// usage meters' windows, imported timestamps and the console's dates use (a `Calendar` took 3 %
/// of a `GET /v1/me` for the period alone, issue 61).
public enum UTCCivil {
    /// The year, month (1–12) and day (1–31) of the day `days` after 1970-01-01.
    public static func date(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The days from 1970-01-01 to `year`-`month`-`day`; a month past 12 or below 1 carries into
    /// the years around it.
    public static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let months = year * 12 + (month - 1)
        let (year, month) = (months >= 0 ? months / 12 : (months - 11) / 12, (months % 12 + 12) % 12 + 1)
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The days from 1970-01-01 to `year`-`month`-`day` when that is a day of the calendar (a
    /// month from 1 to 12 and a day that month has); nil otherwise, where `days(year:month:day:)`
    /// would carry into the next month.
    public static func validDays(year: Int64, month: Int64, day: Int64) -> Int64? {
        guard (1...12).contains(month), (1...31).contains(day) else { return nil }
        let days = days(year: year, month: month, day: day)
        return date(days: days) == (year, month, day) ? days : nil
    }

    /// The day (since 1970-01-01) that `date` falls on in UTC.
    public static func days(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / 86_400).rounded(.down))
    }

    /// Midnight UTC of the day `days` after 1970-01-01.
    public static func midnight(days: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(days * 86_400))
    }
}
