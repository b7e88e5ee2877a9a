import Tracing

/// Runs `body` inside a span of `tracer` named `name`, a child of the task's current span; with
/// no tracer (traces off) it just runs `body`. The span is the task's current one while `body`
/// runs, so spans and log lines inside it are its children; a thrown error marks it failed.
///
/// `attributes` are set when the span starts (and not even computed with traces off, or when the
/// sampler dropped the span); they never hold a secret.
public func traced<T>(
    _ tracer: (any Tracer)?, _ name: String, kind: SpanKind = .internal, attributes: @autoclosure () -> SpanAttributes = [:],
    isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
) async rethrows -> T {
    guard let tracer else { return try await body() }
    let span = tracer.startSpan(name, context: InstrumentationContext.current ?? .topLevel, ofKind: kind)
    if span.isRecording {
        let attributes = attributes()
        if !attributes.isEmpty { span.updateAttributes { $0.merge(attributes) } }
    }
    defer { span.end() }
    do {
        return try await InstrumentationContext.$current.withValue(span.context) { try await body() }
    } catch {
        span.recordError(error)
        span.setStatus(SpanStatus(code: .error))
        throw error
    }
}
