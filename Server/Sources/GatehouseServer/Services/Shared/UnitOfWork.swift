import Foundation
import GatehouseCore
import GatehouseStore
import Synchronization
import Tracing

/// The one way a use case writes: a transaction that knows the request's client (as the
/// preset's privacy settings keep it) and its time, records audit rows and domain events, queues
/// mail and jobs, and wakes the workers for what it queued once the transaction has committed.
/// No use case calls `wake()` itself.
struct UnitOfWork: Sendable {
    let store: any GatehouseStore
    let events: EventRecorder
    /// nil where no worker runs (the `gatehouse users` commands): the next server start sends it.
    let mail: MailWorker?
    let jobs: JobWorker
    let privacy: PrivacySettings
    let clock: any WallClock
    /// Sign-ins, failures, lockouts and refresh reuse are counted here, from the audit rows:
    /// a transaction's once it has committed.
    var metrics: ServerMetrics = .off
    /// With traces on, mail and jobs are queued with the request's trace context, so the
    /// worker's span joins the request's trace.
    var telemetry: Telemetry = .off

    /// Runs `body` in one transaction. `client` is the caller as the request saw it (nil for
    /// work no request caused); audit rows get it as the privacy settings keep it.
    ///
    /// A request that authenticated as a session writes only while that session is live: the
    /// transaction holds it before `body` runs (`WriteCondition`), so a logout, reset or
    /// disabling that lands while the request was in flight refuses the write.
    func run<T: Sendable>(client: ClientInfo? = nil, _ body: @escaping @Sendable (Work) async throws -> T) async throws -> T {
        let condition = WriteCondition.current?.session
        let queued = Queued()
        let kept = client?.stored(under: privacy)
        // The request's time, read before waiting for the database: a refresh queued behind a
        // busy writer is judged by when it came (its reuse window), not by when it got a turn.
        let now = clock.now
        // Read before the transaction's own span starts: queued work hangs off the request. It
        // is turned into text only if something is queued.
        let origin = telemetry.tracer == nil ? nil : InstrumentationContext.current
        let result = try await store.transaction { [telemetry] tx in
            try await condition?.hold(in: tx)
            return try await body(
                Work(tx: tx, now: now, client: kept, events: events, jobs: jobs, queued: queued, telemetry: telemetry, traceOrigin: origin))
        }
        let (mailQueued, jobsQueued) = queued.flags
        for signal in queued.signals { signal.count(in: metrics) }
        if mailQueued { mail?.wake() }
        if jobsQueued { jobs.wake() }
        return result
    }

    /// One audit row on its own, outside any transaction (a failed attempt whose refusal
    /// rolls nothing back).
    func audit(
        _ event: AuditEvent.Name, _ outcome: AuditEvent.Outcome, user: UserID? = nil, session: SessionID? = nil, client: ClientInfo,
        details: [String: String] = [:]
    ) async throws {
        let kept = client.stored(under: privacy)
        Signal.of(event, outcome, details: details)?.count(in: metrics)
        try await store.insertAudit(
            AuditEvent(createdAt: clock.now, event: event, outcome: outcome, userID: user, sessionID: session,
                       ipAddress: kept.ip, userAgent: kept.userAgent, details: details))
    }

    /// What a transaction queued, read after it commits.
    final class Queued: Sendable {
        private let state = Mutex((mail: false, jobs: false, signals: [Signal]()))
        var flags: (Bool, Bool) { state.withLock { ($0.mail, $0.jobs) } }
        var signals: [Signal] { state.withLock { $0.signals } }
        func mail() { state.withLock { $0.mail = true } }
        func jobs() { state.withLock { $0.jobs = true } }
        func signal(_ signal: Signal) { state.withLock { $0.signals.append(signal) } }
    }

    /// What an audit row counts for the metrics.
    enum Signal: Sendable {
        case signIn(method: String)
        case failure(method: String, reason: String)
        case lockout
        case refreshReuse

        /// Sign-in audit events and the method each names.
        static let signInMethods: [AuditEvent.Name: String] = [
            .login: "password", .passkeyAssertion: "passkey", .mfaVerify: "second_factor",
        ]

        /// The signal of an audit row, if it is one: a refused sign-in (reason in snake case), a
        /// lockout, a refresh token's reuse. (Sessions opened are signalled by `SessionIssuer`.)
        static func of(_ event: AuditEvent.Name, _ outcome: AuditEvent.Outcome, details: [String: String]) -> Signal? {
            switch event {
            case .lockout: return .lockout
            case .refreshReuseDetected: return .refreshReuse
            default: break
            }
            guard let method = signInMethods[event], outcome == .failure || outcome == .locked else { return nil }
            let reason = outcome == .locked ? "account_locked" : (details["reason"] ?? "refused")
            return .failure(method: method, reason: snakeCase(reason))
        }

        static func snakeCase(_ text: String) -> String {
            String(text.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
        }

        func count(in metrics: ServerMetrics) {
            switch self {
            case .signIn(let method): metrics.signIn(method: method)
            case .failure(let method, let reason): metrics.signInFailure(method: method, reason: reason)
            case .lockout: metrics.lockout()
            case .refreshReuse: metrics.refreshReuseDetected()
            }
        }
    }
}

/// One transaction of a `UnitOfWork`: the store bound to it, its time and its client.
struct Work: Sendable {
    /// The store inside the transaction.
    let tx: any GatehouseStore
    let now: Date
    /// The caller as stored (privacy settings applied); nil for work no request caused.
    let client: ClientInfo?
    let events: EventRecorder
    let jobs: JobWorker
    let queued: UnitOfWork.Queued
    var telemetry: Telemetry = .off
    /// The request's context when the transaction began (nil with traces off).
    var traceOrigin: InstrumentationContext? = nil

    /// The request's trace context as stored with queued mail and jobs (nil with traces off).
    var traceContext: String? { telemetry.carried(traceOrigin) }

    /// An audit row with the request's client (`withClient: false` keeps it out, e.g. for the
    /// row that outlives a deleted account).
    func audit(
        _ event: AuditEvent.Name, _ outcome: AuditEvent.Outcome = .success, user: UserID?, session: SessionID? = nil, details: [String: String] = [:],
        withClient: Bool = true
    ) async throws {
        let client = withClient ? client : nil
        if let signal = UnitOfWork.Signal.of(event, outcome, details: details) { queued.signal(signal) }
        try await tx.insertAudit(
            AuditEvent(createdAt: now, event: event, outcome: outcome, userID: user, sessionID: session,
                       ipAddress: client?.ip, userAgent: client?.userAgent, details: details))
    }

    /// A domain event for the feed and, when one is configured, the webhook.
    func record(_ type: DomainEvent.Kind, user: UserID?, data: [String: String] = [:]) async throws {
        if try await events.record(tx, type, user: user, data: data, traceContext: traceContext) { queued.jobs() }
    }

    /// A durable background job, run after the commit.
    func enqueueJob(kind: String, payload: some Encodable) async throws {
        try await jobs.enqueue(tx, kind: kind, payload: payload, traceContext: traceContext)
        queued.jobs()
    }

    /// Queues Apple's token revocation for the user, when Gatehouse holds one.
    func queueAppleRevocation(of user: UserID) async throws {
        if try await jobs.queueAppleRevocation(tx, user: user, traceContext: traceContext) { queued.jobs() }
    }

    /// Writes a message to the outbox; the mail worker is woken after the commit.
    func enqueueMail(_ message: OutboxMessage) async throws {
        var message = message
        message.traceContext = message.traceContext ?? traceContext
        try await tx.enqueueMail(message)
        queued.mail()
    }
}
