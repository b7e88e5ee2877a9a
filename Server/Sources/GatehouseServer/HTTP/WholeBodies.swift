import GatehouseCore
import GatehouseStore
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// What arrived of a request's body by the time its head is handed to the application, one for
/// every head a connection hands on (`ArrivedBodies`).
enum ArrivedBody: Sendable {
    /// The head announced no body (no length over zero, no transfer coding).
    case noBody
    /// All of it, within its route's limit and in time.
    case whole(ByteBuffer)
    /// More than `limit` bytes: declared so, or counted as they came (413).
    case tooLarge(limit: Int)
    /// Not all of it within `GATEHOUSE_HTTP_BODY_TIMEOUT_SECONDS` of its head (408).
    case timedOut
    /// The connection ended before the body did (`ClientWentAway`): a part of a body is never
    /// taken for the whole.
    case clientWentAway
}

/// One connection's arrived bodies, in the order of the heads handed on: `WholeBodyHandler` adds
/// one before it hands a head on, and each request's context takes the first
/// (`GatehouseRequestContext.init`), on the connection's task, where `current` is bound.
/// Pipelined requests queue here behind the one being answered.
final class ArrivedBodies: Sendable {
    @TaskLocal static var current: ArrivedBodies?

    private let queue = Mutex(CircularBuffer<ArrivedBody>(initialCapacity: 2))

    func append(_ body: ArrivedBody) { queue.withLock { $0.append(body) } }

    /// The body of the oldest head not yet taken.
    func takeFirst() -> ArrivedBody? { queue.withLock { $0.popFirst() } }
}

/// Reads each request's whole body in the connection's pipeline, before its head is handed to
/// the application: a head that announces a body is held until the body's end, then handed on
/// with its `ArrivedBody` (and its `.end`; the body's parts are not). So the application takes a
/// body that has arrived without reading the connection's stream (a body read through
/// Hummingbird's and NIO's async iterators cost `POST /v1/entitlements/check` about 25 task
/// switches: BENCHMARKS.md, issue 61, step 23), and a caller is authenticated after its body has
/// arrived, never before (finding 1 of issue 40).
///
/// The body's limits are kept here:
/// - Its size: `BodyLimits` for the head's path. A declared length over it hands the head on at
///   once as `.tooLarge`; a body that grows past it does so when it does. The rest is dropped.
/// - Its time: it must all arrive within `limit` of its head (`GATEHOUSE_HTTP_BODY_TIMEOUT_SECONDS`),
///   however it trickles in. If the read the head came in ends before the body does, a `Deadlines`
///   entry (the one mechanism for time-outs) is added for that moment, and the body's `.end`
///   removes it. Past the moment, a held head is handed on as `.timedOut` and the connection's
///   inbound stream is ended with `RequestBodyTimedOut`: the 408 is still written, and the
///   connection then closes. A body that arrives in the read its head came in, as a small
///   JSON body does, costs no `Deadlines` entry, only a reading of the clock.
///
/// A connection whose input ends with a head held (the client went away, the connection broke, a
/// malformed body) hands it on as `.clientWentAway`: answered 400 and counted by
/// `AbortedRequests`, not a failure of the server; a part of a body is never taken for the whole.
final class WholeBodyHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let deadlines: Deadlines
    let limit: Duration
    let limits: BodyLimits
    let bodies = ArrivedBodies()

    private enum State {
        /// Between requests, or reading one whose head is handed on (no body, or a dropped one).
        case passing
        /// A head held until its body, of at most `limit` bytes, has all arrived.
        case collecting(HTTPRequest, body: ByteBuffer?, limit: Int)
        /// The rest of a body over its limit, dropped until its end.
        case dropping
    }

    private var state = State.passing
    /// The moment of the body being read, if any.
    private var due: ContinuousClock.Instant?
    /// Its `Deadlines` entry, once the body outlasted the read its head came in.
    private var pending: UInt64?
    /// Which body of the connection is being read: each head that announces one counts one.
    private var generation: UInt64 = 0

    init(deadlines: Deadlines, limit: Duration, limits: BodyLimits) {
        self.deadlines = deadlines
        self.limit = limit
        self.limits = limits
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            stop()
            let declared = Self.declaredLength(head.headerFields)
            guard Self.announcesBody(declaredLength: declared, head.headerFields) else {
                return hand(head, .noBody, context)
            }
            generation &+= 1
            due = .now + limit
            let max = limits.limit(forPath: URI(head.path ?? "/").path)
            guard declared.map({ $0 <= max }) ?? true else { return drop(head, .tooLarge(limit: max), context) }
            state = .collecting(head, body: nil, limit: max)
        case .body(var part):
            guard case .collecting(let head, var body, let max) = state else { return }
            state = .passing  // so that `body` is the buffer's one reference while it grows
            guard (body?.readableBytes ?? 0) + part.readableBytes <= max else { return drop(head, .tooLarge(limit: max), context) }
            if body == nil { body = part } else { body?.writeBuffer(&part) }
            state = .collecting(head, body: body, limit: max)
        case .end:
            stop()
            if case .collecting(let head, let body, _) = state { hand(head, .whole(body ?? ByteBuffer()), context) }
            state = .passing
            context.fireChannelRead(data)
        }
    }

    /// The read ended with a body still to come: its time-out is kept from now on.
    func channelReadComplete(context: ChannelHandlerContext) {
        if let due, pending == nil { watch(until: due, context) }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        abandon(context)
        context.fireChannelInactive()
    }

    /// The client closed its side, or the connection broke, or the decoder found the request
    /// malformed: a held head goes on as `.clientWentAway`, then what ended the input.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed? = event as? ChannelEvent { abandon(context) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        abandon(context)
        context.fireErrorCaught(error)
    }

    func handlerRemoved(context: ChannelHandlerContext) { stop() }

    /// The `Content-Length` a request declares, if any.
    static func declaredLength(_ fields: HTTPFields) -> Int? { fields[.contentLength].flatMap(Int.init) }

    /// HTTP/1.1: without a length over zero (`declaredLength`, read once by each caller) or a
    /// transfer coding there is no body to wait for.
    static func announcesBody(declaredLength: Int?, _ fields: HTTPFields) -> Bool {
        declaredLength.map { $0 > 0 } ?? (fields[.transferEncoding] != nil)
    }

    /// Hands a head on with what arrived of its body, in that order: its context takes the body
    /// when the application reads the head.
    private func hand(_ head: HTTPRequest, _ body: ArrivedBody, _ context: ChannelHandlerContext) {
        bodies.append(body)
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    private func abandon(_ context: ChannelHandlerContext) {
        stop()
        if case .collecting(let head, _, _) = state { hand(head, .clientWentAway, context) }
        state = .passing
    }

    /// Hands a head on without its body, whose rest is dropped until its end.
    private func drop(_ head: HTTPRequest, _ body: ArrivedBody, _ context: ChannelHandlerContext) {
        state = .dropping
        hand(head, body, context)
    }

    private func watch(until moment: ContinuousClock.Instant, _ context: ChannelHandlerContext) {
        let (loop, body) = (context.eventLoop, generation)
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
        pending = deadlines.add(at: moment) {
            loop.execute {
                let (handler, context) = bound.value
                // The body may have ended while this hop was on its way: its `.end` ran first
                // on this loop and removed the entry, so nothing is ended.
                guard handler.pending != nil, handler.generation == body else { return }
                handler.stop()
                if case .collecting(let head, _, _) = handler.state { handler.drop(head, .timedOut, context) }
                context.fireErrorCaught(RequestBodyTimedOut())
            }
        }
    }

    private func stop() {
        due = nil
        guard let id = pending else { return }
        pending = nil
        deadlines.remove(id)
    }
}

/// A request's body did not all arrive within `GATEHOUSE_HTTP_BODY_TIMEOUT_SECONDS` of its head
/// (`WholeBodyHandler`).
struct RequestBodyTimedOut: Error {}

extension GatehouseError {
    /// 408 `request_timeout`: what the client is told of a `RequestBodyTimedOut`.
    static var bodyTimedOut: GatehouseError {
        GatehouseError(status: 408, code: .requestTimeout, message: "The request body did not arrive in time.")
    }
}

/// Gatehouse's HTTP/1.1 connections: Hummingbird's `HTTP1Channel` with a `WholeBodyHandler` put
/// last before the application's stream (after Hummingbird's connection-state handler, whose idle
/// time-out must see every part of a request arrive), and each connection's task bound to that
/// handler's `ArrivedBodies`.
struct WholeBodyChannel: ServerChildChannel, HTTPChannelHandler {
    struct Value: ServerChildChannelValue {
        let stream: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>
        let bodies: ArrivedBodies
        var channel: any Channel { stream.channel }
    }

    let http1: HTTP1Channel
    let makeHandler: @Sendable () -> WholeBodyHandler

    var responder: HTTPChannelHandler.Responder { http1.responder }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        http1.setup(channel: channel, logger: logger).flatMapThrowing { [makeHandler] stream in
            let pipeline = channel.pipeline.syncOperations
            let handler = makeHandler()
            try pipeline.addHandler(handler, position: .after(try pipeline.handler(type: HTTPConnectionStateHandler.self)))
            return Value(stream: stream, bodies: handler.bodies)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await ArrivedBodies.$current.withValue(value.bodies) {
            await handleHTTP(asyncChannel: value.stream, logger: logger)
        }
    }
}
