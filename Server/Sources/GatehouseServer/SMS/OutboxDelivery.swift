import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Logging

/// The outbox's one transport: mail goes to the mail transport, SMS (`kind` `sms`) to the SMS
/// sender. So SMS share the outbox's crash safety, leases, retries with backoff, giving up and
/// what operators see of it (issue 43).
struct OutboxDelivery: MailTransport {
    let mail: any MailTransport
    let sms: any SMSSender
    let failures: SMSFailures

    var keepsBodies: Bool { mail.keepsBodies }

    func keepsBodies(of message: OutboxMessage) -> Bool {
        message.kind == PhoneCodes.outboxKind ? sms.keepsBodies : mail.keepsBodies
    }

    func deliver(_ message: OutboxMessage) async throws {
        guard message.kind == PhoneCodes.outboxKind else { return try await mail.deliver(message) }
        guard let text = SMSMessage(message) else { throw ProviderError("the outbox's SMS \(message.id) has no text, or no code for its purpose") }
        do {
            try await sms.send(text)
        } catch let refused as SMSDeliveryRefused where refused.refusesNumber {
            await failures.failed(text.to)
            throw refused
        } catch where !BackgroundWork.stoppedByTheShutdown {
            failures.outage()
            throw error
        }
        await failures.succeeded(text.to)
    }
}

/// Deliveries to one number that the receiver refuses in a row (`SMSDeliveryRefused.refusesNumber`):
/// the one that reaches the preset's
/// `sms.pause_after_failures` pauses sends to the number for a day (`SMSDefence.paused`), with
/// an `sms_number_paused` audit row; a delivery that succeeds starts the count again, but never
/// lifts a pause already taken: only the holder's own proof of the number does (`PhoneService`,
/// issue 58), or the day's end.
struct SMSFailures: Sendable {
    let store: any ThrottleStore & AuditStore
    let threshold: Int
    let clock: any WallClock
    let metrics: ServerMetrics
    let logger: Logger

    static let pauseSeconds: Int64 = 86_400

    func failed(_ e164: String) async {
        metrics.smsFailed()
        let schedule = LockSchedule(threshold: threshold, waits: [Self.pauseSeconds])
        do {
            let reservation = try await store.reserveAttempt(key: SMSDefences.failureKey(e164: e164), at: clock.now, schedule: schedule)
            guard case .allowed(let failures, let lockedUntil?) = reservation, failures == threshold else { return }
            try await store.insertAudit(
                AuditEvent(
                    createdAt: clock.now, event: .smsNumberPaused, outcome: .failure,
                    details: ["phone": SMSDefences.masked(e164: e164), "failures": String(failures), "until": lockedUntil.rfc3339]))
        } catch {
            logger.warning("could not count a failed SMS delivery", metadata: ["cause": "\(error)"])
        }
    }

    /// A delivery that failed for a reason not the number's (the receiver down or erring).
    func outage() {
        metrics.smsFailed()
    }

    func succeeded(_ e164: String) async {
        metrics.smsSent()
        do {
            try await store.clearThrottleUnlessLocked(key: SMSDefences.failureKey(e164: e164), at: clock.now)
        } catch {
            logger.warning("could not clear a number's failed SMS deliveries", metadata: ["cause": "\(error)"])
        }
    }
}
