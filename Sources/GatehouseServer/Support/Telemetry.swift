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
    /// endpoint, else off; behind `GatehouseTracer`, so every span carries the request id of the
    /// request it belongs to, and traces start with the configuration's head share.
    static func make(config: GatehouseConfig, dependencies: AppDependencies, logger: Logger) throws -> Telemetry {
        if let tracer = dependencies.tracer { return Telemetry(tracer: wrap(tracer, config), service: nil) }
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
        return Telemetry(tracer: wrap(backend.factory, config), service: backend.service)
    }

    private static func wrap(_ tracer: some Tracer, _ config: GatehouseConfig) -> any Tracer {
        GatehouseTracer(base: tracer, headShare: config.tracesHeadShare)
    }

    /// The span and request id of `context` (a request's, read when its transaction began) as
    /// text to store with queued work (an outbox mail, a job), so that the worker's span joins
    /// the trace of the request that queued it, or stays untraced when the head sampler left
    /// that request out.
    func carried(_ context: InstrumentationContext?) -> String? {
        guard let tracer, let context else { return nil }
        var carrier: [String: String] = [:]
        tracer.inject(context, into: &carrier, using: DictionaryInjector())
        if let id = context.requestID { carrier[Self.requestIDKey] = id }
        if context.traceHead == .untraced { carrier[Self.untracedKey] = "1" }
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
        if carrier[Self.untracedKey] == "1" { context.traceHead = .untraced }
        return try await InstrumentationContext.$current.withValue(context) { try await body() }
    }

    static let requestIDKey = "request_id"
    /// In `carried`'s text: the head sampler left the queuing request out.
    static let untracedKey = "untraced"

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

/// The tracer every part of Gatehouse is given, around the real one (swift-otel's, or a test's):
///
/// - Every span it starts names the request it belongs to (`request_id`): Gatehouse's spans and
///   its HTTP client's alike.
/// - Head sampling (`GATEHOUSE_TRACES_SAMPLE_RATIO`, `headShare`): work that starts a trace of its
///   own (a request that came without a caller's trace, a background task) is traced with that
///   probability, decided here before the real tracer is asked. Work left out costs nothing
///   more: no span, no ids, no context, and nothing below it is traced either (its database
///   transactions, its hashes, the mail and the webhooks it queues). Work inside a trace (a
///   caller's, or one this tracer let through) always goes to the real tracer, whose own sampler
///   (`OTEL_TRACES_SAMPLER`) then decides as usual.
struct GatehouseTracer<Base: Tracer>: Tracer {
    typealias Span = GatehouseSpan<Base.Span>
    let base: Base
    /// The probability, from 0 to 1, that work with no trace above it starts one. 1: every
    /// time, and the real tracer alone decides.
    let headShare: Double
    /// A uniform draw from [0, 1): work starts a trace when it falls below `headShare`.
    let draw: @Sendable () -> Double

    init(base: Base, headShare: Double = 1, draw: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.base = base
        self.headShare = headShare
        self.draw = draw
    }

    var samplesHeads: Bool { headShare < 1 }

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> Span {
        let parent = context()
        if samplesHeads {
            switch parent.traceHead {
            case .untraced?: return .untraced(NoOpTracer.NoOpSpan(context: parent))
            case .traced?: break
            case nil:  // nothing above this span: it would start a trace
                if draw() >= headShare {
                    var untraced = parent
                    untraced.traceHead = .untraced
                    return .untraced(NoOpTracer.NoOpSpan(context: untraced))
                }
            }
        }
        let span = base.startSpan(operationName, context: parent, ofKind: kind, at: instant(), function: function, file: fileID, line: line)
        if span.isRecording, let id = parent.requestID { span.attributes[Telemetry.requestIDKey] = id }
        guard samplesHeads else { return .traced(span, context: span.context) }
        var traced = span.context
        traced.traceHead = .traced
        return .traced(span, context: traced)
    }

    func activeSpan(identifiedBy context: InstrumentationContext) -> Span? {
        base.activeSpan(identifiedBy: context).map { .traced($0, context: context) }
    }

    /// Part of the deprecated tracer requirements; the exporter flushes on shutdown.
    func forceFlush() {}

    /// The caller's trace context, when it sent one: then this work is inside a trace, and the
    /// real tracer's sampler follows the caller's decision.
    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        let before = context.count
        base.extract(carrier, into: &context, using: extractor)
        if samplesHeads, context.count > before { context.traceHead = .traced }
    }

    func inject<Carrier, Inject: Injector>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        base.inject(context, into: &carrier, using: injector)
    }
}

/// Whether the head sampler let a trace start above this work (`traced`) or left it out
/// (`untraced`); absent when nothing above it decided yet.
enum TraceHead: Sendable {
    case traced, untraced
}

private enum TraceHeadKey: InstrumentationContextKey {
    typealias Value = TraceHead
    static var nameOverride: String? { "gatehouse_trace_head" }
}

extension InstrumentationContext {
    var traceHead: TraceHead? {
        get { self[TraceHeadKey.self] }
        set { self[TraceHeadKey.self] = newValue }
    }
}

/// A span of `GatehouseTracer`: the real tracer's, with the context its children start from, or
/// none at all for work the head sampler left out.
enum GatehouseSpan<Base: Span>: Span {
    case traced(Base, context: InstrumentationContext)
    case untraced(NoOpTracer.NoOpSpan)

    var context: InstrumentationContext {
        switch self {
        case .traced(_, let context): context
        case .untraced(let span): span.context
        }
    }

    var operationName: String {
        get {
            switch self {
            case .traced(let span, _): span.operationName
            case .untraced(let span): span.operationName
            }
        }
        nonmutating set {
            if case .traced(let span, _) = self { span.operationName = newValue }
        }
    }

    var attributes: SpanAttributes {
        get {
            switch self {
            case .traced(let span, _): span.attributes
            case .untraced: [:]
            }
        }
        nonmutating set {
            if case .traced(let span, _) = self { span.attributes = newValue }
        }
    }

    var isRecording: Bool {
        if case .traced(let span, _) = self { return span.isRecording }
        return false
    }

    func setStatus(_ status: SpanStatus) {
        if case .traced(let span, _) = self { span.setStatus(status) }
    }

    func addEvent(_ event: SpanEvent) {
        if case .traced(let span, _) = self { span.addEvent(event) }
    }

    func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        if case .traced(let span, _) = self { span.recordError(error, attributes: attributes, at: instant()) }
    }

    func addLink(_ link: SpanLink) {
        if case .traced(let span, _) = self { span.addLink(link) }
    }

    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        if case .traced(let span, _) = self { span.end(at: instant()) }
    }
}

/// The trace context into and out of the dictionary stored with queued work (`carried`).
struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}
