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

    /// RFC 3339 UTC with whole seconds, as the contract sends timestamps.
    public var rfc3339: String {
        rfc3339Formatter.string(from: self)
    }

    /// Parses an RFC 3339 time (with an offset or `Z`; fractional seconds allowed).
    public init?(rfc3339 text: String) {
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

// SAFETY: ISO8601DateFormatter is documented thread-safe for formatting once configured;
// it is configured here once and never mutated again.
nonisolated(unsafe) private let rfc3339Formatter: ISO8601DateFormatter = {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    formatter.timeZone = TimeZone(identifier: "UTC")
    return formatter
}()
