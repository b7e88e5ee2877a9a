import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import Synchronization
import Tracing

/// The one way a use case writes: a transaction that knows the request's client (as the
/// preset's privacy settings keep it) and its time, records audit rows and domain events, queues
/// mail and jobs, and wakes the workers for what it queued once the transaction has committed.
/// No use case calls `wake()` itself.
///
/// `Stores` is what a use case declared it reads and writes (a composition of the narrow store
/// protocols, `any UserStore & SessionStore…`): its transactions see the store through that
/// composition only, so a write it did not declare does not compile. Only the composition root
/// (`UnitOfWork<any GatehouseStore>`, narrowed per use case) sees the whole store.
struct UnitOfWork<Stores: Sendable>: Sendable {
    private let store: any GatehouseStore
    private let narrow: @Sendable (any GatehouseStore) -> Stores
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

    init(
        store: any GatehouseStore, narrow: @escaping @Sendable (any GatehouseStore) -> Stores, events: EventRecorder, mail: MailWorker?,
        jobs: JobWorker, privacy: PrivacySettings, clock: any WallClock
    ) {
        (self.store, self.narrow, self.events, self.mail, self.jobs, self.privacy, self.clock) = (store, narrow, events, mail, jobs, privacy, clock)
    }

    /// The same unit of work for a use case that declared `Narrow` (the composition root's
    /// `unitOfWork.narrowed { $0 }`, the existential upcast checked by the compiler).
    func narrowed<Narrow: Sendable>(_ narrow: @escaping @Sendable (any GatehouseStore) -> Narrow) -> UnitOfWork<Narrow> {
        var narrowed = UnitOfWork<Narrow>(
            store: store, narrow: narrow, events: events, mail: mail, jobs: jobs, privacy: privacy, clock: clock)
        narrowed.metrics = metrics
        narrowed.telemetry = telemetry
        return narrowed
    }

    /// Runs `body` in one transaction. `client` is the caller as the request saw it (nil for
    /// work no request caused); audit rows get it as the privacy settings keep it.
    ///
    /// A request that authenticated as a session writes only while that session is live: the
    /// transaction holds it before `body` runs (`WriteCondition`), so a logout, reset or
    /// disabling that lands while the request was in flight refuses the write.
    func run<T: Sendable>(client: ClientInfo? = nil, _ body: @escaping @Sendable (Work<Stores>) async throws -> T) async throws -> T {
        let condition = WriteCondition.current?.session
        let queued = QueuedWork()
        let kept = client?.stored(under: privacy)
        // The request's time, read before waiting for the database: a refresh queued behind a
        // busy writer is judged by when it came (its reuse window), not by when it got a turn.
        let now = clock.now
        // Read before the transaction's own span starts: queued work hangs off the request. It
        // is turned into text only if something is queued.
        let origin = telemetry.tracer == nil ? nil : InstrumentationContext.current
        let result = try await store.transaction { [telemetry, narrow] tx in
            try await condition?.hold(in: tx)
            return try await body(
                Work(
                    tx: narrow(tx), own: tx, now: now, client: kept, events: events, jobs: jobs, queued: queued, telemetry: telemetry,
                    traceOrigin: origin))
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
        AuditSignal.of(event, outcome, details: details)?.count(in: metrics)
        try await store.insertAudit(
            AuditEvent(createdAt: clock.now, event: event, outcome: outcome, userID: user, sessionID: session,
                       ipAddress: kept.ip, userAgent: kept.userAgent, details: details))
    }

}

/// One transaction of a `UnitOfWork`: the store bound to it (as the use case declared it), its
/// time and its client.
struct Work<Stores: Sendable>: Sendable {
    /// The store inside the transaction, through the use case's declared composition.
    let tx: Stores
    /// The unit of work's own writes in the same transaction: audit rows, the feed, jobs, mail.
    private let own: any AuditStore & EventStore & JobStore & OutboxStore
    let now: Date
    /// The caller as stored (privacy settings applied); nil for work no request caused.
    let client: ClientInfo?
    let events: EventRecorder
    let jobs: JobWorker
    let queued: QueuedWork
    var telemetry: Telemetry = .off
    /// The request's context when the transaction began (nil with traces off).
    var traceOrigin: InstrumentationContext? = nil

    init(
        tx: Stores, own: any AuditStore & EventStore & JobStore & OutboxStore, now: Date, client: ClientInfo?, events: EventRecorder,
        jobs: JobWorker, queued: QueuedWork, telemetry: Telemetry, traceOrigin: InstrumentationContext?
    ) {
        (self.tx, self.own, self.now, self.client, self.events, self.jobs, self.queued, self.telemetry, self.traceOrigin) =
            (tx, own, now, client, events, jobs, queued, telemetry, traceOrigin)
    }

    /// The same transaction through a narrower composition: what a shared part declared
    /// (`issuer.issue(in: work.narrowed { $0 }, …)`; the compiler checks the upcast).
    func narrowed<Narrow: Sendable>(_ narrow: (Stores) -> Narrow) -> Work<Narrow> {
        Work<Narrow>(
            tx: narrow(tx), own: own, now: now, client: client, events: events, jobs: jobs, queued: queued, telemetry: telemetry,
            traceOrigin: traceOrigin)
    }

    /// The request's trace context as stored with queued mail and jobs (nil with traces off).
    var traceContext: String? { telemetry.carried(traceOrigin) }

    /// An audit row with the request's client (`withClient: false` keeps it out, e.g. for the
    /// row that outlives a deleted account).
    func audit(
        _ event: AuditEvent.Name, _ outcome: AuditEvent.Outcome = .success, user: UserID?, session: SessionID? = nil, details: [String: String] = [:],
        withClient: Bool = true
    ) async throws {
        let client = withClient ? client : nil
        if let signal = AuditSignal.of(event, outcome, details: details) { queued.signal(signal) }
        try await own.insertAudit(
            AuditEvent(createdAt: now, event: event, outcome: outcome, userID: user, sessionID: session,
                       ipAddress: client?.ip, userAgent: client?.userAgent, details: details))
    }

    /// A domain event for the feed and, when one is configured, the webhook.
    func record(_ type: DomainEvent.Kind, user: UserID?, data: [String: String] = [:]) async throws {
        if try await events.record(own, type, user: user, data: data, traceContext: traceContext) { queued.jobs() }
    }

    /// `purchase.succeeded`, in the one shape every source of the ledger records.
    func record(_ purchase: PurchaseEvent, user: UserID) async throws {
        try await record(.purchaseSucceeded, user: user, data: purchase.data)
    }

    /// A durable background job, run after the commit.
    func enqueueJob(kind: JobKind, payload: some Encodable) async throws {
        try await jobs.enqueue(own, kind: kind, payload: payload, traceContext: traceContext)
        queued.jobs()
    }

    /// Queues Apple's token revocation for the user, when Gatehouse holds one.
    func queueAppleRevocation(of user: UserID) async throws {
        if try await jobs.queueAppleRevocation(own, user: user, traceContext: traceContext) { queued.jobs() }
    }

    /// Writes a message to the outbox; the mail worker is woken after the commit.
    func enqueueMail(_ message: OutboxMessage) async throws {
        var message = message
        message.traceContext = message.traceContext ?? traceContext
        try await own.enqueueMail(message)
        queued.mail()
    }
}

/// What a transaction queued, read after it commits.
final class QueuedWork: Sendable {
    private let state = Mutex((mail: false, jobs: false, signals: [AuditSignal]()))
    var flags: (Bool, Bool) { state.withLock { ($0.mail, $0.jobs) } }
    var signals: [AuditSignal] { state.withLock { $0.signals } }
    func mail() { state.withLock { $0.mail = true } }
    func jobs() { state.withLock { $0.jobs = true } }
    func signal(_ signal: AuditSignal) { state.withLock { $0.signals.append(signal) } }
}

/// What an audit row counts for the metrics.
enum AuditSignal: Sendable {
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
    static func of(_ event: AuditEvent.Name, _ outcome: AuditEvent.Outcome, details: [String: String]) -> AuditSignal? {
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
