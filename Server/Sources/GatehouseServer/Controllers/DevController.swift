import GatehouseCore
import GatehouseStore
import GatehouseWire
import Hummingbird

/// `GET /dev/outbox`: the mail Gatehouse sent, with its links, for development only (the
/// route does not exist in production).
struct DevController {
    let store: any OutboxStore

    func register(on router: Router<GatehouseRequestContext>) {
        router.on(Endpoints.devOutbox, use: devOutbox)
    }

    @Sendable func devOutbox(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let limitText = request.uri.queryParameters["limit"].map(String.init) ?? "50"
        guard let limit = Int(limitText), (1...500).contains(limit) else {
            throw GatehouseError.invalidRequest("The limit must be a number from 1 to 500.")
        }
        let messages = try await store.recentMail(limit: limit)
        return try JSONBody.response(
            OutboxList(
                messages: messages.map {
                    OutboxEntry(
                        id: $0.id.uuidString.lowercased(), createdAt: $0.createdAt.rfc3339, kind: $0.kind, to: $0.recipient,
                        subject: $0.subject, text: $0.textBody, html: $0.htmlBody, status: $0.status, attempts: $0.attempts)
                }))
    }
}
