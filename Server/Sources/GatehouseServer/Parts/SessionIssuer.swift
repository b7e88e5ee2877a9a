import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// What a sign-in came to: a session, or (for an account with a confirmed second factor) a
/// challenge the session waits behind.
enum SignInOutcome: Sendable {
    case session(AuthResponse)
    case challenge(MFAChallengePayload)

    /// The answer of a sign-in call whose session answer is `signed`'s shape.
    func answer<Signed>(_ signed: (AuthResponse) -> Signed) -> SignInAnswer<Signed> {
        switch self {
        case .session(let response): .signedIn(signed(response))
        case .challenge(let challenge): .mfaRequired(challenge)
        }
    }

    var answer: SignInAnswer<AuthResponse> { answer { $0 } }

    /// The session of a path that cannot meet a challenge (a new account has no factor yet).
    func requireSession() throws -> AuthResponse {
        guard case .session(let response) = self else {
            throw GatehouseError.internalError(nil, message: "This sign-in needs a second factor.")
        }
        return response
    }
}

/// Opens sessions: every door (`SessionDoor`: password, magic link, provider, passkey,
/// anonymous start, a completed MFA challenge, the OpenID provider's code exchange, the app's
/// hand-over) ends here, inside the caller's unit of work, so each gets the same second-factor
/// check, `BEFORE_SIGN_IN` admission (`SignInAdmission`), session row (its door recorded),
/// first refresh token, audit row and "new sign-in" notice. It is the only part that writes a
/// session row (`structure-check.py` holds that).
struct SessionIssuer: Sendable {
    let tokens: AccessTokens
    let mail: AccountMail
    let settings: TokenSettings
    let mfa: MFASettings
    let hooks: AuthHooks

    /// Runs a door's transaction under `BEFORE_SIGN_IN` (`AuthHooks.signingIn`): `body` gets the
    /// admission every session it opens needs, and may run twice, so it holds the transaction
    /// and nothing that must not be repeated.
    func signingIn<T>(client: ClientInfo?, _ body: (SignInAdmission) async throws -> T) async throws -> T {
        try await hooks.signingIn(client: client ?? ClientInfo(ip: nil, userAgent: nil), body)
    }

    /// What opening a session writes and reads (the caller's unit of work declares it too).
    typealias Opening = any SessionStore & RefreshTokenStore & MFAFactorStore & MFAChallengeStore & IdentityStore
        & PlanLedgerStore
    typealias Starting = any SessionStore & RefreshTokenStore

    /// Signs in an account that proved its first factor (`method`, the token's `amr`; the
    /// provider's own when nil). An account with a confirmed second factor gets a challenge
    /// instead of a session, unless a passkey that verified its user counts as two factors.
    /// `event` names the audit row.
    func signIn(
        _ work: Work<Opening>, _ user: User, provider: Provider, method: String? = nil, event: AuditEvent.Name, door: SessionDoor,
        userVerified: Bool = false, admitted: SignInAdmission
    ) async throws -> SignInOutcome {
        let method = method ?? provider.authenticationMethod ?? provider.rawValue
        let twoInOne = provider == .passkey && userVerified && mfa.passkeyCountsAsTwoFactors
        let factors = try await work.tx.mfaFactors(of: user.id).filter(\.isConfirmed)
        if !factors.isEmpty, !twoInOne {
            return .challenge(try await challenge(work, user, factors: factors, provider: provider, method: method, event: event))
        }
        return .session(
            try await open(
                work, user, provider: provider, method: method, event: event, door: door, assurance: twoInOne ? .aal2 : .aal1, admitted: admitted))
    }

    /// The session of a sign-in whose factors are all proved: `secondFactor` names the one a
    /// challenge was completed with.
    func open(
        _ work: Work<Opening>, _ user: User, provider: Provider, method: String, event: AuditEvent.Name, door: SessionDoor,
        assurance: AssuranceLevel, secondFactor: String? = nil, admitted: SignInAdmission
    ) async throws -> AuthResponse {
        let client = work.client ?? ClientInfo(ip: nil, userAgent: nil)
        try await mail.queueNewSignInIfNew(work.narrowed { $0 }, user: user, client: client)
        let (session, refresh) = try await start(
            work.narrowed { $0 }, user: user, provider: provider, door: door, method: method, assurance: assurance, secondFactor: secondFactor,
            admitted: admitted)
        var details = ["provider": provider.rawValue, "aal": assurance.rawValue, "door": door.rawValue]
        details["second_factor"] = secondFactor
        try await work.audit(event, user: user.id, session: session.id, details: details)
        work.queued.signal(.signIn(method: method))
        return AuthResponse(
            user: user.payload(identities: try await work.tx.identities(of: user.id)),
            session: try await payload(user, session: session, refreshToken: refresh, in: work.tx, app: admitted.app))
    }

    /// A challenge for the second factor: its id is returned once and stored only as a hash.
    private func challenge(
        _ work: Work<Opening>, _ user: User, factors: [MFAFactor], provider: Provider, method: String, event: AuditEvent.Name
    ) async throws -> MFAChallengePayload {
        let id = randomToken(bytes: 32)
        let expires = work.now.addingTimeInterval(TimeInterval(mfa.challengeTTLSeconds))
        try await work.tx.insertMFAChallenge(
            MFAChallenge(
                idHash: Self.challengeHash(id), userID: user.id, provider: provider, method: method, event: event.rawValue,
                createdAt: work.now, expiresAt: expires))
        try await work.audit(.mfaChallenge, user: user.id, details: ["provider": provider.rawValue])
        return MFAChallengePayload(
            challengeID: id, factors: factors.map(OwnerProof.summary),
            expiresAt: expires.rfc3339)
    }

    static func challengeHash(_ id: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(id.utf8)))
    }

    /// The session object of the answer: the tokens for `session`, with the claims
    /// `CUSTOM_ACCESS_TOKEN` gave them (asked outside the transaction: `AuthHooks.customClaims`).
    func payload(
        _ user: User, session: Session, refreshToken: String, in reader: any PlanLedgerStore, app: [String: JSONValue]?
    ) async throws -> SessionPayload {
        try await tokens.session(for: user, session: session, refreshToken: refreshToken, in: reader, app: app)
    }

    /// The session row and its first refresh token (a new account's sign-up, which has no
    /// second factor yet, opens one directly), once `BEFORE_SIGN_IN` allowed it.
    func start(
        _ work: Work<Starting>, user: User, provider: Provider, door: SessionDoor, method: String? = nil, assurance: AssuranceLevel = .aal1,
        secondFactor: String? = nil, admitted: SignInAdmission
    ) async throws -> (Session, String) {
        let method = method ?? provider.authenticationMethod ?? provider.rawValue
        let now = work.now
        let id = admitted.sessionID(at: now)
        try admitted.check(user, door: door, provider: provider, method: method, session: id)
        let client = work.client
        let session = Session(
            id: id, userID: user.id, provider: provider, createdAt: now,
            expiresAt: settings.sessionAbsoluteTTLSeconds.map { now.addingTimeInterval(TimeInterval($0)) },
            userAgent: client?.userAgent, ipAddress: client?.ip, method: method,
            assurance: assurance, secondFactor: secondFactor, secondFactorAt: secondFactor == nil ? nil : now, door: door)
        try await work.tx.insertSession(session)
        let refresh = try await newRefreshToken(work.narrowed { $0 }, for: session.id)
        // A kept `CUSTOM_ACCESS_TOKEN` answer is found by this token at the first refresh.
        if admitted.app != nil { hooks.claimsCache.follow(StoredSecret.hash(refresh), to: session.id) }
        return (session, refresh)
    }

    /// What carrying a sign-in over reads and writes.
    typealias Carrying = any SessionStore & RefreshTokenStore & OAuthGrantStore

    /// Whether a sign-in may be carried over, checked inside the write.
    enum Carried: Sendable {
        case opened(Session, User, refreshToken: String?)
        /// The source session ended, or its account was disabled.
        case sourceEnded
        /// The person's consent to the client does not cover the scopes (it was withdrawn).
        case noConsent
    }

    /// A session carried over from one whose factors are already proved: the OpenID provider's
    /// code exchange (`client`, for the code's `scopes`, with a first refresh token when
    /// `offline_access` was granted) and the app's hand-over (`client` nil: a browser's web
    /// session, for `webClient` only). Inside the caller's transaction the source session is held
    /// (its account's row locked, so a sign-out, a disable or a withdrawn consent either came
    /// first and is seen here, or waits and then ends what this opens), and it must be live, its
    /// account enabled and, for a third-party client, the person's consent must cover the scopes.
    /// The new session keeps the source's factors and `auth_time`.
    func carry(
        _ work: Work<Carrying>, from source: SessionID, of userID: UserID, id: SessionID, door: SessionDoor, client: OAuthClient?,
        scopes: [String], webClient: String? = nil, refreshable: Bool, admitted: SignInAdmission
    ) async throws -> Carried {
        // The source is the app's own session or a browser's sign-in (for a client's code: one
        // signed in by a hand-over serves that hand-over's client only).
        guard let (held, user) = try await work.tx.holdSession(source, of: userID), !user.isDisabled, held.isLive(at: work.now, settings: settings),
            held.clientID == nil || (client != nil && held.clientID == client?.id)
        else { return .sourceEnded }
        if let client, !client.firstParty {
            guard let consent = try await work.tx.consent(of: user.id, to: client.id), Set(scopes).isSubset(of: Set(consent.scopes)) else {
                return .noConsent
            }
        }
        try admitted.check(user, door: door, provider: held.provider, method: held.method ?? held.provider.rawValue, session: id)
        let session = Session(
            id: id, userID: user.id, provider: held.provider, createdAt: work.now, expiresAt: held.expiresAt,
            userAgent: work.client?.userAgent, ipAddress: work.client?.ip, method: held.method, assurance: held.assurance,
            secondFactor: held.secondFactor, secondFactorAt: held.secondFactorAt, clientID: client?.id ?? webClient,
            scope: client == nil ? nil : scopes.joined(separator: " "), authTime: held.authTime ?? held.createdAt, door: door)
        try await work.tx.insertSession(session)
        let refresh = refreshable ? try await newRefreshToken(work.narrowed { $0 }, for: session.id) : nil
        return .opened(session, user, refreshToken: refresh)
    }

    /// A new refresh chain for the session: a fresh random token.
    func newRefreshToken(_ work: Work<any RefreshTokenStore>, for session: SessionID) async throws -> String {
        let refresh = tokens.newRefreshToken()
        try await work.tx.insertRefreshToken(
            RefreshTokenRecord(
                hash: StoredSecret.hash(refresh), sessionID: session, issuedAt: work.now,
                expiresAt: work.now.addingTimeInterval(TimeInterval(settings.refreshTokenTTLSeconds))))
        return refresh
    }
}
