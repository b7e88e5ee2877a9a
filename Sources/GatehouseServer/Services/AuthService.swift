import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Email-and-password accounts and the sessions of every account: sign-up, login, refresh,
/// logout, session listing, password change.
public struct AuthService: Sendable {
    let store: any GatehouseStore
    let hasher: PasswordHasher
    let tokens: TokenService
    let throttle: ThrottleService
    let breached: BreachedPasswordChecker?
    let policy: PasswordPolicy
    let preset: Preset
    let clock: any WallClock
    let mail: AccountMail
    let events: EventRecorder
    let entitlements: EntitlementService
    /// Set when `GATEHOUSE_CAPTCHA_VERIFY_URL` is; the preset decides when it is asked for.
    let captcha: CaptchaVerifier?

    // MARK: Sign-up and login

    public func signup(
        email: String, password: String, client: ClientInfo, idempotencyKey: String? = nil, captchaToken: String? = nil
    ) async throws -> AuthResponse {
        try requireMethod(preset.signInMethods.emailPassword)
        let kept = client.stored(under: preset.privacy)
        let keyHash = idempotencyKey.map(TokenService.hash)
        if let keyHash, let earlier = try await store.idempotentUser(scope: "signup", keyHash: keyHash, since: clock.now.addingTimeInterval(-86_400)) {
            // A retry of a sign-up that went through (decision 3): the same account, a new
            // session, for the same address and password only. It is a password sign-in, so it
            // goes through everything a login does (per-IP limit, CAPTCHA, the account's
            // lockout) and is counted like one; never a way around them.
            guard let owner = try await store.user(id: earlier.user), owner.normalizedEmail == EmailAddress.normalize(email) else {
                throw GatehouseError.invalidRequest("This Idempotency-Key was used for another sign-up.")
            }
            return try await login(email: email, password: password, client: client, captchaToken: captchaToken)
        }
        try await throttle.limitIP("signup", client: client, limit: preset.throttling.signupPerIPPerHour, windowSeconds: 3_600)
        try await requireCaptchaIfNeeded(client, token: captchaToken)
        let address = email.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCanonicalMapping
        guard EmailAddress.isValid(address) else { throw invalidEmail }
        let normalized = EmailAddress.normalize(address)
        try await checkPassword(password, email: normalized)
        // Sign-up tells the truth about a taken address in any spelling (decision 6); a
        // look-alike spelling of a free one is refused rather than stored (finding 7).
        if try await store.user(normalizedEmail: normalized) != nil { throw emailInUse }
        guard EmailAddress.isCanonical(address) else { throw invalidEmail }
        let hash = try await hasher.hash(password)
        let now = clock.now
        do {
            return try await withTemporaryHandle { handle in
                let user = User(
                    id: .random(), email: address, normalizedEmail: normalized, handle: handle, passwordHash: hash,
                    passwordChangedAt: now, createdAt: now)
                let response = try await store.transaction { tx in
                    try await tx.insertUser(user)
                    let identity = Identity(userID: user.id, provider: .email, subject: normalized, email: address, createdAt: now)
                    try await tx.insertIdentity(identity)
                    let (session, refresh) = try await startSession(tx, user: user, provider: "email", client: kept)
                    try await tx.insertAudit(
                        AuditEvent(createdAt: now, event: "signup", outcome: "success", userID: user.id, sessionID: session.id,
                                   ipAddress: kept.ip, userAgent: kept.userAgent, details: ["provider": "email"]))
                    if preset.verification.sendOnSignup {
                        // In the same transaction: a crash after commit still sends it.
                        try await mail.queueVerification(tx, user: user)
                    }
                    try await events.record(tx, "user.created", user: user.id, data: ["provider": "email"])
                    if let keyHash {
                        try await tx.insertIdempotencyKey(scope: "signup", keyHash: keyHash, userID: user.id, sessionID: session.id, at: now)
                    }
                    return AuthResponse(
                        user: user.payload(identities: [identity]),
                        session: try await tokens.session(for: user, session: session, refreshToken: refresh, in: tx))
                }
                mail.wake()
                events.wake()
                return response
            }
        } catch StoreError.uniqueViolation(let what) where !what.contains("handle") {
            // Another sign-up with this email won the race.
            throw emailInUse
        }
    }

    public func login(email: String, password: String, client: ClientInfo, captchaToken: String? = nil) async throws -> AuthResponse {
        try requireMethod(preset.signInMethods.emailPassword)
        let kept = client.stored(under: preset.privacy)
        try await throttle.limitIP("login", client: client, limit: preset.throttling.loginPerIPPerMinute, windowSeconds: 60)
        try await requireCaptchaIfNeeded(client, token: captchaToken)
        let normalized = EmailAddress.normalize(email)
        // Unknown accounts cost the same hashing work as known ones and get the same answer.
        let user = EmailAddress.isValid(email) ? try await store.user(normalizedEmail: normalized) : nil
        let verification = try await checkPasswordAttempt(
            password, against: user?.passwordHash, account: normalized, userID: user?.id, client: client, event: "login")
        guard let user, verification.matches else { throw invalidCredentials }
        guard !user.isDisabled else {
            try await audit("login", "failure", userID: user.id, client: kept, details: ["reason": "account disabled"])
            throw accountDisabled
        }
        if verification.needsRehash {
            // Imported bcrypt, or Argon2id under older parameters: upgrade while the password is at hand.
            try await store.updatePassword(user.id, hash: try await hasher.hash(password), changedAt: nil, now: clock.now)
        }
        return try await signIn(user, provider: "email", client: kept, event: "login")
    }

    /// Every password check (login, a sign-up's replay, a password change, the proof before a
    /// deletion) goes through here: an attempt on the account is reserved atomically before
    /// the hash (429 while locked), a success releases it, a failure stays counted and is
    /// audited. Returns the verification; a failure has already been recorded when it returns.
    func checkPasswordAttempt(
        _ password: String, against hash: String?, account: String, userID: UserID?, client: ClientInfo, event: String
    ) async throws -> PasswordHasher.Verification {
        let kept = client.stored(under: preset.privacy)
        let reservation: AttemptReservation
        do {
            reservation = try await throttle.reserveAttempt(account)
        } catch {
            try await audit(event, "locked", userID: userID, client: kept, details: ["reason": "account locked"])
            throw error
        }
        let verification = try await hasher.verify(password, against: hash)
        if hash != nil, verification.matches {
            try await throttle.clearAccount(account)
            return verification
        }
        let wait = try await throttle.failed(reservation, client: client)
        try await audit(event, "failure", userID: userID, client: kept, details: ["reason": "invalid credentials"])
        if let wait {
            try await audit("lockout", "locked", userID: userID, client: kept, details: ["retry_after": String(wait)])
        }
        return PasswordHasher.Verification(matches: false, needsRehash: false)
    }

    /// Opens a session for an account that has proved who it is.
    func signIn(_ user: User, provider: String, client kept: ClientInfo, event: String) async throws -> AuthResponse {
        let response = try await store.transaction { tx in
            try await signIn(in: tx, user, provider: provider, client: kept, event: event)
        }
        mail.wake()
        return response
    }

    /// Opens a session inside the caller's transaction (and queues a "new sign-in" notice when
    /// the device is new to the account); the caller wakes the mail worker after commit.
    func signIn(in tx: any GatehouseStore, _ user: User, provider: String, client kept: ClientInfo, event: String) async throws -> AuthResponse {
        let now = clock.now
        try await mail.queueNewSignInIfNew(tx, user: user, client: kept)
        let (session, refresh) = try await startSession(tx, user: user, provider: provider, client: kept)
        try await tx.insertAudit(
            AuditEvent(createdAt: now, event: event, outcome: "success", userID: user.id, sessionID: session.id,
                       ipAddress: kept.ip, userAgent: kept.userAgent, details: ["provider": provider]))
        return AuthResponse(
            user: user.payload(identities: try await tx.identities(of: user.id)),
            session: try await tokens.session(for: user, session: session, refreshToken: refresh, in: tx))
    }

    private func startSession(_ tx: any GatehouseStore, user: User, provider: String, client: ClientInfo) async throws -> (Session, String) {
        let now = clock.now
        let session = Session(
            userID: user.id, provider: provider, createdAt: now,
            expiresAt: preset.tokens.sessionAbsoluteTTLSeconds.map { now.addingTimeInterval(TimeInterval($0)) },
            userAgent: client.userAgent, ipAddress: client.ip)
        try await tx.insertSession(session)
        let refresh = tokens.newRefreshToken()
        try await tx.insertRefreshToken(
            RefreshTokenRecord(
                hash: TokenService.hash(refresh), sessionID: session.id, issuedAt: now,
                expiresAt: now.addingTimeInterval(TimeInterval(preset.tokens.refreshTokenTTLSeconds))))
        return (session, refresh)
    }

    // MARK: Refresh

    private enum RefreshResult: Sendable {
        case issued(User, Session, String)
        case revoked
    }

    public func refresh(_ token: String, client: ClientInfo) async throws -> SessionResponse {
        let now = clock.now
        let hash = TokenService.hash(token)
        let kept = client.stored(under: preset.privacy)
        let result = try await store.transaction { tx -> RefreshResult in
            guard let record = try await tx.refreshToken(hash: hash), let session = try await tx.session(id: record.sessionID) else {
                throw invalidRefreshToken
            }
            switch RefreshRotationPolicy.decide(token: record, session: session, now: now, settings: preset.tokens) {
            case .expired:
                guard session.isRevoked else { throw invalidRefreshToken }
                // Disabling ends every session; the app still learns why.
                if try await tx.user(id: session.userID)?.isDisabled == true { throw accountDisabled }
                throw sessionRevoked
            case .reuseDetected:
                _ = try await tx.revokeSession(session.id, reason: "refresh_token_reuse", at: now)
                try await tx.insertAudit(
                    AuditEvent(createdAt: now, event: "refresh_reuse_detected", outcome: "session_revoked", userID: session.userID,
                               sessionID: session.id, ipAddress: kept.ip, userAgent: kept.userAgent))
                return .revoked
            case .repeatSuccessor:
                let successor = try tokens.successor(of: token)
                guard try await tx.refreshToken(hash: TokenService.hash(successor)) != nil else { throw invalidRefreshToken }
                return .issued(try await liveUser(tx, session.userID), session, successor)
            case .rotate:
                let successor = try tokens.successor(of: token)
                try await tx.markRefreshTokenRotated(hash: hash, at: now)
                try await tx.insertRefreshToken(
                    RefreshTokenRecord(
                        hash: TokenService.hash(successor), sessionID: session.id, issuedAt: now,
                        expiresAt: now.addingTimeInterval(TimeInterval(preset.tokens.refreshTokenTTLSeconds))))
                try await tx.touchSession(session.id, at: now)
                return .issued(try await liveUser(tx, session.userID), session, successor)
            }
        }
        switch result {
        case .revoked:
            // Committed above: the revocation stands although this answer is an error.
            throw sessionRevoked
        case .issued(let user, let session, let refresh):
            return SessionResponse(session: try await tokens.session(for: user, session: session, refreshToken: refresh, in: store))
        }
    }

    private func liveUser(_ tx: any GatehouseStore, _ id: UserID) async throws -> User {
        guard let user = try await tx.user(id: id) else { throw invalidRefreshToken }
        guard !user.isDisabled else {
            throw accountDisabled
        }
        return user
    }

    // MARK: Signed-in calls

    /// The user behind a verified access token whose session is still live.
    public func authenticate(_ identity: AccessIdentity) async throws -> User {
        guard let session = try await store.session(id: identity.sessionID), session.userID == identity.userID,
            let user = try await store.user(id: identity.userID)
        else {
            throw GatehouseError.unauthorized("Your session has ended. Please sign in again.")
        }
        // A disabled account's sessions are revoked too; say why rather than just "ended".
        guard !user.isDisabled else {
            throw accountDisabled
        }
        guard session.isLive(at: clock.now, settings: preset.tokens) else {
            throw GatehouseError.unauthorized("Your session has ended. Please sign in again.")
        }
        return user
    }

    public func logout(_ identity: AccessIdentity, scope: String?, client: ClientInfo) async throws {
        let now = clock.now
        let kept = client.stored(under: preset.privacy)
        switch scope ?? "local" {
        case "local":
            _ = try await store.revokeSession(identity.sessionID, reason: "logout", at: now)
        case "others":
            _ = try await store.revokeSessions(of: identity.userID, keeping: identity.sessionID, reason: "logout_others", at: now)
        case "global":
            try await store.transaction { tx in
                _ = try await tx.revokeSessions(of: identity.userID, keeping: nil, reason: "logout_global", at: now)
                // Signed out everywhere means no replayed Idempotency-Key signs back in either.
                try await tx.deleteIdempotencyKeys(of: identity.userID)
            }
        default:
            throw GatehouseError.invalidRequest("The scope must be local, others or global.")
        }
        try await audit("logout", "success", userID: identity.userID, sessionID: identity.sessionID, client: kept,
                        details: ["scope": scope ?? "local"])
    }

    public func sessions(_ identity: AccessIdentity) async throws -> SessionsResponse {
        let now = clock.now
        let live = try await store.sessions(of: identity.userID).filter { $0.isLive(at: now, settings: preset.tokens) }
        return SessionsResponse(
            sessions: live.map {
                SessionInfo(
                    id: $0.id.description, createdAt: $0.createdAt.rfc3339, lastActiveAt: $0.lastActiveAt.rfc3339,
                    userAgent: $0.userAgent, provider: $0.provider, current: $0.id == identity.sessionID)
            })
    }

    public func revokeSession(_ identity: AccessIdentity, id: String, client: ClientInfo) async throws {
        guard let sessionID = SessionID(id), let session = try await store.session(id: sessionID), session.userID == identity.userID,
            session.isLive(at: clock.now, settings: preset.tokens)
        else {
            throw GatehouseError.notFound("No such session.")
        }
        _ = try await store.revokeSession(sessionID, reason: "revoked_by_user", at: clock.now)
        try await audit("session_revoked", "success", userID: identity.userID, sessionID: sessionID,
                        client: client.stored(under: preset.privacy))
    }

    public func changePassword(
        _ signedIn: SignedIn, current: String, new: String, signOutOthers: Bool, client: ClientInfo
    ) async throws -> UserResponse {
        let (identity, user) = (signedIn.identity, signedIn.user)
        let kept = client.stored(under: preset.privacy)
        let key = user.normalizedEmail ?? user.id.description
        let verification = try await checkPasswordAttempt(
            current, against: user.passwordHash, account: key, userID: user.id, client: client, event: "password_change")
        guard user.passwordHash != nil, verification.matches else { throw invalidCredentials }
        try await checkPassword(new, email: user.normalizedEmail ?? "")
        let hash = try await hasher.hash(new)
        let now = clock.now
        try await store.transaction { tx in
            try await tx.updatePassword(user.id, hash: hash, changedAt: now, now: now)
            // Reset links made under the old password die with it.
            try await tx.retireEmailTokens(userID: user.id, normalizedEmail: nil, purpose: .passwordReset, at: now)
            if signOutOthers {
                _ = try await tx.revokeSessions(of: user.id, keeping: identity.sessionID, reason: "password_change", at: now)
            }
            try await tx.insertAudit(
                AuditEvent(createdAt: now, event: "password_change", outcome: "success", userID: user.id, sessionID: identity.sessionID,
                           ipAddress: kept.ip, userAgent: kept.userAgent, details: ["signed_out_others": String(signOutOthers)]))
            // A replayed sign-up key would answer the old password no more; drop it anyway.
            try await tx.deleteIdempotencyKeys(of: user.id)
            try await mail.queuePasswordChanged(tx, user: user)
        }
        mail.wake()
        return UserResponse(user: user.payload(identities: try await store.identities(of: user.id)))
    }

    public func me(_ signedIn: SignedIn) async throws -> MeResponse {
        let user = signedIn.user
        return MeResponse(
            user: user.payload(identities: try await store.identities(of: user.id)), entitlements: try await entitlements.snapshot(user))
    }

    // MARK: Helpers

    /// The address as typed (trimmed, NFC), when it may receive mail and own an account: valid, and
    /// already in its canonical form (finding 7: a fullwidth or otherwise compatibility-mapped
    /// look-alike would be stored and mailed as typed while it collides with the real address).
    /// 400 `invalid_email` otherwise.
    func canonicalAddress(_ email: String) throws -> String {
        let address = email.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCanonicalMapping
        guard EmailAddress.isValid(address), EmailAddress.isCanonical(address) else { throw invalidEmail }
        return address
    }

    /// Refuses `password` with 422 `weak_password` listing every failed rule.
    func checkPassword(_ password: String, email: String) async throws {
        let local = email.split(separator: "@").first.map(String.init) ?? ""
        var problems = policy.problems(password, context: [local, email, preset.app.name, preset.name])
        if problems.isEmpty, policy.settings.breachedCheck, let breached, await breached.isBreached(password) == true {
            problems.append(policy.breached)
        }
        guard problems.isEmpty else {
            throw GatehouseError(
                status: 422, code: .weakPassword, message: problems.map(\.message).joined(separator: " "),
                reasons: problems.map(\.code))
        }
    }

    /// Runs `body` with a fresh temporary handle (decision 9) when handles are on, trying
    /// another one if it happens to be taken.
    func withTemporaryHandle<T>(_ body: (String?) async throws -> T) async throws -> T {
        guard preset.handles.enabled else { return try await body(nil) }
        for attempt in 1...5 {
            let handle = preset.handles.temporaryPrefix + String(format: "%06d", Int.random(in: 0..<1_000_000))
            do {
                return try await body(handle)
            } catch StoreError.uniqueViolation(let what) where what.contains("handle") && attempt < 5 {
                continue
            }
        }
        throw GatehouseError.internalError(nil)
    }

    func audit(
        _ event: String, _ outcome: String, userID: UserID? = nil, sessionID: SessionID? = nil, client: ClientInfo,
        details: [String: String] = [:]
    ) async throws {
        try await store.insertAudit(
            AuditEvent(createdAt: clock.now, event: event, outcome: outcome, userID: userID, sessionID: sessionID,
                       ipAddress: client.ip, userAgent: client.userAgent, details: details))
    }

    func requireMethod(_ enabled: Bool) throws {
        guard enabled else {
            throw GatehouseError(status: 403, code: .methodDisabled, message: "This sign-in method is not available for this app.")
        }
    }

    var invalidEmail: GatehouseError {
        GatehouseError(status: 400, code: .invalidEmail, message: preset.text("error.invalid_email", "Enter a valid email address."))
    }
    var accountDisabled: GatehouseError {
        GatehouseError(status: 403, code: .accountDisabled, message: preset.text("error.account_disabled", "This account has been disabled."))
    }
    var emailInUse: GatehouseError {
        GatehouseError(status: 409, code: .emailInUse, message: preset.text("error.email_in_use", "This email is already in use. Log in instead."))
    }
    var invalidCredentials: GatehouseError {
        GatehouseError(
            status: 401, code: .invalidCredentials, message: preset.text("error.invalid_credentials", "Incorrect email or password."))
    }
    var invalidRefreshToken: GatehouseError {
        GatehouseError(status: 401, code: .invalidRefreshToken, message: "This session is no longer valid. Please sign in again.")
    }
    var sessionRevoked: GatehouseError {
        GatehouseError(status: 401, code: .sessionRevoked, message: "This session has been signed out. Please sign in again.")
    }
}
