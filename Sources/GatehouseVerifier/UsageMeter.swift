import Foundation
import GatehouseCore

/// Per-user usage of an app's own API: a count of every request each user made to each
/// protected action, and a fixed-window rate limit per action (Hannah: "rate limiting per
/// user", "track usage per user"). In memory, per process: with several instances behind a
/// load balancer, each enforces its own share.
public actor UsageMeter {
    public struct Limit: Sendable, Equatable {
        public var requests: Int
        public var window: TimeInterval
        public init(requests: Int, per window: TimeInterval) {
            self.requests = requests
            self.window = window
        }
    }

    public enum Outcome: Sendable, Equatable {
        case allowed(remaining: Int?)
        /// Whole seconds until the window ends.
        case limited(retryAfter: Int)
    }

    private struct Key: Hashable {
        var user: String
        var action: String
    }

    private let limits: [String: Limit]
    private let clock: any WallClock
    private var windows: [Key: (start: Date, count: Int)] = [:]
    private var totals: [Key: Int] = [:]
    private var recordsSincePrune = 0

    /// `limits` by action name; actions without one are only counted.
    public init(limits: [String: Limit], clock: any WallClock = SystemClock()) {
        self.limits = limits
        self.clock = clock
    }

    /// Counts one request of `user` to `action`, unless the limit refuses it.
    public func record(user: String, action: String) -> Outcome {
        let now = clock.now
        let key = Key(user: user, action: action)
        pruneIfDue(now)
        guard let limit = limits[action] else {
            totals[key, default: 0] += 1
            return .allowed(remaining: nil)
        }
        var window = windows[key] ?? (now, 0)
        if now.timeIntervalSince(window.start) >= limit.window { window = (now, 0) }
        guard window.count < limit.requests else {
            let left = limit.window - now.timeIntervalSince(window.start)
            return .limited(retryAfter: max(1, Int(left.rounded(.up))))
        }
        window.count += 1
        windows[key] = window
        totals[key, default: 0] += 1
        return .allowed(remaining: limit.requests - window.count)
    }

    /// Requests `user` made, by action, since this process started.
    public func usage(of user: String) -> [String: Int] {
        var usage: [String: Int] = [:]
        for (key, count) in totals where key.user == user { usage[key.action] = count }
        return usage
    }

    /// Drops finished windows now and then, so memory follows the users active lately.
    private func pruneIfDue(_ now: Date) {
        recordsSincePrune += 1
        guard recordsSincePrune >= 1_000 else { return }
        recordsSincePrune = 0
        windows = windows.filter { key, window in
            now.timeIntervalSince(window.start) < (limits[key.action]?.window ?? 0)
        }
    }
}
