import AsyncHTTPClient
import Crypto
import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import NIOCore
import Tracing

/// Delivers events to `GATEHOUSE_WEBHOOK_URL`: a JSON body signed with HMAC-SHA256 under
/// `GATEHOUSE_WEBHOOK_SECRET`, `Gatehouse-Signature: t=<unix>,v1=<hex>`, where the signature
/// covers the raw body and the body carries the same `sent_at`, so a receiver can refuse old
/// replays. Anything but a 2xx is retried with backoff.
struct WebhookSender: Sendable {
    static let jobKind = JobKind.webhook
    let url: URL
    let secret: String
    let client: HTTPClient
    let clock: any WallClock
    /// Each delivery is a `webhook.send` span (nil: traces are off); the HTTP client's span,
    /// and the `traceparent` it sends, are its children.
    var tracer: (any Tracer)? = nil

    /// A queued delivery: the event as the feed has it.
    struct Event: Codable, Sendable {
        var id: String
        var type: String
        var userID: String?
        var createdAt: String
        var data: [String: String]
    }

    @Sendable func deliver(_ job: Job, _ payload: Data) async throws {
        let event = try JSONDecoder().decode(Event.self, from: payload)
        let attributes: SpanAttributes = [
            "gatehouse.event.id": .string(event.id), "gatehouse.event.type": .string(event.type),
            "gatehouse.job.attempt": .int64(Int64(job.attempts + 1)),
        ]
        try await traced(tracer, "webhook.send", kind: .producer, attributes: attributes) { try await post(event) }
    }

    private func post(_ event: Event) async throws {
        let sentAt = clock.now.unixSeconds
        let body: [String: Any] = [
            "id": event.id, "type": event.type, "data": event.data, "created_at": event.createdAt, "sent_at": sentAt,
            "user_id": event.userID ?? NSNull(),
        ]
        let data = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Gatehouse-Signature", value: Self.signature(body: data, secret: secret, time: sentAt))
        request.headers.add(name: "Gatehouse-Event-Id", value: event.id)
        request.body = .bytes(ByteBuffer(bytes: data))
        let response = try await client.execute(request, timeout: .seconds(10))
        _ = try? await response.body.collect(upTo: 65_536)
        guard (200..<300).contains(response.status.code) else { throw ProviderError("the webhook answered \(response.status.code)") }
    }

    static func signature(body: Data, secret: String, time: Int64) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Data(secret.utf8)))
        return "t=\(time),v1=" + mac.map { String(format: "%02x", $0) }.joined()
    }
}
