import Foundation

/// `date` in UTC with a fixed English locale (`pattern` as `DateFormatter` reads it): for mail
/// headers, mail copy and the admin console, never the reader's locale.
func utcFormat(_ date: Date, _ pattern: String) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = pattern
    return formatter.string(from: date)
}
