import Foundation
import GatehouseCore
import GatehouseWire
@testable import GatehouseServer
@testable import GatehouseStore
import GatehouseTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryTracing
import Synchronization
import Testing
import Tracing

/// Traces (issue 25): the real binary exports to a real OTLP/HTTP receiver
/// (`Tests/support/otlp_receiver.py`, decoding with the `opentelemetry-proto` package) the span
/// tree of a sign-up, from the caller's `traceparent` to the mail and the webhook it caused; the
/// in-process app, with an in-memory tracer, shows the spans on both databases, a provider's key
/// fetch and a failed request. With no endpoint, nothing is traced.
@Suite struct TracesTests {
    static let requestID = "trace-test-request-0001"
    static let password = "Correct-Horse-Battery-9"

    static var receiverScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("support/otlp_receiver.py").path
    }

    /// One span as the receiver decoded it.
    struct ReceivedSpan: CustomStringConvertible {
        var traceID: String
        var spanID: String
        var parentSpanID: String
        var name: String
        var kind: String
        var status: String
        var attributes: [String: Any]
        var resource: [String: Any]

        init(_ object: [String: Any]) {
            traceID = object["trace_id"] as? String ?? ""
            spanID = object["span_id"] as? String ?? ""
            parentSpanID = object["parent_span_id"] as? String ?? ""
            name = object["name"] as? String ?? ""
            kind = object["kind"] as? String ?? ""
            status = object["status_code"] as? String ?? ""
            attributes = object["attributes"] as? [String: Any] ?? [:]
            resource = object["resource"] as? [String: Any] ?? [:]
        }

        func string(_ key: String) -> String? { attributes[key] as? String }
        func int(_ key: String) -> Int? { (attributes[key] as? NSNumber)?.intValue ?? (attributes[key] as? String).flatMap { Int($0) } }
        var description: String { "\(name) [\(kind)] \(spanID) ← \(parentSpanID)" }
    }

    /// The receiver, listening on a free loopback port; spans land in `spans`.
    final class OTLPReceiver: Sendable {
        let process: Spawned
        let input: Pipe
        let port: Int
        let file: URL

        init(python: String, directory: URL) async throws {
            file = directory.appendingPathComponent("spans.jsonl")
            let started = try await Spawned.helper(python: python, [TracesTests.receiverScript, "--port", "0", "--out", file.path])
            (process, input) = (started.process, started.input)
            let line = started.firstLine
            guard line.hasPrefix("listening "), let port = Int(line.dropFirst(10).trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw ProcessError("the OTLP receiver did not start: \(line)")
            }
            self.port = port
        }

        var spans: [ReceivedSpan] {
            let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]).map(ReceivedSpan.init)
            }
        }

        /// Polls (up to 30 s) until `done` holds for the spans received.
        func wait(until done: ([ReceivedSpan]) -> Bool) async throws -> [ReceivedSpan] {
            for _ in 0..<300 {
                let received = spans
                if done(received) { return received }
                try await Task.sleep(for: .milliseconds(100))
            }
            return spans
        }

        func stop() {
            try? input.fileHandleForWriting.close()
            // Blocks its thread: the helper exits as soon as its input closes.
            process.waitUntilExit()
        }
    }

    /// A webhook receiver that keeps each delivery's `traceparent`.
    static func withHookReceiver(_ body: @escaping @Sendable (Int, @escaping @Sendable () -> [String]) async throws -> Void) async throws {
        let traceparents = Mutex<[String]>([])
        let router = Router()
        router.post("/hook") { request, _ -> HTTPResponse.Status in
            _ = try await request.body.collect(upTo: 65_536)
            traceparents.withLock { $0.append(request.headers[HTTPField.Name("traceparent")!] ?? "") }
            return .ok
        }
        let receiver = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await receiver.test(.live) { hook in
            try await body(hook.port!, { traceparents.withLock { $0 } })
        }
    }

    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON (with opentelemetry-proto and aiosmtpd)"))
    func aSignUpIsOneTraceFromTheCallerToItsMailAndWebhook() async throws {
        let python = try #require(SMTPSink.python)
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let receiver = try await OTLPReceiver(python: python, directory: directory)
        defer { receiver.stop() }
        let sink = try await SMTPSink()
        defer { sink.stop() }
        // SyncWell's preset: a verification mail at sign-up, and the breached-password check,
        // whose request must stay out of the trace (its path holds five digits of the SHA-1).
        let breached = "Breached-Password-1"
        try await RangeServer.run(breached: [breached]) { rangeURL in
            try await Self.withHookReceiver { hookPort, traceparents in
                let database = "sqlite://" + directory.appendingPathComponent("gatehouse.sqlite").path
                let environment = ServerProcess.environment(
                    database: database,
                    [
                        "GATEHOUSE_PRESET": "syncwell", "GATEHOUSE_BREACHED_PASSWORDS_URL": rangeURL,
                        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)", "OTEL_BSP_SCHEDULE_DELAY": "100",
                        "GATEHOUSE_SMTP_URL": "smtp://127.0.0.1:\(sink.port)", "GATEHOUSE_WEBHOOK_URL": "http://127.0.0.1:\(hookPort)/hook",
                        "GATEHOUSE_WEBHOOK_SECRET": "whsec-test-secret-0123456789", "GATEHOUSE_IP_LIMITS": "off", "GATEHOUSE_LOG_LEVEL": "info",
                    ])
                let server = try ServerProcess(["serve"], environment: environment, directory: directory)
                defer { server.signal(SIGTERM) }
                let base = try await server.baseURL()

                // The caller's own trace: Gatehouse's spans join it.
                let callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
                let callerSpan = "00f067aa0ba902b7"
                let email = "traced@example.com"
                // The range service is asked: a listed password is refused.
                let refused = try await HTTP.request(
                    base.appendingPathComponent("/v1/auth/signup"), method: "POST", headers: ["Content-Type": "application/json"],
                    body: try JSONSerialization.data(withJSONObject: ["email": "other@example.com", "password": breached]))
                #expect(refused.status == 422, "\(refused.text)")
                let reply = try await HTTP.request(
                    base.appendingPathComponent("/v1/auth/signup"), method: "POST",
                    headers: [
                        "Content-Type": "application/json", "X-Request-Id": Self.requestID, "traceparent": "00-\(callerTrace)-\(callerSpan)-01",
                    ],
                    body: try JSONSerialization.data(withJSONObject: ["email": email, "password": Self.password]))
                #expect(reply.status == 201, "\(reply.text)")
                _ = try await sink.waitForMessages(1)

                let spans = try await receiver.wait { spans in
                    spans.contains { $0.name == "smtp.send" } && spans.contains { $0.name == "webhook.send" } && spans.contains { $0.name == "POST /v1/auth/signup" }
                }
                let trace = spans.filter { $0.traceID == callerTrace }
                let byID = Dictionary(trace.map { ($0.spanID, $0) }, uniquingKeysWith: { first, _ in first })

                // The request: a server span, child of the caller's, named by its route.
                let request = try #require(trace.first { $0.name == "POST /v1/auth/signup" }, "\(spans)")
                #expect(request.kind == "SPAN_KIND_SERVER" && request.parentSpanID == callerSpan)
                #expect(request.string("http.route") == "/v1/auth/signup" && request.string("http.request.method") == "POST")
                #expect(request.int("http.response.status_code") == 201 && request.status == "STATUS_CODE_UNSET")
                #expect(request.resource["service.name"] as? String == "gatehouse")

                // Its children: the hash and the transaction in the request, then the mail and the
                // webhook the workers sent after it, in the same trace.
                let children = trace.filter { $0.parentSpanID == request.spanID }
                let hash = try #require(children.first { $0.name == "password.hash" }, "\(trace)")
                #expect(hash.kind == "SPAN_KIND_INTERNAL" && hash.string("gatehouse.hash.algorithm") == "argon2id")
                let transaction = try #require(children.first { $0.name == "db.transaction" }, "\(trace)")
                #expect(transaction.kind == "SPAN_KIND_CLIENT" && transaction.string("db.system.name") == "sqlite")
                let smtp = try #require(children.first { $0.name == "smtp.send" }, "\(trace)")
                #expect(smtp.kind == "SPAN_KIND_CLIENT" && smtp.string("server.address") == "127.0.0.1" && smtp.int("server.port") == sink.port)
                #expect(smtp.string("gatehouse.mail.kind") == "verification" && smtp.status == "STATUS_CODE_UNSET")
                let webhook = try #require(children.first { $0.name == "webhook.send" }, "\(trace)")
                #expect(webhook.kind == "SPAN_KIND_PRODUCER" && webhook.string("gatehouse.event.type") == "user.created")

                // The webhook's HTTP request is the client's span under it, and the receiver got
                // that span as its `traceparent`.
                let post = try #require(trace.first { $0.parentSpanID == webhook.spanID }, "\(trace)")
                #expect(post.kind == "SPAN_KIND_CLIENT" && post.name == "POST")
                #expect(traceparents() == ["00-\(callerTrace)-\(post.spanID)-01"])

                // One tree: every span but the request hangs off a span of this trace; each carries
                // the request id; none carries the address or the password.
                for span in trace where span.spanID != request.spanID {
                    #expect(byID[span.parentSpanID] != nil, "\(span) has no parent in the trace")
                }
                for span in trace { #expect(span.string("request_id") == Self.requestID, "\(span)") }
                let exported = (try? String(contentsOf: receiver.file, encoding: .utf8)) ?? ""
                #expect(!exported.contains(email) && !exported.contains(Self.password))
                #expect(!exported.contains("/range/"), "the breached-password check's request was traced")

                // The log lines of the request carry its request id and its trace id, whichever
                // logger wrote them (the mail worker's included).
                let lines = server.standardError.split(separator: "\n").compactMap {
                    try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                }
                let requestLines = lines.filter { $0["request_id"] as? String == Self.requestID }
                #expect(requestLines.contains { $0["msg"] as? String == "request" }, "\(server.standardError)")
                #expect(requestLines.contains { $0["msg"] as? String == "mail sent" }, "\(server.standardError)")
                for line in requestLines { #expect(line["trace_id"] as? String == callerTrace, "\(line)") }
            }
        }
    }

    @Test(arguments: Backend.available)
    func theAppsSpansOnEachDatabase(_ backend: Backend) async throws {
        let tracer = InMemoryTracer()
        try await TestApp.run(backend, tracer: tracer) { client, config in
            let api = AuthClient(client: client)
            let created = try await api.post(
                "/v1/auth/signup", #"{"email":"spans@example.com","password":"\#(Self.password)"}"#,
                headers: [HTTPField.Name("X-Request-Id")!: Self.requestID])
            #expect(created.status == .created)
            let spans = tracer.finishedSpans
            let request = try #require(spans.first { $0.operationName == "POST /v1/auth/signup" }, "\(spans.map(\.operationName))")
            #expect(request.kind == .server && request.status == nil)
            #expect(request.attributes["http.route"]?.toSpanAttribute() == .string("/v1/auth/signup"))
            #expect(request.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(201))
            let system = backend == .postgres ? "postgresql" : "sqlite"
            let transactions = spans.filter { $0.operationName == "db.transaction" && $0.parentSpanID == request.spanID }
            #expect(!transactions.isEmpty && transactions.allSatisfy { $0.attributes["db.system.name"]?.toSpanAttribute() == .string(system) })
            #expect(spans.contains { $0.operationName == "password.hash" && $0.parentSpanID == request.spanID })
            for span in spans where span.traceID == request.traceID {
                #expect(span.attributes["request_id"]?.toSpanAttribute() == .string(Self.requestID), "\(span.operationName)")
            }

            // An unmatched path keeps the bare method as its name.
            tracer.clearFinishedSpans()
            #expect(try await api.get("/no/such/route", token: nil).status == .notFound)
            let unmatched = try #require(tracer.finishedSpans.first { $0.kind == .server })
            #expect(unmatched.operationName == "GET" && unmatched.attributes["http.route"] == nil, "\(unmatched.operationName) \(unmatched.attributes)")

            // A failure of ours (the users table gone) answers 500 and marks the span failed.
            try await TestApp.withStore(config) { store in _ = try await store.executor.query("ALTER TABLE users RENAME TO users_gone") }
            tracer.clearFinishedSpans()
            let failed = try await api.login("spans@example.com")
            #expect(failed.status == .internalServerError, "\(failed.text)")
            let failedSpan = try #require(tracer.finishedSpans.first { $0.kind == .server })
            #expect(failedSpan.status?.code == .error && failedSpan.operationName == "POST /v1/auth/login")
        }
    }

    /// A sign-in whose key is not cached fetches the provider's keys inside the request: the
    /// fetch is a span of the request's trace, with the HTTP client's span under it.
    @Test func aProvidersKeyFetchIsASpanWithItsHTTPRequest() async throws {
        let tracer = InMemoryTracer()
        let clock = ManualClock(Date())
        let audience = "1234-abc.apps.googleusercontent.com"
        let google = try FakeProvider(issuer: "https://accounts.google.com", audience: audience)
        try await google.serve { googleURL in
            try await TestApp.run(.sqlite, clock: clock, tracer: tracer, adjust: {
                $0.googleAudiences = [audience]
                $0.googleJWKSURL = googleURL
            }) { client, _ in
                // The background fetch at start: a trace of its own, no request id.
                for _ in 0..<100 where !tracer.finishedSpans.contains(where: { $0.operationName == "provider.keys.fetch" }) {
                    try await Task.sleep(for: .milliseconds(50))
                }
                let prefetch = try #require(tracer.finishedSpans.first { $0.operationName == "provider.keys.fetch" })
                #expect(prefetch.parentSpanID == nil && prefetch.attributes["request_id"] == nil)
                tracer.clearFinishedSpans()

                // A key published since: the sign-in's own fetch finds it.
                let rotated = FakeProvider.Key(kid: "rotated-key", key: google.signing.key)
                google.publish(rotated)
                clock.advance(by: ProviderKeySet.refetchInterval + 1)
                let token = try google.token(sub: "g-1", email: "keys@example.com", extra: ["email_verified": true], key: rotated)
                let reply = try await AuthClient(client: client).post("/v1/auth/google", #"{"id_token":"\#(token)"}"#)
                #expect(reply.status == .ok, "\(reply.text)")
                let spans = tracer.finishedSpans
                let request = try #require(spans.first { $0.operationName == "POST /v1/auth/google" })
                let fetch = try #require(spans.first { $0.operationName == "provider.keys.fetch" }, "\(spans.map(\.operationName))")
                #expect(fetch.traceID == request.traceID && fetch.kind == .internal)
                #expect(fetch.attributes["url.full"]?.toSpanAttribute() == .string(googleURL.absoluteString))
                #expect(fetch.attributes["request_id"] != nil)
                let get = try #require(spans.first { $0.parentSpanID == fetch.spanID })
                #expect(get.kind == .client && get.operationName == "GET")
            }
        }
    }

    /// Traces are on only with an endpoint, and only over OTLP/HTTP.
    @Test func theEndpointTurnsTracesOnAndOnlyOTLPOverHTTPIsAccepted() async throws {
        let config = try await GatehouseConfig.load(environment: [:])
        #expect(config.tracesEndpoint == nil && config.redactedSummary["traces"] == "off")
        let on = try await GatehouseConfig.load(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"])
        #expect(on.tracesEndpoint == "http://collector:4318/v1/traces")
        #expect(on.redactedSummary["traces"] == "otlp http://collector:4318/v1/traces")
        let exact = try await GatehouseConfig.load(environment: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c.example/traces"])
        #expect(exact.tracesEndpoint == "https://c.example/traces")
        let disabled = try await GatehouseConfig.load(
            environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"])
        #expect(disabled.tracesEndpoint == nil)
        // gRPC is not built in: refused when the configuration is read, not at the first export.
        do throws(ConfigurationError) {
            _ = try await GatehouseConfig.load(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"])
            Issue.record("grpc was accepted")
        } catch {
            #expect(error.problems == ["OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' is not supported (http/protobuf or http/json)"])
        }
    }
}
