import GatehouseStore
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// A request's whole body must arrive within `limit` of its head
/// (`GATEHOUSE_HTTP_BODY_TIMEOUT_SECONDS`), however it trickles in: in each connection's
/// pipeline, after the HTTP parts are decoded. A head that announces a body (a length over
/// zero, or a transfer coding) sets its moment; if the read the head came in ends before the
/// body does, a `Deadlines` entry (the one mechanism for time-outs) is added for that moment,
/// and the body's `.end` removes it. Past the moment, the connection's inbound stream is ended
/// with `RequestBodyTimedOut`: the read of the body throws it (`Request.collectBody` answers
/// 408), the answer is still written, and the connection then closes.
///
/// Not a task per request around the read (as before): a task made, run and awaited, with its
/// cancellation handler, for every request with a body, cost `POST /v1/entitlements/check` 5 to
/// 8 % of its CPU (BENCHMARKS.md, issue 61, step 21). A body that arrives with its head, as a
/// small JSON body does, costs nothing here but a reading of the clock.
final class BodyDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let deadlines: Deadlines
    let limit: Duration
    /// The moment of the body being read, if any.
    private var due: ContinuousClock.Instant?
    /// Its `Deadlines` entry, once the body outlasted the read its head came in.
    private var pending: UInt64?
    /// Which body of the connection is being read: each head that announces one counts one.
    private var generation: UInt64 = 0

    init(deadlines: Deadlines, limit: Duration) {
        self.deadlines = deadlines
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            stop()
            if Self.announcesBody(declaredLength: Self.declaredLength(head.headerFields), head.headerFields) {
                generation &+= 1
                due = .now + limit
            }
        case .body:
            break
        case .end:
            stop()
        }
        context.fireChannelRead(data)
    }

    /// The read ended with a body still to come: its time-out is kept from now on.
    func channelReadComplete(context: ChannelHandlerContext) {
        if let due, pending == nil { watch(until: due, context) }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { stop() }

    /// The `Content-Length` a request declares, if any.
    static func declaredLength(_ fields: HTTPFields) -> Int? { fields[.contentLength].flatMap(Int.init) }

    /// HTTP/1.1: without a length over zero (`declaredLength`, read once by each caller) or a
    /// transfer coding there is no body to wait for.
    static func announcesBody(declaredLength: Int?, _ fields: HTTPFields) -> Bool {
        declaredLength.map { $0 > 0 } ?? (fields[.transferEncoding] != nil)
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
/// (`BodyDeadlineHandler`).
struct RequestBodyTimedOut: Error {}
