import Foundation
import GatehouseCore

/// Sessions: opened, read, held inside a write, touched and revoked.
public protocol SessionStore: Sendable {
    func insertSession(_ session: Session) async throws(StoreError)
    func session(id: SessionID) async throws(StoreError) -> Session?
    /// A session and its account, read together (one query: every Bearer request needs both).
    func sessionAndUser(id: SessionID) async throws(StoreError) -> (session: Session, user: User)?
    /// Inside a transaction: locks the account's row, then the session's against changes (a
    /// revocation waits for the commit), and reads both afresh. PostgreSQL row locks; SQLite's
    /// single writer already holds off every other write.
    func holdSession(_ id: SessionID, of userID: UserID) async throws(StoreError) -> (session: Session, user: User)?
    /// This node's recent copy of a session and its account, when one may be served
    /// (`SessionCache`); nil sends the caller to ``sessionAndUser(id:)``.
    func cachedSessionAndUser(id: SessionID) -> (session: Session, user: User)?
    /// Live and ended sessions of a user, newest first.
    func sessions(of userID: UserID) async throws(StoreError) -> [Session]
    /// One page of them, newest first: at most `limit` (1 to 1,000) created before `before`.
    func sessions(of userID: UserID, before: RowCursor?, limit: Int) async throws(StoreError) -> [Session]
    /// Whether the user has had any session, and any from `userAgent` (`nil` matches `nil`).
    func sessionHistory(of userID: UserID, userAgent: String?) async throws(StoreError) -> (any: Bool, fromAgent: Bool)
    func touchSession(_ id: SessionID, at date: Date) async throws(StoreError)
    /// Revokes one session; false when it was already revoked or does not exist.
    func revokeSession(_ id: SessionID, reason: SessionRevokeReason, at date: Date) async throws(StoreError) -> Bool
    /// Revokes every live session of a user except `keeping`; returns the ones it revoked.
    func revokeSessions(of userID: UserID, keeping: SessionID?, reason: SessionRevokeReason, at date: Date) async throws(StoreError) -> [SessionID]
    /// Revokes every live session of a user opened with `provider`.
    func revokeSessions(of userID: UserID, provider: String, reason: SessionRevokeReason, at date: Date) async throws(StoreError) -> [SessionID]
}

/// A session's assurance level: raised by a second factor, lowered when the last one goes.
public protocol SessionAssuranceStore: Sendable {
    /// Raises a live session to `aal2` with the second factor just verified; false when the
    /// session is gone or revoked.
    func stepUpSession(_ id: SessionID, factor: String, at date: Date) async throws(StoreError) -> Bool
    /// Every session of the user that a second factor raised goes back to `aal1` (its last
    /// factor was removed); how many.
    func lowerSessions(of userID: UserID) async throws(StoreError) -> Int
}

/// Refresh-token chains: each token rotates once.
public protocol RefreshTokenStore: Sendable {
    func insertRefreshToken(_ token: RefreshTokenRecord) async throws(StoreError)
    /// The token with this hash; inside a transaction on PostgreSQL the row is locked until
    /// the transaction ends, so concurrent refreshes of one token are serialised.
    func refreshToken(hash: [UInt8]) async throws(StoreError) -> RefreshTokenRecord?
    /// The token with this hash, its session and the session's account in one read (a refresh's
    /// first step); the token's row locked as `refreshToken(hash:)` locks it.
    func refreshLink(hash: [UInt8]) async throws(StoreError) -> (token: RefreshTokenRecord, session: Session, user: User)?
    func markRefreshTokenRotated(hash: [UInt8], at date: Date) async throws(StoreError)
    /// Marks every unrotated refresh token of the session rotated (a step-up hands out a new
    /// chain, so a token from before it cannot be rotated again).
    func retireRefreshTokens(of session: SessionID, at date: Date) async throws(StoreError)
}

/// Counters for login lockout and per-IP limits; in the database so that every node sees them.
/// Their writes on their own go through `SQLExecutor.queryUnflushed`: on SQLite they commit
/// without waiting for the disk, so a power cut may give back the last few counts and a crash of
/// the process none; within a caller's transaction, and on PostgreSQL, they commit as any write.
public protocol ThrottleStore: Sendable {
    func throttle(key: String) async throws(StoreError) -> ThrottleState?
    /// Reserves one attempt on `key` in one atomic statement, before the work it limits: while
    /// the key is locked nothing is counted and `.locked` comes back; otherwise the attempt
    /// counts as a failure at once, and the attempt that reaches the schedule's threshold locks
    /// the key in the same statement. Any number of parallel callers therefore get at most the
    /// threshold's worth of attempts between locks. A success undoes it with `clearThrottle`.
    func reserveAttempt(key: String, at date: Date, schedule: LockSchedule) async throws(StoreError) -> AttemptReservation
    func clearThrottle(key: String) async throws(StoreError)
    /// Clears `key`'s count only while it holds no lock at `date`, in one statement: a success
    /// that must not lift a lock already taken (an SMS delivered to a paused number, issue 58).
    func clearThrottleUnlessLocked(key: String, at date: Date) async throws(StoreError)
    /// Adds one hit to `key` in the window starting at `windowStart` and returns the window's count.
    func hitRateLimit(key: String, windowStart: Int64) async throws(StoreError) -> Int
    /// The window's count without adding to it.
    func rateLimitCount(key: String, windowStart: Int64) async throws(StoreError) -> Int
}
