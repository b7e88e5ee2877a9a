import CoreMetrics
import Foundation
import GatehouseCore
import GatehouseStore
import Prometheus
import Synchronization

/// The server's signals for Prometheus (`GET /metrics`), made with swift-metrics handlers from
/// this server's own registry: nothing is bootstrapped process-wide, so servers in one process
/// (the tests) never share counts, and with metrics off every call goes to swift-metrics' no-op
/// handler.
///
/// Every metric has one fixed set of label names (Prometheus refuses a family whose series
/// disagree). The names and labels are listed in docs/operations.md and used by
/// docs/grafana/gatehouse.json.
final class ServerMetrics: Sendable {
    /// Where the series live; nil when metrics are off.
    let registry: PrometheusCollectorRegistry?
    private let factory: any MetricsFactory
    /// Made once: finding a series in the registry (its lock, the label list) costs more than
    /// counting in it, and these are counted on every request or query.
    private let poolWaitTimer: CoreMetrics.Timer
    private let poolInUseMeter: CoreMetrics.Meter
    private let requestSeries = Mutex(RequestSeries())

    /// The request series made so far, by their labels. Bounded: methods outside the standard
    /// ones share one label (`HTTPRequest.Method.label`), and routes are the router's templates.
    private struct RequestSeries {
        var counters: [RequestLabels: CoreMetrics.Counter] = [:]
        var timers: [RequestLabels: CoreMetrics.Timer] = [:]
    }

    private struct RequestLabels: Hashable {
        var method: String
        var route: String
        var status: Int
    }

    /// Metrics off: every signal is dropped.
    static let off = ServerMetrics(enabled: false)

    init(enabled: Bool) {
        if enabled {
            let registry = PrometheusCollectorRegistry()
            var factory = PrometheusMetricsFactory(registry: registry)
            // Password hashing takes tens of milliseconds; requests a few. Finer buckets below 5 ms.
            factory.defaultDurationHistogramBuckets = [
                .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
                .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
                .seconds(5),
            ]
            self.registry = registry
            self.factory = factory
        } else {
            registry = nil
            factory = NOOPMetricsHandler.instance
        }
        poolWaitTimer = Timer(label: "gatehouse_db_pool_wait_seconds", factory: factory)
        poolInUseMeter = Meter(label: "gatehouse_db_pool_in_use", factory: factory)
    }

    var isEnabled: Bool { registry != nil }

    /// The Prometheus text exposition of every series.
    func render() -> [UInt8] {
        var buffer: [UInt8] = []
        registry?.emit(into: &buffer)
        return buffer
    }

    // MARK: HTTP

    /// One answered request: `route` is the router's template (`/v1/credits/{name}/spend`),
    /// never the raw path, so ids and tokens in paths never become series; `method` is
    /// `HTTPRequest.Method.label`.
    func request(method: String, route: String, status: Int, duration: Duration) {
        guard isEnabled else { return }
        let (counter, timer) = requestSeries.withLock { series in
            let counted = RequestLabels(method: method, route: route, status: status)
            let timed = RequestLabels(method: method, route: route, status: 0)
            if let counter = series.counters[counted], let timer = series.timers[timed] { return (counter, timer) }
            let counter = Counter(
                label: "gatehouse_http_requests_total", dimensions: [("method", method), ("route", route), ("status", String(status))],
                factory: factory)
            let timer = series.timers[timed] ?? Timer(
                label: "gatehouse_http_request_duration_seconds", dimensions: [("method", method), ("route", route)], factory: factory)
            series.counters[counted] = counter
            series.timers[timed] = timer
            return (counter, timer)
        }
        counter.increment()
        timer.record(duration: duration)
    }

    // MARK: Sign-ins

    /// A session opened (or a second-factor challenge passed) by `method`: `password`,
    /// `magic_link`, `apple`, `google`, `anonymous`, `passkey`, …
    func signIn(method: String) {
        Counter(label: "gatehouse_sign_ins_total", dimensions: [("method", method)], factory: factory).increment()
    }

    /// A refused sign-in attempt, `reason` in snake case (`invalid_credentials`, `account_locked`).
    func signInFailure(method: String, reason: String) {
        Counter(label: "gatehouse_sign_in_failures_total", dimensions: [("method", method), ("reason", reason)], factory: factory)
            .increment()
    }

    func lockout() {
        Counter(label: "gatehouse_lockouts_total", factory: factory).increment()
    }

    func refreshReuseDetected() {
        Counter(label: "gatehouse_refresh_reuse_detected_total", factory: factory).increment()
    }

    /// `operation`: `hash` or `verify`.
    func passwordHash(_ operation: String, duration: Duration) {
        Timer(label: "gatehouse_password_hash_duration_seconds", dimensions: [("operation", operation)], factory: factory)
            .record(duration: duration)
    }

    // MARK: Mail, webhooks, keys

    func mailSent() {
        Counter(label: "gatehouse_mail_sent_total", factory: factory).increment()
    }

    func mailFailed() {
        Counter(label: "gatehouse_mail_failed_total", factory: factory).increment()
    }

    /// Mail waiting in the outbox (due or waiting for a retry), as the worker last counted it.
    func mailQueueDepth(_ count: Int) {
        Meter(label: "gatehouse_mail_queue_depth", factory: factory).set(count)
    }

    // MARK: SMS

    /// An SMS handed to its sender (the hook, Twilio, the dev outbox).
    func smsSent() {
        Counter(label: "gatehouse_sms_sent_total", factory: factory).increment()
    }

    /// A delivery attempt that failed (retried later, or given up).
    func smsFailed() {
        Counter(label: "gatehouse_sms_failed_total", factory: factory).increment()
    }

    /// A send refused by a pumping defence (`reason`: an `SMSDefence`, e.g. `daily_budget`).
    func smsRefused(_ defence: SMSDefence) {
        Counter(label: "gatehouse_sms_refused_total", dimensions: [("reason", defence.rawValue)], factory: factory).increment()
    }

    /// `result`: `delivered` or `failed`.
    func webhookDelivery(_ result: String) {
        Counter(label: "gatehouse_webhook_deliveries_total", dimensions: [("result", result)], factory: factory).increment()
    }

    /// A call to an app's hook (`HookCaller`): `hook` its label, `outcome` `answered` or a
    /// `HookFailure`'s reason (`timeout`, `status`, `unreachable`, `oversized`, `malformed`).
    func hookCall(_ hook: String, outcome: String, duration: Duration) {
        Counter(label: "gatehouse_hook_calls_total", dimensions: [("hook", hook), ("outcome", outcome)], factory: factory).increment()
        Timer(label: "gatehouse_hook_duration_seconds", dimensions: [("hook", hook)], factory: factory).record(duration: duration)
    }

    /// A background job's attempt failed: `retrying` (another attempt is due later) or
    /// `given_up` (it ran out of attempts: the console's overview lists it).
    func jobFailed(kind: String, givenUp: Bool) {
        Counter(label: "gatehouse_jobs_failed_total", dimensions: [("kind", kind), ("outcome", givenUp ? "given_up" : "retrying")], factory: factory)
            .increment()
    }

    func keyRotation() {
        Counter(label: "gatehouse_key_rotations_total", factory: factory).increment()
    }

    // MARK: Database

    /// Connections (PostgreSQL) or the writer (SQLite) leased right now.
    func poolInUse(_ count: Int) {
        poolInUseMeter.set(count)
    }

    /// How long a query or transaction waited for its connection.
    func poolWait(_ duration: Duration) {
        poolWaitTimer.record(duration: duration)
    }

    /// A rest of housekeeping's between two batches (a sweep's, a reclaim's), by what it rests
    /// for: the requests, PostgreSQL's log or SQLite's checkpointer (`HousekeepingRest`).
    func housekeepingRest(_ reason: HousekeepingRest, _ duration: Duration) {
        Timer(label: "gatehouse_housekeeping_rest_seconds", dimensions: [("reason", reason.rawValue)], factory: factory)
            .record(duration: duration)
    }
}

extension ServerMetrics: PoolObserver {
    func leased(waited: Duration, inUse: Int) {
        poolWait(waited)
        poolInUse(inUse)
    }

    func released(inUse: Int) {
        poolInUse(inUse)
    }

    func housekeepingRested(for reason: HousekeepingRest, _ rest: Duration) {
        housekeepingRest(reason, rest)
    }
}
