import Foundation
import GatehouseStore
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// Traces: the tracer every part that makes spans is given, and the OTLP exporter that runs
/// beside the server. Off (no tracer, no spans, nothing exported) unless
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, or a test
/// passes its own tracer.
///
/// Nothing here is process-wide: each application gets its own tracer, so tests may build many
/// in one process, and no global instrumentation system is bootstrapped.
struct Telemetry: Sendable {
    /// nil: traces are off.
    let tracer: (any Tracer)?
    /// The exporter and batch processor, to run in the application's service group.
    let service: (any Service)?

    static let off = Telemetry(tracer: nil, service: nil)

    /// The tracer `dependencies` gives, else an OTLP/HTTP exporter when the configuration has an
    /// endpoint, else off. Every span carries the request id of the request it belongs to.
    static func make(config: GatehouseConfig, dependencies: AppDependencies, logger: Logger) throws -> Telemetry {
        if let tracer = dependencies.tracer { return Telemetry(tracer: withRequestIDs(tracer), service: nil) }
        guard let endpoint = config.tracesEndpoint else { return .off }
        var otel = OTel.Configuration.default
        otel.serviceName = config.tracesServiceName
        otel.diagnosticLogger = .custom(logger)
        // Export failures, not each setting read from the environment (`OTEL_LOG_LEVEL` overrides).
        otel.diagnosticLogLevel = .warning
        otel.metrics.enabled = false
        otel.logs.enabled = false
        otel.traces.otlpExporter.endpoint = endpoint
        // The OTel SDK reads its other variables (headers, sampler, batch delays) from the
        // environment itself. The exporter is made here, outside any span, so that its own HTTP
        // client does not trace the exports.
        let backend = try OTel.makeTracingBackend(configuration: otel)
        return Telemetry(tracer: withRequestIDs(backend.factory), service: backend.service)
    }

    private static func withRequestIDs(_ tracer: some Tracer) -> any Tracer { RequestIDTracer(base: tracer) }

    /// The span and request id of `context` (a request's, read when its transaction began) as
    /// text to store with queued work (an outbox mail, a job), so that the worker's span joins
    /// the trace of the request that queued it.
    func carried(_ context: InstrumentationContext?) -> String? {
        guard let tracer, let context else { return nil }
        var carrier: [String: String] = [:]
        tracer.inject(context, into: &carrier, using: DictionaryInjector())
        if let id = context.requestID { carrier[Self.requestIDKey] = id }
        guard !carrier.isEmpty, let data = try? JSONEncoder().encode(carrier) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// Runs `body` with the context `carried` stored as the current one (nothing when traces
    /// are off or nothing was stored).
    func restoring<T>(
        _ carried: String?, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        guard let tracer, let carried, let carrier = try? JSONDecoder().decode([String: String].self, from: Data(carried.utf8)) else {
            return try await body()
        }
        var context = InstrumentationContext.topLevel
        tracer.extract(carrier, into: &context, using: DictionaryExtractor())
        if let id = carrier[Self.requestIDKey], RequestIDMiddleware.isSafeID(id) { context.requestID = id }
        return try await InstrumentationContext.$current.withValue(context) { try await body() }
    }

    static let requestIDKey = "request_id"

    /// For JSON log lines: the request id of the request the line was written in (from any
    /// logger, not only the request's), and the trace and span ids when a span is current.
    static let logMetadata = Logger.MetadataProvider.multiplex([
        Logger.MetadataProvider {
            guard let id = InstrumentationContext.current?.requestID else { return [:] }
            return [requestIDKey: .string(id)]
        },
        OTel.makeLoggingMetadataProvider(),
    ])!
}

/// The request a piece of work belongs to, carried in the task's instrumentation context.
private enum RequestIDKey: InstrumentationContextKey {
    typealias Value = String
    static var nameOverride: String? { Telemetry.requestIDKey }
}

extension InstrumentationContext {
    /// The id of the request this work belongs to (`X-Request-Id`).
    var requestID: String? {
        get { self[RequestIDKey.self] }
        set { self[RequestIDKey.self] = newValue }
    }
}

/// A tracer that names, on every span it starts, the request the span belongs to: the spans
/// Gatehouse makes and those its HTTP client makes alike.
struct RequestIDTracer<Base: Tracer>: Tracer {
    typealias Span = Base.Span
    let base: Base

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> Base.Span {
        let parent = context()
        let span = base.startSpan(operationName, context: parent, ofKind: kind, at: instant(), function: function, file: fileID, line: line)
        if span.isRecording, let id = parent.requestID { span.attributes[Telemetry.requestIDKey] = id }
        return span
    }

    func activeSpan(identifiedBy context: InstrumentationContext) -> Base.Span? { base.activeSpan(identifiedBy: context) }

    /// Part of the deprecated tracer requirements; the exporter flushes on shutdown.
    func forceFlush() {}

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        base.extract(carrier, into: &context, using: extractor)
    }

    func inject<Carrier, Inject: Injector>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        base.inject(context, into: &carrier, using: injector)
    }
}

/// The trace context into and out of the dictionary stored with queued work (`carried`).
struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}
