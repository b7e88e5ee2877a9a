import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import Synchronization

/// The session a request authenticated as, made a condition of every write the request makes:
/// `UnitOfWork` holds it at the start of each transaction (the account's row, then the session's,
/// locked until the commit) and refuses the write if it is no longer live, its account is
/// disabled, or its access token has expired since the request was checked.
///
/// One per request, opened by `WholeBodyMiddleware` before anything reads the request;
/// `Authenticator.signedIn` records the session into it, wherever a route authenticates (the
/// signed-in routes, an optional Bearer, `/auth/v1`). A write without a recorded session (a
/// sign-in, a link, an operator's call) carries no condition of this kind.
final class WriteCondition: Sendable {
    @TaskLocal static var current: WriteCondition?

    private let recorded = Mutex<Recorded?>(nil)

    struct Recorded: Sendable {
        let identity: AccessIdentity
        let authenticator: Authenticator
    }

    /// The first session a request authenticates as is its condition. (A request with no
    /// Bearer that opens a session and then reads it, as `/auth/v1/signup` does to apply its
    /// metadata, is held to that new session.)
    func record(_ identity: AccessIdentity, by authenticator: Authenticator) {
        recorded.withLock { if $0 == nil { $0 = Recorded(identity: identity, authenticator: authenticator) } }
    }

    var session: Recorded? { recorded.withLock { $0 } }
}

extension WriteCondition.Recorded {
    /// Inside a transaction, before its first write: the session still authenticates, held so
    /// until the commit.
    func hold(in tx: any SessionStore) async throws {
        try await authenticator.hold(identity, in: tx)
    }
}
