import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Who a refresh token must belong to: the app's own sessions (`/v1/auth/refresh`,
/// `/auth/v1/token`) or one OpenID client's (`/oauth/token`). A token presented at the other
/// door is unknown there, never "reused": the chain it belongs to stays as it was.
enum RefreshOwner: Sendable, Equatable {
    case app
    case client(String)

    func owns(_ session: Session) -> Bool {
        switch self {
        case .app: session.clientID == nil
        case .client(let id): session.clientID == id
        }
    }
}

/// Rotation of refresh tokens with reuse detection, the one place for every kind of session:
/// a token rotates once; presented again within the preset's interval it gets the very same
/// successor; after it, the session (the whole family) is revoked.
struct RefreshChains: Sendable {
    let tokens: AccessTokens
    let preset: Preset

    typealias Rotating = any UserStore & SessionStore & RefreshTokenStore

    enum Outcome: Sendable {
        case issued(User, Session, String)
        /// The reuse revoked the session (committed with the caller's unit of work).
        case revoked
    }

    /// Rotates `token` of `owner`'s inside the caller's unit of work.
    func rotate(_ work: Work<Rotating>, token: String, owner: RefreshOwner) async throws -> Outcome {
        let (tx, now) = (work.tx, work.now)
        let hash = StoredSecret.hash(token)
        // The token, its session and its account in one read (issue 61: two statements fewer).
        guard let (record, session, user) = try await tx.refreshLink(hash: hash), owner.owns(session) else {
            throw Self.invalidRefreshToken
        }
        switch RefreshRotationPolicy.decide(token: record, session: session, now: now, settings: preset.tokens) {
        case .expired:
            guard session.isRevoked else { throw Self.invalidRefreshToken }
            // Disabling ends every session; the app still learns why.
            if user.isDisabled { throw GatehouseError.accountDisabled(preset) }
            throw Self.sessionRevoked(because: session.revokedReason)
        case .reuseDetected:
            _ = try await tx.revokeSession(session.id, reason: .refreshTokenReuse, at: now)
            var details: [String: String] = [:]
            if let client = session.clientID { details["client_id"] = client }
            try await work.audit(.refreshReuseDetected, .sessionRevoked, user: session.userID, session: session.id, details: details)
            return .revoked
        case .repeatSuccessor:
            let successor = try tokens.successor(of: token)
            guard try await tx.refreshToken(hash: StoredSecret.hash(successor)) != nil else { throw Self.invalidRefreshToken }
            return .issued(try live(user), session, successor)
        case .rotate:
            let successor = try tokens.successor(of: token)
            try await tx.markRefreshTokenRotated(hash: hash, at: now)
            try await tx.insertRefreshToken(
                RefreshTokenRecord(
                    hash: StoredSecret.hash(successor), sessionID: session.id, issuedAt: now,
                    expiresAt: now.addingTimeInterval(TimeInterval(preset.tokens.refreshTokenTTLSeconds))))
            try await tx.touchSession(session.id, at: now)
            return .issued(try live(user), session, successor)
        }
    }

    private func live(_ user: User) throws -> User {
        guard !user.isDisabled else { throw GatehouseError.accountDisabled(preset) }
        return user
    }

    static var invalidRefreshToken: GatehouseError {
        GatehouseError(status: 401, code: .invalidRefreshToken, message: "This session is no longer valid. Please sign in again.")
    }
    /// `session_revoked`, with why the session ended as `details.reason` (its row's
    /// `revoked_reason`: `refresh_token_reuse`, `logout_global`, `password_reset`, …), so an app
    /// can say why its person was signed out (issue 64).
    static func sessionRevoked(because reason: String?) -> GatehouseError {
        GatehouseError(
            status: 401, code: .sessionRevoked, message: "This session has been signed out. Please sign in again.",
            details: reason.map { ["reason": .string($0)] })
    }
}
