#if Verifier
import AsyncHTTPClient
import Foundation
import GatehouseCore
import GatehouseWire
import NIOCore

/// Usage meters held by Gatehouse (`POST /v1/usage/{meter}`), called by an app's backend with
/// the service key (`GATEHOUSE_SERVICE_KEY`), never with the end user's token. Every instance
/// of the backend counts into the same meter, and Gatehouse reserves each use atomically
/// against the plan's limit, so the limit holds however many instances serve the app.
///
/// ```swift
/// let meters = GatehouseMeters(baseURL: URL(string: "https://auth.example.com")!, serviceKey: serviceKey)
/// // The backend's own id for this use (its request id): never a value from the end user's
/// // request, which would let one header count every call as the first.
/// let reading = try await meters.record("ai_chat", user: user.userID, idempotencyKey: requestID)
/// ```
public struct GatehouseMeters: Sendable {
    /// The period's count after a use, the plan's limit (`nil`: unlimited) and when the count
    /// starts again.
    public struct Reading: Sendable, Equatable {
        /// Uses counted for this user in the current period, this one included.
        public var used: Int
        /// The plan's limit for the period; nil when the plan sets none.
        public var limit: Int?
        /// When the current period ends and the count starts again from zero.
        public var resetsAt: Date
    }

    /// Why ``GatehouseMeters/record(_:user:amount:idempotencyKey:)`` answered no reading.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The plan refused this use: its gate decision (over the limit, trial over, …).
        case refused(GateDecision)
        /// Gatehouse refused the service key.
        case unauthorized
        /// Gatehouse could not be asked, or answered something else.
        case unavailable(String)

        /// A short sentence saying why, for logs.
        public var description: String {
            switch self {
            case .refused(let decision): "refused: \(decision.reasonCode ?? "plan_required")"
            case .unauthorized: "Gatehouse refused the service key"
            case .unavailable(let why): "usage could not be recorded: \(why)"
            }
        }
    }

    let base: String
    let serviceKey: String
    let client: HTTPClient
    let timeout: TimeAmount

    /// Makes a client for the meters of the Gatehouse at `baseURL`.
    /// - Parameters:
    ///   - baseURL: Where this backend reaches Gatehouse.
    ///   - serviceKey: Gatehouse's `GATEHOUSE_SERVICE_KEY` (24+ characters), sent as the bearer token;
    ///     it stays on the server.
    ///   - client: The HTTP client the calls go through.
    ///   - timeout: How long one call may take before it fails as `.unavailable`.
    public init(baseURL: URL, serviceKey: String, client: HTTPClient = .shared, timeout: TimeAmount = .seconds(5)) {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        self.base = base
        self.serviceKey = serviceKey
        self.client = client
        self.timeout = timeout
    }

    /// Records `amount` uses of `meter` by `user`. Retrying with the same `idempotencyKey`
    /// within the meter's period answers the same use again and adds nothing, so the key is the
    /// backend's to choose (say the request id it assigns), never the end user's; Gatehouse
    /// keeps it per user, meter and period.
    public func record(_ meter: String, user: String, amount: Int = 1, idempotencyKey: String) async throws(Failure) -> Reading {
        // The path from the route table the server mounts (issue 42: no path written twice).
        var request = HTTPClientRequest(url: base + Endpoints.recordUsage.path.expand(meter))
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(serviceKey)")
        request.headers.add(name: "Content-Type", value: "application/json")
        let status: UInt
        let body: Data
        do {
            request.body = .bytes(
                ByteBuffer(bytes: try JSONEncoder().encode(UsageRequest(userID: user, amount: amount, idempotencyKey: idempotencyKey))))
            let response = try await client.execute(request, timeout: timeout)
            status = response.status.code
            body = Data(buffer: try await response.body.collect(upTo: 1 << 20))
        } catch {
            throw .unavailable("\(error)")
        }
        switch status {
        case 200:
            guard let answer = try? JSONDecoder().decode(UsageResponse.self, from: body), let resets = Date(rfc3339: answer.resetsAt) else {
                throw .unavailable("an answer that is not a usage reading")
            }
            return Reading(used: answer.used, limit: answer.limit, resetsAt: resets)
        case 401:
            throw .unauthorized
        case 403:
            guard let error = try? JSONDecoder().decode(ErrorBody.self, from: body), let details = error.error.details,
                let data = try? JSONEncoder().encode(details), var decision = try? JSONDecoder().decode(GateDecision.self, from: data)
            else { throw .unavailable("a 403 without a gate decision") }
            decision.message = decision.message ?? error.error.message
            throw .refused(decision)
        default:
            throw .unavailable("HTTP \(status)")
        }
    }
}
#endif
