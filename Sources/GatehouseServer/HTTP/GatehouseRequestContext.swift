import Hummingbird
import NIOCore

/// The context of every request: its id (also sent as `X-Request-Id` and put in every log
/// line) and the socket peer, from which the client IP is derived.
public struct GatehouseRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Set by `RequestIDMiddleware` before anything else runs.
    public var requestID: String = ""
    /// The TCP peer; `nil` in in-process tests.
    public let peerAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress
    }
}
