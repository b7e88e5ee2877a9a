import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Tracing

/// Gives every request an id (the caller's `X-Request-Id` when it is a sane token, else a new
/// one), puts it in the logger, in the task's instrumentation context (so every log line and
/// span of the request carries it) and on the response, and writes one access-log line. The
/// path is logged without its query string, where a link token could sit.
///
/// With traces on, the request is a server span named `METHOD /route/{template}`, a child of the
/// caller's W3C `traceparent` when one came; a 5xx answer marks it failed. Its attributes are
/// the method, the route template and the status: never the path as sent (a handle or an id
/// may sit in it), the query string or a header's value.
struct RequestIDMiddleware: RouterMiddleware {
    typealias Context = GatehouseRequestContext
    var tracer: (any Tracer)? = nil

    /// 8–128 ASCII letters, digits, `-` and `_`: safe to echo and to log.
    static func isSafeID(_ text: String) -> Bool {
        isBase64URLText(text, lengths: 8...128)
    }

    /// A new id in a UUID's lowercase form, from 122 random bits (`SecureRandom`, one call), written
    /// by `UUIDText` rather than Foundation's string formatting (a visible part of every request's
    /// cost, issue 47).
    static func newID() -> String {
        UUIDText.lowercase(SecureRandom.uuid())
    }

    func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let id: String
        if let incoming = request.headers[.requestID], Self.isSafeID(incoming) {
            id = incoming
        } else {
            id = Self.newID()
        }
        context.requestID = id
        context.logger[metadataKey: "request_id"] = .string(id)
        var instrumentation = InstrumentationContext.current ?? .topLevel
        instrumentation.requestID = id
        guard let tracer else {
            return try await InstrumentationContext.$current.withValue(instrumentation) {
                try await respond(request, context, id: id, next: next)
            }
        }
        tracer.extract(request.headers, into: &instrumentation, using: HTTPFieldsExtractor())
        let method = request.method.label
        let span = tracer.startSpan(method, context: instrumentation, ofKind: .server)
        defer { span.end() }
        let response: Response
        do {
            response = try await InstrumentationContext.$current.withValue(span.context) {
                try await respond(request, context, id: id, next: next)
            }
        } catch {
            span.attributes["http.request.method"] = method
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
            throw error
        }
        // A span the sampler dropped records nothing: its name and attributes are not built.
        guard span.isRecording else { return response }
        // The router has matched by now; an unmatched path keeps the bare method.
        let route = context.routeTemplate
        if let route { span.operationName = "\(method) \(route)" }
        span.updateAttributes { attributes in
            attributes["http.request.method"] = method
            attributes["http.route"] = route
            attributes["http.response.status_code"] = Int(response.status.code)
        }
        if response.status.code >= 500 { span.setStatus(SpanStatus(code: .error)) }
        return response
    }

    private func respond(
        _ request: Request, _ context: Context, id: String, next: @concurrent (Request, Context) async throws -> Response
    ) async throws -> Response {
        // The access line is at info: below that level (the production default is info, a busy
        // node may run at warning) nothing of it is built, not even its clock reading.
        guard context.logger.logLevel <= .info else {
            var response = try await next(request, context)
            response.headers[.requestID] = id
            return response
        }
        let started = ContinuousClock.now
        context.logger.debug("request received", metadata: ["method": .string(request.method.rawValue), "path": .string(request.uri.path)])
        var response = try await next(request, context)
        response.headers[.requestID] = id
        let elapsed = (ContinuousClock.now - started).components
        let milliseconds = Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15
        var fields: Logger.Metadata = [:]
        fields["method"] = .string(request.method.rawValue)
        fields["path"] = .string(request.uri.path)
        fields["status"] = .stringConvertible(response.status.code)
        fields["duration_ms"] = .stringConvertible((milliseconds * 100).rounded() / 100)
        context.logger.info("request", metadata: fields)
        return response
    }
}

extension HTTPRequest.Method {
    /// The method for a metric's label or a span's name: the standard ones by name, any other
    /// (a client may send any token) as `_OTHER`, so no client can add series.
    var label: String {
        switch self {
        case .get, .head, .post, .put, .patch, .delete, .options: return rawValue
        default: return "_OTHER"
        }
    }
}

/// Reads `traceparent` and `tracestate` from a request's header fields.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from carrier: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { carrier[$0] }
    }
}

/// Turns every failure into the contract's error shape. Internal causes are logged, never
/// sent; anything unexpected is a 500 `internal_error` with a generic message.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = GatehouseRequestContext
    let internalMessage: String
    let aborted: AbortedRequests

    func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let mapped = mapAndLog(error, logger: context.logger)
            var headers: HTTPFields = [:]
            if let retryAfter = mapped.retryAfter { headers[.retryAfter] = String(retryAfter) }
            headers[.cacheControl] = "no-store"
            // The OpenID provider's routes answer in OAuth's shape whatever refused the request
            // (a body over the limit, a slow body): relying parties' libraries read that one.
            if request.uri.path.hasPrefix("/oauth/") {
                let code =
                    switch mapped.status {
                    case 503: "temporarily_unavailable"
                    case 500...: "server_error"
                    default: "invalid_request"
                    }
                return try JSONBody.response(
                    ["error": code, "error_description": mapped.message], status: .init(code: mapped.status), headers: headers)
            }
            return try JSONBody.response(
                ErrorBody(error: mapped.payload), status: .init(code: mapped.status), headers: headers)
        }
    }

    /// `map`, with the cause logged: at error level for a failure of ours, at debug for a refusal.
    /// A client that went away before its body arrived is counted (`AbortedRequests`), not
    /// logged as a failure; its 400 only keeps the pipeline's bookkeeping simple.
    func mapAndLog(_ error: any Error, logger: Logger) -> GatehouseError {
        if let gone = error as? ClientWentAway {
            aborted.record(gone.cause, logger: logger)
            return .invalidRequest("The request body did not arrive.")
        }
        let mapped = map(error)
        if mapped.status >= 500 {
            logger.error(
                "request failed",
                metadata: ["error_code": .string(mapped.code.rawValue), "cause": .string(String(describing: mapped.underlying ?? error))])
        } else if let underlying = mapped.underlying {
            logger.debug("request refused", metadata: ["error_code": .string(mapped.code.rawValue), "cause": .string("\(underlying)")])
        }
        return mapped
    }

    /// Any error as the one error type: store and router errors get their contract codes, the
    /// rest become `internal_error` (the cause kept for the log).
    func map(_ error: any Error) -> GatehouseError {
        switch error {
        case let error as GatehouseError:
            return error
        case let error as StoreError:
            switch error {
            case .unavailable, .conflict: return .serviceUnavailable(error)
            default: return .internalError(error, message: internalMessage)
            }
        case let error as HTTPError:
            switch error.status {
            case .notFound:
                return GatehouseError(status: 404, code: .notFound, message: "There is nothing at this address.")
            case .methodNotAllowed:
                return GatehouseError(status: 405, code: .methodNotAllowed, message: "This method is not allowed here.")
            case .contentTooLarge:
                return GatehouseError(status: 413, code: .payloadTooLarge, message: "The request body is too large.")
            case .badRequest:
                return .invalidRequest("The request is not valid.")
            case .unauthorized:
                return .unauthorized()
            default:
                if error.status.code < 500 {
                    return GatehouseError(status: Int(error.status.code), code: .invalidRequest, message: "The request was refused.", underlying: error)
                }
                return .internalError(error, message: internalMessage)
            }
        default:
            return .internalError(error, message: internalMessage)
        }
    }
}

/// How large a request body may be: `GATEHOUSE_MAX_BODY_BYTES` for every route but those where a
/// payment source posts what it decides. A genuine Stripe event carries whole objects and may be
/// well over 64 KiB (a 75 KB `customer.subscription.deleted` was refused, and the account kept
/// its plan: issue 59, finding 4); such a route takes up to 1 MiB (or the configured limit, if
/// larger), its signature still checked before anything in it is read.
struct BodyLimits: Sendable {
    let general: Int
    static let paymentSource = 1 << 20

    /// The routes a payment source posts to, one per source that posts.
    static let paymentSourcePaths: Set<String> = [
        Endpoints.stripeWebhook.path.template, Endpoints.appStoreNotification.path.template, Endpoints.googlePlayWebhook.path.template,
    ]

    func limit(forPath path: String) -> Int {
        Self.paymentSourcePaths.contains(path) ? max(general, Self.paymentSource) : general
    }
}

/// Gives each request its whole body before anything else looks at the request, so a caller is
/// authenticated after its body has arrived, never before (finding 1 of issue 40: a request whose
/// headers passed the token check could hold its body back past a logout, then write). The body
/// must arrive within `GATEHOUSE_HTTP_BODY_TIMEOUT_SECONDS` of the head, however slowly it
/// trickles in (408 `request_timeout`), and within its `BodyLimits` (413, at once for a declared
/// length over it). On a connection, `WholeBodyHandler` has read it and kept both limits, and
/// the request's context holds what arrived; in-process tests, without a connection, read the
/// body the request carries here, within the same size limit.
///
/// A body it has is bound as `WholeRequestBody.current` for the rest of the request, where
/// `Request.collectBody` takes it as it is, without awaiting a stream.
///
/// It also opens the request's `WriteCondition`: the session the request later authenticates as,
/// which every transaction it writes in holds until the commit (`UnitOfWork`).
struct WholeBodyMiddleware: RouterMiddleware {
    typealias Context = GatehouseRequestContext
    let limits: BodyLimits

    func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        var (request, context) = (request, context)
        let whole: ByteBuffer?
        switch context.arrivedBody {
        case .whole(let body): whole = body
        case .noBody: whole = nil
        case .tooLarge(let limit): throw GatehouseError.payloadTooLarge(limit: limit)
        case .timedOut: throw GatehouseError.bodyTimedOut
        case .clientWentAway: throw ClientWentAway(cause: ChannelError.eof)
        case nil:
            // No connection (in-process tests): the same limit, on the body the request carries.
            let limit = limits.limit(forPath: request.uri.path)
            let declared = WholeBodyHandler.declaredLength(request.headers)
            if let declared, declared > limit { throw GatehouseError.payloadTooLarge(limit: limit) }
            whole = WholeBodyHandler.announcesBody(declaredLength: declared, request.headers)
                ? try await request.collectBody(limit: limit) : nil
        }
        context.arrivedBody = nil
        if let whole { request.body = RequestBody(buffer: whole) }
        return try await WriteCondition.$current.withValue(WriteCondition()) {
            guard let whole else { return try await next(request, context) }
            return try await WholeRequestBody.$current.withValue(whole) { try await next(request, context) }
        }
    }
}

/// Headers every response carries: API answers are never cached (they hold tokens and
/// personal data) and never sniffed.
struct SecurityHeadersMiddleware: RouterMiddleware {
    typealias Context = GatehouseRequestContext
    let hsts: Bool

    func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        response.headers[.xContentTypeOptions] = "nosniff"
        // The OpenID provider's pages ask for `same-origin`, so their form posts name their origin.
        if response.headers[.referrerPolicy] == nil { response.headers[.referrerPolicy] = "no-referrer" }
        if hsts { response.headers[.strictTransportSecurity] = "max-age=31536000; includeSubDomains" }
        return response
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
    static let xContentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    static let strictTransportSecurity = HTTPField.Name("Strict-Transport-Security")!
    static let transferEncoding = HTTPField.Name("Transfer-Encoding")!
}

/// Counts every answered request and times it for `GET /metrics`, by the route's template (the
/// raw path could hold ids and tokens). Outermost, so it sees the status the client gets.
struct MetricsMiddleware: RouterMiddleware {
    typealias Context = GatehouseRequestContext
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let status: Int
        do {
            let response = try await next(request, context)
            status = response.status.code
            record(request, context, status: status, started: started)
            return response
        } catch {
            status = (error as? any HTTPResponseError)?.status.code ?? 500
            record(request, context, status: status, started: started)
            throw error
        }
    }

    private func record(_ request: Request, _ context: Context, status: Int, started: ContinuousClock.Instant) {
        // Unmatched paths share one series rather than one per probe.
        let route = context.routeTemplate ?? "unmatched"
        metrics.request(method: request.method.label, route: route, status: status, duration: ContinuousClock.now - started)
    }
}
