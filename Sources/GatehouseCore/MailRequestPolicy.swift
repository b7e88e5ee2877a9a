import Foundation
import GatehouseWire

/// How often a person may have a link mailed: at most one per `interval` and `perDay` in any
/// 24 hours, counting the mails already sent.
public enum MailRequestPolicy {
    /// Seconds to wait before the next mail, or `nil` when one may go now. `sent` are the
    /// creation times of recent links of one kind for one person.
    public static func retryAfter(sent: [Date], now: Date, interval: Int, perDay: Int) -> Int? {
        let day = sent.filter { now.timeIntervalSince($0) < 86_400 }.sorted()
        var wait = 0
        if let last = day.last {
            let since = Int(now.timeIntervalSince(last))
            if since < interval { wait = interval - since }
        }
        if day.count >= perDay, let oldest = day.dropLast(perDay - 1).last {
            wait = max(wait, 86_400 - Int(now.timeIntervalSince(oldest)))
        }
        return wait > 0 ? wait : nil
    }
}
