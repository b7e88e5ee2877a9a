import GatehouseCore
import GatehouseWire
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
    /// What arrived of the body, taken from the connection (`WholeBodyHandler`) for each request
    /// in turn, here, where every request passes once; `WholeBodyMiddleware` hands it to the
    /// request. `nil` without a connection (in-process tests), where the request carries its body.
    var arrivedBody: ArrivedBody?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress
        arrivedBody = ArrivedBodies.current?.takeFirst()
    }
}

/// A verified access token and the live account it belongs to.
///
/// A class: the request's context is copied at every middleware and into the signed-in routes'
/// `AuthenticatedContext`, and as a struct each copy retained and released every reference an
/// account and a session hold (issue 61, step 19).
public final class SignedIn: Sendable {
    public let identity: AccessIdentity
    public let user: User
    /// The live session the token belongs to (its assurance level, its sign-in time).
    public let session: Session

    public init(identity: AccessIdentity, user: User, session: Session) {
        self.identity = identity
        self.user = user
        self.session = session
    }

    /// The same token and session with the account as read again.
    func with(_ user: User) -> SignedIn {
        SignedIn(identity: identity, user: user, session: session)
    }
}

extension GatehouseRequestContext {
    /// The template of the route that answered (`/v1/credits/{name}/spend`), once the router has
    /// matched; nil for a path no route matches (the router's own "NotFound" marker).
    var routeTemplate: String? {
        guard let path = endpointPath, path.hasPrefix("/") else { return nil }
        return path
    }
}

/// The context of routes that need a signed-in user (`SignedInRoutes`): made only from a
/// verified identity, so a handler behind it cannot forget the check.
public struct AuthenticatedContext: Sendable {
    public let coreContext: CoreRequestContextStorage
    public let signedIn: SignedIn
    public let requestID: String
    public let peerAddress: SocketAddress?

    public var identity: AccessIdentity { signedIn.identity }
    public var user: User { signedIn.user }
    /// The route's path parameters, as the router matched them.
    public var parameters: Parameters { coreContext.parameters }

    /// The request's context once `signedIn` has been checked for it.
    init(_ context: GatehouseRequestContext, signedIn: SignedIn) {
        coreContext = context.coreContext
        self.signedIn = signedIn
        requestID = context.requestID
        peerAddress = context.peerAddress
    }
}
