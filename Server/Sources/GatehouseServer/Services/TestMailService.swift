import Foundation
import GatehouseCore
import GatehouseStore

/// `POST /admin/v1/mail/test`: a fixed mail through the outbox and the configured transport,
/// so an operator can see that delivery works.
struct TestMailService: Sendable {
    let unitOfWork: UnitOfWork

    /// Queues the test mail; answers its outbox id.
    func send(to address: String) async throws -> UUID {
        guard EmailAddress.isValid(address) else {
            throw GatehouseError(status: 400, code: .invalidEmail, message: "Enter a valid email address.")
        }
        return try await unitOfWork.run { work in
            let message = OutboxMessage(
                createdAt: work.now, kind: "test", recipient: address.trimmingCharacters(in: .whitespaces), subject: "Gatehouse test mail ✉️",
                textBody: "This is a test mail from Gatehouse. If you can read it, mail delivery works.",
                htmlBody: "<p>This is a test mail from <strong>Gatehouse</strong>. If you can read it, mail delivery works.</p>")
            try await work.enqueueMail(message)
            return message.id
        }
    }
}
