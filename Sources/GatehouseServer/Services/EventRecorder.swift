import AsyncHTTPClient
import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import NIOCore

/// Records domain events in the feed (`GET /admin/v1/events`) and, when a webhook is
/// configured, queues their delivery as a durable job in the same transaction.
struct EventRecorder: Sendable {
    let jobs: JobWorker
    let webhookConfigured: Bool
    let clock: any WallClock
    /// The preset starts a trial with every account (Hannah): `user.created` brings `trial.started`.
    var trialStartsAtSignup = false

    /// Inside the caller's transaction; call `wake()` after the commit.
    func record(_ tx: any GatehouseStore, _ type: String, user: UserID?, data: [String: String] = [:]) async throws {
        try await append(tx, type, user: user, data: data)
        if type == "user.created", trialStartsAtSignup {
            try await append(tx, "trial.started", user: user, data: ["at": "signup"])
        }
    }

    private func append(_ tx: any GatehouseStore, _ type: String, user: UserID?, data: [String: String]) async throws {
        let event = DomainEvent(type: type, userID: user, data: data, createdAt: clock.now)
        try await tx.insertEvent(event)
        if webhookConfigured {
            try await jobs.enqueue(
                tx, kind: WebhookSender.jobKind,
                payload: WebhookSender.Event(
                    id: event.id.uuidString.lowercased(), type: type, userID: user?.description, createdAt: event.createdAt.rfc3339,
                    data: data))
        }
    }

    func wake() { jobs.wake() }
}

/// Delivers events to `GATEHOUSE_WEBHOOK_URL`: a JSON body signed with HMAC-SHA256 under
/// `GATEHOUSE_WEBHOOK_SECRET`, `Gatehouse-Signature: t=<unix>,v1=<hex>`, where the signature
/// covers the raw body and the body carries the same `sent_at`, so a receiver can refuse old
/// replays. Anything but a 2xx is retried with backoff.
struct WebhookSender: Sendable {
    static let jobKind = "webhook"
    let url: URL
    let secret: String
    let client: HTTPClient
    let clock: any WallClock

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
