import Logging

/// Every piece of work a node runs in the background, by the name its log lines give it. One
/// rule holds for all of them, here: work that a graceful shutdown cuts short (its task was
/// cancelled, so its query or its send was abandoned) has stopped, not failed. It is logged at
/// info with when it runs again, counted nowhere, and warns no operator; anything else that ends
/// it early is a warning with its cause. A new background service adds its case (the compiler
/// then asks for its resumption) and reports through `Logger.backgroundWork(_:endedBy:metadata:)`.
enum BackgroundWork: String, CaseIterable, Sendable {
    case retentionSweep = "retention sweep"
    case staleAccountRemoval = "stale account removal"
    case voidedPurchasesSweep = "google play voided purchases sweep"
    case passwordHashSchemes = "password hash scheme refresh"
    case providerKeyPrefetch = "provider key prefetch"
    /// The signing keys read again from the database (on a timer, or for a key id not known yet).
    case signingKeyReload = "signing key reload"
    case overviewCount = "console overview count"
    /// The job queue's worker (`JobWorker`): reading the queue, and a job it runs.
    case jobQueue = "job queue"
    /// The outbox's workers (`MailWorker`): reading the outbox, and a mail or SMS they send.
    case mailOutbox = "mail outbox"

    /// What becomes of the work a shutdown stopped.
    var resumes: String {
        switch self {
        case .retentionSweep: "what its batches deleted stays deleted, and the next start sweeps the rest"
        case .staleAccountRemoval, .voidedPurchasesSweep, .passwordHashSchemes, .providerKeyPrefetch, .signingKeyReload:
            "it runs again at the next start"
        case .overviewCount: "the last count stays, and the next view of the overview asks again"
        case .jobQueue: "any job it had claimed runs again when its lease ends, its attempt not counted"
        case .mailOutbox: "any message it had claimed is sent again when its lease ends, its attempt not counted"
        }
    }

    /// The line that says the shutdown stopped it.
    var stopped: Logger.Message { "\(rawValue) stopped by the shutdown; \(resumes)" }
    /// The line that says it failed (with the cause beside it).
    var failed: Logger.Message { "\(rawValue) failed" }

    /// Whether an error that ended background work is the shutdown's doing: the task running it
    /// was cancelled. An error whose task was not cancelled is a failure, a `CancellationError`
    /// from a deadline of the work's own included.
    static var stoppedByTheShutdown: Bool { Task.isCancelled }
}

extension Logger {
    /// Reports background work that `error` ended early: at info as a stop when the shutdown
    /// cancelled it, else as a warning with the cause. Returns whether it was a stop.
    @discardableResult
    func backgroundWork(_ work: BackgroundWork, endedBy error: any Error, metadata: Logger.Metadata = [:]) -> Bool {
        if BackgroundWork.stoppedByTheShutdown {
            info(work.stopped, metadata: metadata)
            return true
        }
        warning(work.failed, metadata: metadata.merging(["cause": "\(error)"]) { $1 })
        return false
    }
}
