import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The sessions of every account: refresh (rotation with reuse detection), logout, listing
/// and revoking them.
struct SessionService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdempotencyStore & SessionStore & RefreshTokenStore & PlanLedgerStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let sessions: SessionIssuer
    let tokens: AccessTokens
    let chains: RefreshChains
    let preset: Preset
    let clock: any WallClock

    // MARK: Refresh

    func refresh(_ token: String, client: ClientInfo) async throws -> SessionResponse {
        // The app's claims are asked before the rotation: a hook that fails leaves the token as
        // it was, to be tried again. A session with a kept answer finds it by its token; another
        // is read first (outside the rotation), and asked about only while it is live.
        var app: [String: JSONValue]?
        let hash = StoredSecret.hash(token)
        let claimsCache = sessions.hooks.claimsCache
        if sessions.hooks.settings[.customAccessToken] != nil {
            if let followed = claimsCache.session(following: hash), let kept = claimsCache.claims(of: followed, at: clock.now) {
                app = kept
            } else if let (_, session, user) = try await store.refreshLink(hash: hash), !session.isRevoked, !user.isDisabled {
                app = try await sessions.hooks.customClaims(for: user, session: session.id, occasion: .refresh, method: nil, client: client)
            }
        }
        let result = try await unitOfWork.run(client: client) { work in
            try await chains.rotate(work.narrowed { $0 }, token: token, owner: .app)
        }
        switch result {
        case .revoked:
            // Committed above: the revocation stands although this answer is an error.
            throw RefreshChains.sessionRevoked(because: SessionRevokeReason.refreshTokenReuse.rawValue)
        case .issued(let user, let session, let refresh):
            if app != nil { claimsCache.follow(StoredSecret.hash(refresh), to: session.id, replacing: hash) }
            return SessionResponse(session: try await sessions.payload(user, session: session, refreshToken: refresh, in: store, app: app))
        }
    }

    // MARK: Logout and the session list

    func logout(_ identity: AccessIdentity, scope: SignOutScope, client: ClientInfo) async throws {
        guard SignOutScope.all.contains(scope) else {
            throw GatehouseError.invalidRequest("The scope must be local, others or global.")
        }
        // The revocation and its audit row commit together: no crash between them leaves a
        // revocation unaudited.
        try await unitOfWork.run(client: client) { work in
            let (tx, now) = (work.tx, work.now)
            switch scope {
            case .local:
                _ = try await tx.revokeSession(identity.sessionID, reason: .logout, at: now)
            case .others:
                _ = try await tx.revokeSessions(of: identity.userID, keeping: identity.sessionID, reason: .logoutOthers, at: now)
            default:
                _ = try await tx.revokeSessions(of: identity.userID, keeping: nil, reason: .logoutGlobal, at: now)
                // Signed out everywhere means no replayed Idempotency-Key signs back in either.
                try await tx.deleteIdempotencyKeys(of: identity.userID)
            }
            try await work.audit(.logout, user: identity.userID, session: identity.sessionID, details: ["scope": scope.rawValue])
        }
    }

    func list(_ identity: AccessIdentity) async throws -> SessionsResponse {
        let now = clock.now
        let live = try await store.sessions(of: identity.userID).filter { $0.isLive(at: now, settings: preset.tokens) }
        return SessionsResponse(
            sessions: live.map { SessionInfo($0, current: identity.sessionID) })
    }

    func revoke(_ identity: AccessIdentity, id: String, client: ClientInfo) async throws {
        guard let sessionID = SessionID(id), let session = try await store.session(id: sessionID), session.userID == identity.userID,
            session.isLive(at: clock.now, settings: preset.tokens)
        else {
            throw GatehouseError.notFound("No such session.")
        }
        try await unitOfWork.run(client: client) { work in
            _ = try await work.tx.revokeSession(sessionID, reason: .revokedByUser, at: work.now)
            try await work.audit(.sessionRevoked, user: identity.userID, session: sessionID)
        }
    }

    var invalidRefreshToken: GatehouseError { RefreshChains.invalidRefreshToken }
}

/// Who a request's access token speaks for: the signature and claims (`AccessTokens`), then a
/// live session of an enabled account, so a revocation takes effect at once.
///
/// A class: every signed-in request's `WriteCondition` keeps it, and as a struct that was a copy
/// of every reference it holds (38 retains and as many releases a `/v1/me`, issue 61 step 19).
final class Authenticator: Sendable {
    let tokens: AccessTokens
    let store: any SessionStore & UserStore
    let preset: Preset
    let clock: any WallClock

    init(tokens: AccessTokens, store: any SessionStore & UserStore, preset: Preset, clock: any WallClock) {
        self.tokens = tokens
        self.store = store
        self.preset = preset
        self.clock = clock
    }

    /// The signed-in caller of a Bearer token. The request's `WriteCondition` records the
    /// session: every write the request makes holds it again (`hold(_:in:)`).
    func signedIn(token: String) async throws -> SignedIn {
        let identity = try await tokens.verify(token)
        let (user, session) = try await live(identity)
        WriteCondition.current?.record(identity, by: self)
        // Judged by what the token claims when that is less than the session holds now.
        return SignedIn(identity: identity, user: user, session: session.limited(by: identity.claimedAssurance))
    }

    /// The user behind a verified access token whose session is still live, and the session.
    /// A copy this node holds (PostgreSQL's `SessionCache`) answers when it passes the same
    /// checks (`accept`); anything it would refuse is read afresh, so a refusal never rests on a copy.
    func live(_ identity: AccessIdentity) async throws -> (User, Session) {
        if let cached = store.cachedSessionAndUser(id: identity.sessionID), let accepted = try? accept(cached, for: identity) {
            return accepted
        }
        return try accept(try await store.sessionAndUser(id: identity.sessionID), for: identity)
    }

    /// Inside a write's transaction, before anything is written: the account's row and the
    /// session's are locked until the commit (PostgreSQL; SQLite's writer already excludes every
    /// other write), and the session must still authenticate, its token unexpired, as at the
    /// request's check. A logout, reset or disabling either commits first, and this refuses, or
    /// waits for this commit.
    func hold(_ identity: AccessIdentity, in tx: any SessionStore) async throws {
        let found = try await tx.holdSession(identity.sessionID, of: identity.userID)
        _ = try accept(found, for: identity)
        guard identity.usableUntil > clock.now else { throw AccessTokens.expired }
    }

    /// The account and session of `identity` when that session can still authenticate.
    private func accept(_ found: (session: Session, user: User)?, for identity: AccessIdentity) throws -> (User, Session) {
        guard let (session, user) = found, session.userID == identity.userID else {
            throw GatehouseError.unauthorized("Your session has ended. Please sign in again.")
        }
        // A disabled account's sessions are revoked too; say why rather than just "ended".
        guard !user.isDisabled else { throw GatehouseError.accountDisabled(preset) }
        guard session.isLive(at: clock.now, settings: preset.tokens) else {
            throw GatehouseError.unauthorized("Your session has ended. Please sign in again.")
        }
        return (user, session)
    }
}
