import GatehouseCore
import GatehouseWire
import Logging

/// Development delivery: the mail stays in the outbox (listed at `/dev/outbox`) and one log
/// line says it was sent — recipient, subject and link host, never the link.
struct DevOutboxTransport: MailTransport {
    let logger: Logger
    var keepsBodies: Bool { true }

    func deliver(_ message: OutboxMessage) async throws {
        logger.notice(
            "mail (dev outbox)",
            metadata: ["to": "\(message.recipient)", "subject": "\(message.subject)", "link_host": "\(message.linkHost ?? "-")"])
    }
}
