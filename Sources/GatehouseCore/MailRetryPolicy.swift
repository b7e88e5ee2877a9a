import Foundation
import GatehouseWire

/// When a failed delivery is tried again (`RetryBackoff`); after `maximumAttempts` the mail is
/// given up as failed.
public enum MailRetryPolicy {
    public static let maximumAttempts = 10

    public static func nextAttempt(after attempts: Int, now: Date) -> Date? {
        RetryBackoff.nextAttempt(after: attempts, of: maximumAttempts, now: now)
    }
}
