import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// The mail an operator sends: a fixed test mail through the outbox and the configured
/// transport (`POST /admin/v1/mail/test`, the console's mail page), so an operator can see
/// that delivery works; and, for one account, the mail its person could ask for.
struct OperatorMailService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & EmailTokenStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let mail: AccountMail
    let preset: Preset

    /// Queues the test mail and audits it with `by`; answers its outbox id.
    func sendTest(to address: String, by actor: String, client: ClientInfo?) async throws -> UUID {
        guard EmailAddress.isValid(address) else {
            throw GatehouseError(status: 400, code: .invalidEmail, message: "Enter a valid email address.")
        }
        return try await unitOfWork.run(client: client) { work in
            let message = OutboxMessage(
                createdAt: work.now, kind: MailKind.test.rawValue, recipient: address.trimmingCharacters(in: .whitespaces), subject: "Gatehouse test mail ✉️",
                textBody: "This is a test mail from Gatehouse. If you can read it, mail delivery works.",
                htmlBody: "<p>This is a test mail from <strong>Gatehouse</strong>. If you can read it, mail delivery works.</p>")
            try await work.enqueueMail(message)
            try await work.audit(.adminMail, user: nil, details: ["by": actor, "kind": "test"])
            return message.id
        }
    }

    /// `password_reset`, `magic_link` or `verification`: the same mail the person could ask
    /// for, queued now (the operator's request skips the per-address waits, not the link's rules).
    func send(_ reference: String, kind: String, by actor: String, client: ClientInfo) async throws {
        let user = try await UserReference(reference).resolve(in: store)
        guard let email = user.email else { throw GatehouseError.invalidRequest("This account has no email address.") }
        try await unitOfWork.run(client: client) { work in
            switch MailKind(rawValue: kind) {
            case .verification:
                guard !user.emailVerified else {
                    throw GatehouseError(status: 409, code: .alreadyVerified, message: "This address is already verified.")
                }
                try await mail.queueVerification(work.narrowed { $0 }, user: user)
            case let request? where request == .passwordReset || request == .magicLink:
                // Only the ways in this app offers: a link to a method it turned off would not work.
                guard request == .magicLink ? preset.signInMethods.magicLink : preset.signInMethods.emailPassword else {
                    throw GatehouseError.invalidRequest("This app does not offer \(request == .magicLink ? "sign-in links" : "passwords").")
                }
                try await mail.queueRequest(work, kind: request, email: email)
            default:
                throw GatehouseError.invalidRequest("Unknown mail '\(kind)'.")
            }
            try await work.audit(.adminMail, user: user.id, details: ["by": actor, "kind": kind])
        }
    }
}
