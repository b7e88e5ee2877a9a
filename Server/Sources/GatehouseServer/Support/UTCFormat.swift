import Foundation
import Synchronization

/// `date` in UTC with a fixed English locale (`pattern` as `DateFormatter` reads it): for mail
/// headers, mail copy and the admin console, never the reader's locale.
///
/// One formatter per pattern, made once: making a `DateFormatter` costs about 150 µs on Linux
/// (2.4 µs to format with one already made), and a console page formats two times a row; an
/// account's page with 134 sessions spent about 40 ms on formatters (BENCHMARKS.md, issue 65,
/// step 20). The patterns are the callers' literals, so the cache holds a handful.
func utcFormat(_ date: Date, _ pattern: String) -> String {
    utcFormatters.withLock { formatters in
        if let formatter = formatters[pattern] { return formatter.string(from: date) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = pattern
        formatters[pattern] = formatter
        return formatter.string(from: date)
    }
}

/// A formatter is not safe to share across threads as it formats: each formats under the lock.
private let utcFormatters = Mutex<[String: DateFormatter]>([:])
