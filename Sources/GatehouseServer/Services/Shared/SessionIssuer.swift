import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Opens sessions: every way in (password, magic link, provider, anonymous start, replayed
/// Idempotency-Key) ends here, inside the caller's unit of work, so each gets the same session
/// row, refresh token, audit row and "new sign-in" notice.
struct SessionIssuer: Sendable {
    let tokens: TokenService
    let mail: AccountMail
    let settings: TokenSettings

    /// Opens a session for an account that has proved who it is (and queues a "new sign-in"
    /// notice when the device is new to the account); `event` names the audit row.
    func signIn(_ work: Work, _ user: User, provider: Provider, event: AuditEvent.Name) async throws -> AuthResponse {
        let client = work.client ?? ClientInfo(ip: nil, userAgent: nil)
        try await mail.queueNewSignInIfNew(work, user: user, client: client)
        let (session, refresh) = try await start(work, user: user, provider: provider)
        try await work.audit(event, user: user.id, session: session.id, details: ["provider": provider.rawValue])
        return AuthResponse(
            user: user.payload(identities: try await work.tx.identities(of: user.id)),
            session: try await payload(user, session: session, refreshToken: refresh, in: work.tx))
    }

    /// The session object of the answer: the tokens for `session`.
    func payload(_ user: User, session: Session, refreshToken: String, in reader: any SubscriptionStore) async throws -> SessionPayload {
        try await tokens.session(for: user, session: session, refreshToken: refreshToken, in: reader)
    }

    /// The session row and its first refresh token.
    func start(_ work: Work, user: User, provider: Provider) async throws -> (Session, String) {
        let now = work.now
        let client = work.client
        let session = Session(
            userID: user.id, provider: provider, createdAt: now,
            expiresAt: settings.sessionAbsoluteTTLSeconds.map { now.addingTimeInterval(TimeInterval($0)) },
            userAgent: client?.userAgent, ipAddress: client?.ip)
        try await work.tx.insertSession(session)
        let refresh = tokens.newRefreshToken()
        try await work.tx.insertRefreshToken(
            RefreshTokenRecord(
                hash: StoredSecret.hash(refresh), sessionID: session.id, issuedAt: now,
                expiresAt: now.addingTimeInterval(TimeInterval(settings.refreshTokenTTLSeconds))))
        return (session, refresh)
    }
}
