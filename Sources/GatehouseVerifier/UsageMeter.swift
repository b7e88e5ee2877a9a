#if Verifier
import Foundation
import GatehouseCore
import GatehouseWire

/// Per-user usage of an app's own API: a count of every request each user made to each
/// protected action (Hannah: "rate limiting per user", "track usage per user"), limited either
/// - in memory, per process, with a fixed-window rate limit per action
///   (`init(limits:clock:)`): with several instances behind a load balancer, each enforces its
///   own share; or
/// - by Gatehouse-held meters (`init(gatehouse:meters:clock:)`): every instance counts into
///   the same per-user meter, reserved atomically by Gatehouse against the plan's limit, so
///   the limit holds however many instances there are.
public actor UsageMeter {
    /// A fixed-window limit on one action, kept in memory: at most `requests` per user in each `window`.
    public struct Limit: Sendable, Equatable {
        /// Requests each user may make in one window.
        public var requests: Int
        /// The window's length in seconds; a user's window starts at their first request after
        /// the previous one ended.
        public var window: TimeInterval
        /// Makes a limit of `requests` per `window` seconds, e.g. `.init(requests: 20, per: 60)`.
        public init(requests: Int, per window: TimeInterval) {
            self.requests = requests
            self.window = window
        }
    }

    /// What ``UsageMeter/record(user:action:)`` decided for one request. ``GatehouseMiddleware``
    /// answers `limited` with 429 `rate_limited`, `refused` with 403 and the gate decision, and
    /// `unavailable` with 503 `service_unavailable`.
    public enum Outcome: Sendable, Equatable {
        /// The use is counted; `remaining` is how many more the limit allows now, nil when the
        /// action has no limit.
        case allowed(remaining: Int?)
        /// Whole seconds until the window ends.
        case limited(retryAfter: Int)
        /// A Gatehouse-held meter refused the use: the plan's gate decision.
        case refused(GateDecision)
        /// A Gatehouse-held meter could not be asked; the use is not let through.
        case unavailable
    }

    private struct Key: Hashable {
        var user: String
        var action: String
    }

    private let limits: [String: Limit]
    private let gatehouse: GatehouseMeters?
    /// Gatehouse meter names by action.
    private let meters: [String: String]
    private let clock: any WallClock
    private var windows: [Key: (start: Date, count: Int)] = [:]
    private var totals: [Key: Int] = [:]
    private var recordsSincePrune = 0

    /// `limits` by action name; actions without one are only counted.
    public init(limits: [String: Limit], clock: any WallClock = SystemClock()) {
        self.limits = limits
        gatehouse = nil
        meters = [:]
        self.clock = clock
    }

    /// `meters`: the Gatehouse meter each action counts into (`["ai_chat": "ai_chat"]`); other
    /// actions are only counted here.
    public init(gatehouse: GatehouseMeters, meters: [String: String], clock: any WallClock = SystemClock()) {
        limits = [:]
        self.gatehouse = gatehouse
        self.meters = meters
        self.clock = clock
    }

    /// Counts one request of `user` to `action`, unless the limit refuses it. Every call is a
    /// new use: with a Gatehouse-held meter its idempotency key is one this meter makes for the
    /// call, so nothing the end user sends (an `Idempotency-Key` header, a replayed request) can
    /// make a use count as an earlier one.
    public func record(user: String, action: String) async -> Outcome {
        if let gatehouse, let meter = meters[action] {
            do {
                let reading = try await gatehouse.record(meter, user: user, idempotencyKey: UUID().uuidString)
                totals[Key(user: user, action: action), default: 0] += 1
                return .allowed(remaining: reading.limit.map { max(0, $0 - reading.used) })
            } catch .refused(let decision) {
                return .refused(decision)
            } catch {
                return .unavailable
            }
        }
        return recordHere(user: user, action: action)
    }

    private func recordHere(user: String, action: String) -> Outcome {
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

    /// Requests `user` made through this process, by action, since it started.
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
#endif
