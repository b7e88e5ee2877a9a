import AsyncHTTPClient
import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import NIOCore
import Synchronization
import Tracing

/// Why a hook's call gave no usable answer. Closed: each is a failure of the hook (503
/// `hook_unavailable` unless the hook fails open), never the person's fault.
enum HookFailure: Error, Equatable, CustomStringConvertible {
    /// No connection, or the connection broke.
    case unreachable
    /// No whole answer within `GATEHOUSE_HOOK_TIMEOUT_MS`.
    case timedOut
    /// An answer other than a 2xx; a 3xx is one too (redirects are never followed).
    case status(Int)
    /// An answer longer than `HookCaller.maximumAnswerBytes`.
    case oversized
    /// A 2xx whose body is not what the hook answers (strict: unknown members are refused).
    case malformed(String)

    /// The metric's and audit trail's word for it.
    var reason: String {
        switch self {
        case .unreachable: "unreachable"
        case .timedOut: "timeout"
        case .status: "status"
        case .oversized: "oversized"
        case .malformed: "malformed"
        }
    }

    var description: String {
        switch self {
        case .unreachable: "could not be reached"
        case .timedOut: "did not answer in time"
        case .status(let code): "answered \(code)"
        case .oversized: "answered more than \(HookCaller.maximumAnswerBytes) bytes"
        case .malformed(let why): "answered something else than it should: \(why)"
        }
    }
}

/// The one way Gatehouse calls an app's endpoint: the synchronous hooks (`HookName`) and the SMS
/// send hook go through it. Each call is a POST signed as Standard Webhooks (`webhook-id`,
/// `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under
/// the `whsec_` secret's bytes), bounded by one deadline from the connection to the answer's
/// last byte, follows no redirect (the HTTP client's configuration), reads at most
/// `maximumAnswerBytes`, and is counted (`gatehouse_hook_calls_total`,
/// `gatehouse_hook_duration_seconds`), traced (`hook.call`) and kept in `HookHealth` for the
/// console.
struct HookCaller: Sendable {
    static let maximumAnswerBytes = 16_384

    let client: HTTPClient
    let clock: any WallClock
    let timeout: Duration
    /// Where each call's time-out waits (the app's, a service beside the server).
    let deadlines: Deadlines
    let metrics: ServerMetrics
    let health: HookHealth
    var tracer: (any Tracer)? = nil

    /// POSTs `body` to `url` signed with `secret`, and reads a 2xx's answer with `read` (nil: not
    /// what the hook answers, a `malformed` failure). `label` names the hook in the metric, the
    /// span and the health table; `id` is the `webhook-id` (the same on every retry of one
    /// message, so a receiver may drop a repeat). Each call is counted once, with its outcome.
    func post<Answer: Sendable>(
        _ label: String, url: URL, secret: [UInt8], id: String, body: Data, read: @Sendable ([UInt8]) -> Answer?
    ) async throws(HookFailure) -> Answer {
        let started = ContinuousClock.now
        let outcome: Result<Answer, HookFailure>
        do {
            let bytes = try await traced(tracer, "hook.call", kind: .client, attributes: ["gatehouse.hook": .string(label)]) {
                try await exchange(url: url, secret: secret, id: id, body: body)
            }
            outcome = read(bytes).map { .success($0) } ?? .failure(.malformed("not what the hook answers"))
        } catch let failure as HookFailure {
            outcome = .failure(failure)
        } catch {
            outcome = .failure(.unreachable)
        }
        let elapsed = ContinuousClock.now - started
        let failure: HookFailure? = if case .failure(let failure) = outcome { failure } else { nil }
        metrics.hookCall(label, outcome: failure?.reason ?? "answered", duration: elapsed)
        health.record(label, failed: failure != nil, duration: elapsed)
        return try outcome.get()
    }

    private func exchange(url: URL, secret: [UInt8], id: String, body: Data) async throws -> [UInt8] {
        let (client, timeout, timestamp) = (self.client, self.timeout, clock.now.unixSeconds)
        // One deadline for the whole call: the client's own covers only the answer's head.
        return try await deadlines.within(timeout) { HookFailure.timedOut } _: {
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "webhook-id", value: id)
            request.headers.add(name: "webhook-timestamp", value: String(timestamp))
            request.headers.add(name: "webhook-signature", value: Self.signature(id: id, timestamp: timestamp, body: body, secret: secret))
            request.body = .bytes(ByteBuffer(bytes: body))
            let response: HTTPClientResponse
            do {
                response = try await client.execute(request, timeout: TimeAmount(timeout))
            } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
                throw HookFailure.timedOut
            } catch {
                if Task.isCancelled { throw HookFailure.timedOut }
                throw HookFailure.unreachable
            }
            let status = Int(response.status.code)
            let answer: ByteBuffer
            do {
                answer = try await response.body.collect(upTo: Self.maximumAnswerBytes)
            } catch is NIOTooManyBytesError {
                throw HookFailure.oversized
            } catch {
                if Task.isCancelled { throw HookFailure.timedOut }
                throw HookFailure.unreachable
            }
            guard (200..<300).contains(status) else { throw HookFailure.status(status) }
            return Array(buffer: answer)
        }
    }

    /// Standard Webhooks' signature: `v1,` and the base64 of HMAC-SHA256 over `id.timestamp.body`.
    static func signature(id: String, timestamp: Int64, body: Data, secret: [UInt8]) -> String {
        var signed = Data("\(id).\(timestamp).".utf8)
        signed.append(body)
        let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: secret))
        return "v1," + Data(mac).base64EncodedString()
    }

    /// The bytes of a `whsec_…` secret; nil when it is not one.
    static func secretBytes(_ secret: String) -> [UInt8]? {
        guard secret.hasPrefix("whsec_"), let bytes = Data(base64Encoded: String(secret.dropFirst(6))), bytes.count >= 16 else { return nil }
        return Array(bytes)
    }
}

/// Each hook's calls, failures and latency on this node since it started, for the console's
/// hook health (the cluster-wide figures are the Prometheus series).
final class HookHealth: Sendable {
    struct Figures: Sendable, Equatable {
        var calls = 0
        var failures = 0
        /// The most recent durations, at most `HookHealth.kept`, for the p99.
        var recent: [Duration] = []

        /// The 99th percentile of the recent calls' durations; nil before the first call.
        var p99: Duration? {
            guard !recent.isEmpty else { return nil }
            let sorted = recent.sorted()
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
        }
    }

    static let kept = 1_000
    private let figures = Mutex<[String: Figures]>([:])

    init() {}

    func record(_ label: String, failed: Bool, duration: Duration) {
        figures.withLock { table in
            var entry = table[label] ?? Figures()
            entry.calls += 1
            if failed { entry.failures += 1 }
            entry.recent.append(duration)
            if entry.recent.count > Self.kept { entry.recent.removeFirst(entry.recent.count - Self.kept) }
            table[label] = entry
        }
    }

    /// Every hook called so far, by label.
    func snapshot() -> [String: Figures] { figures.withLock { $0 } }
}
