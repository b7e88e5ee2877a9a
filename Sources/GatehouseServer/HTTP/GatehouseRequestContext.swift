import GatehouseCore
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
    var storage = Storage()

    struct Storage: Sendable {
        var identity: AccessIdentity?
    }

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress
    }
}

extension GatehouseRequestContext {
    /// Set by `AccessTokenMiddleware` once the bearer token checks out.
    public var identity: AccessIdentity? {
        get { storage.identity }
        set { storage.identity = newValue }
    }
}

/// The context of routes that need a signed-in user: it cannot be made without a verified
/// identity, so a handler behind it cannot forget the check.
public struct AuthenticatedContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let identity: AccessIdentity
    public let requestID: String
    public let peerAddress: SocketAddress?

    public init(context: GatehouseRequestContext) throws {
        guard let identity = context.identity else { throw GatehouseError.unauthorized() }
        coreContext = context.coreContext
        self.identity = identity
        requestID = context.requestID
        peerAddress = context.peerAddress
    }
}
