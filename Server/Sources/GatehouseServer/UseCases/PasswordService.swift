import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Email-and-password accounts: sign-up, login and the password change.
struct PasswordService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & PasswordStore & IdentityStore & IdempotencyStore & SessionStore & RefreshTokenStore
        & EmailTokenStore & PlanLedgerStore & MFAFactorStore & MFAChallengeStore & PhoneStore & ThrottleStore

    /// What a password sign-in names the account by: its address, or (on `/auth/v1`) its
    /// verified number.
    enum LoginName: Sendable {
        case email(String)
        case phone(PhoneNumber)
    }

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let throttle: Throttle
    let stepUp: StepUpGate
    let gate: SignInGate
    let credentials: Credentials
    let sessions: SessionIssuer
    let lifecycle: AccountLifecycle
    let mail: AccountMail
    let preset: Preset
    let clock: any WallClock

    // MARK: Sign-up and login

    func signup(
        email: String, password: String, client: ClientInfo, idempotencyKey: String? = nil, captchaToken: String? = nil
    ) async throws -> SignInAnswer<AuthResponse> {
        try gate.requireMethod(preset.signInMethods.emailPassword)
        let keyHash = idempotencyKey.map(StoredSecret.hash)
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
        try await gate.requireCaptchaIfNeeded(client, token: captchaToken)
        let address = email.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCanonicalMapping
        guard EmailAddress.isValid(address) else { throw GatehouseError.invalidEmail(preset) }
        let normalized = EmailAddress.normalize(address)
        try await credentials.checkStrength(password, email: normalized)
        // Sign-up tells the truth about a taken address in any spelling (decision 6); a
        // look-alike spelling of a free one is refused rather than stored (finding 7).
        if try await store.user(normalizedEmail: normalized) != nil { throw GatehouseError.emailInUse(preset) }
        guard EmailAddress.isCanonical(address) else { throw GatehouseError.invalidEmail(preset) }
        let admission = try await lifecycle.admit(NewAccount(.wayIn(.password), email: address), client: client)
        let hash = try await credentials.hash(password)
        // The id the hook is told of is the one the account gets (the transaction may run twice).
        let id = UserID.random()
        do {
            return try await sessions.signingIn(client: client) { admitted in
                try await lifecycle.withTemporaryHandle { handle in
                    try await unitOfWork.run(client: client) { work in
                        let now = work.now
                        let user = User(
                            id: id, email: address, normalizedEmail: normalized, handle: handle, passwordHash: hash,
                            passwordChangedAt: now, createdAt: now)
                        let identity = Identity(userID: user.id, provider: .email, subject: normalized, email: address, createdAt: now)
                        try await lifecycle.create(work.narrowed { $0 }, user, identity: identity, provider: .email, admitted: admission)
                        let (session, refresh) = try await sessions.start(
                            work.narrowed { $0 }, user: user, provider: .email, door: .signUp, method: Self.method, admitted: admitted)
                        try await work.audit(.signup, user: user.id, session: session.id, details: ["provider": "email"])
                        if preset.verification.sendOnSignup {
                            // In the same transaction: a crash after commit still sends it.
                            try await mail.queueVerification(work.narrowed { $0 }, user: user)
                        }
                        if let keyHash {
                            try await work.tx.insertIdempotencyKey(scope: "signup", keyHash: keyHash, userID: user.id, sessionID: session.id, at: now)
                        }
                        return .signedIn(
                            AuthResponse(
                                user: user.payload(identities: [identity]),
                                session: try await sessions.payload(
                                    user, session: session, refreshToken: refresh, in: work.tx, app: admitted.app)))
                    }
                }
            }
        } catch let error as StoreError where error.uniqueKey != nil && error.uniqueKey != .handle {
            // Another sign-up with this email won the race.
            throw GatehouseError.emailInUse(preset)
        }
    }

    /// The `amr` method of a password's sessions.
    static let method = "password"

    func login(email: String, password: String, client: ClientInfo, captchaToken: String? = nil) async throws -> SignInAnswer<AuthResponse> {
        try await login(.email(email), password: password, client: client, captchaToken: captchaToken)
    }

    /// A password sign-in by address, or by a verified number (a number never proved is no
    /// name to sign in by: it answers as an unknown one).
    func login(_ name: LoginName, password: String, client: ClientInfo, captchaToken: String? = nil) async throws -> SignInAnswer<AuthResponse> {
        try gate.requireMethod(preset.signInMethods.emailPassword)
        try await throttle.limitIP("login", client: client, limit: preset.throttling.loginPerIPPerMinute, windowSeconds: 60)
        try await gate.requireCaptchaIfNeeded(client, token: captchaToken)
        let account: String
        let user: User?
        let provider: Provider
        switch name {
        case .email(let email):
            account = EmailAddress.normalize(email)
            // Unknown accounts cost the same hashing work as known ones and get the same answer.
            user = EmailAddress.isValid(email) ? try await store.user(normalizedEmail: account) : nil
            provider = .email
        case .phone(let number):
            account = number.e164
            user = try await store.user(phone: number.e164).flatMap { $0.phoneVerifiedAt == nil ? nil : $0 }
            provider = .phone
        }
        // An account has one lockout whichever name was typed; an unknown name has its own.
        let check = try await credentials.checkAttemptHeld(
            password, against: user?.passwordHash, account: user.map(Credentials.lockoutKey) ?? account, userID: user?.id, client: client,
            event: .login)
        guard let user, check.matches else { throw GatehouseError.invalidCredentials(preset) }
        do {
            guard !user.isDisabled else {
                try await unitOfWork.audit(.login, .failure, user: user.id, client: client, details: ["reason": "account disabled"])
                throw GatehouseError.accountDisabled(preset)
            }
            if check.verification.needsRehash, let old = user.passwordHash {
                // Imported bcrypt or Firebase scrypt, or Argon2id under older parameters: upgrade while
                // the password is at hand, unless a reset or change replaced the hash meanwhile.
                _ = try await store.rehashPassword(user.id, from: old, to: try await credentials.hash(password), now: clock.now)
            }
            // The right password's attempt is given back in the transaction that opens the session
            // (or asks for a second factor): one commit for both.
            return try await sessions.signingIn(client: client) { admitted in
                try await unitOfWork.run(client: client) { work in
                    try await check.release(in: work.tx)
                    return try await sessions.signIn(
                        work.narrowed { $0 }, user, provider: provider, method: Self.method, event: .login, door: .password, admitted: admitted
                    ).answer
                }
            }
        } catch {
            // Refused or failed after the right password: the attempt is given back all the same
            // (the transaction that held the release, if any, was rolled back).
            try? await check.release(in: store)
            throw error
        }
    }

    // MARK: Password change

    func changePassword(
        _ signedIn: SignedIn, current: String, new: String, signOutOthers: Bool, client: ClientInfo
    ) async throws -> UserResponse {
        let (identity, user) = (signedIn.identity, signedIn.user)
        try await stepUp.require(.changePassword, signedIn)
        let key = Credentials.lockoutKey(user)
        let verification = try await credentials.checkAttempt(
            current, against: user.passwordHash, account: key, userID: user.id, client: client, event: .passwordChange)
        guard var verified = user.passwordHash, verification.matches else { throw GatehouseError.invalidCredentials(preset) }
        try await credentials.checkStrength(new, email: user.normalizedEmail ?? "")
        let hash = try await credentials.hash(new)
        // Written only while the stored hash is still the one the current password was checked
        // against (finding 2 of issue 40: a change in flight undid the owner's). When another
        // write came first, the current password is checked against what it stored: the same
        // password (a re-hash, or set again) goes on; another refuses this change.
        for _ in 0..<Self.changeAttempts {
            let checked = verified
            let written = try await unitOfWork.run(client: client) { work -> Bool in
                let (tx, now) = (work.tx, work.now)
                guard try await tx.changePassword(user.id, from: checked, to: hash, now: now) else { return false }
                // Reset links made under the old password die with it.
                try await tx.retireEmailTokens(userID: user.id, normalizedEmail: nil, purpose: .passwordReset, at: now)
                if signOutOthers {
                    _ = try await tx.revokeSessions(of: user.id, keeping: identity.sessionID, reason: .passwordChange, at: now)
                }
                try await work.audit(
                    .passwordChange, user: user.id, session: identity.sessionID, details: ["signed_out_others": String(signOutOthers)])
                // A replayed sign-up key would answer the old password no more; drop it anyway.
                try await tx.deleteIdempotencyKeys(of: user.id)
                try await mail.queuePasswordChanged(work, user: user)
                return true
            }
            if written { return UserResponse(user: user.payload(identities: try await store.identities(of: user.id))) }
            guard let stored = try await store.user(id: user.id)?.passwordHash,
                try await credentials.hasher.verify(current, against: stored).matches
            else { throw GatehouseError.invalidCredentials(preset) }
            verified = stored
        }
        throw GatehouseError.serviceUnavailable(StoreError.conflict("the password kept changing during the change"))
    }

    /// How many times a change is tried while other writes of the same password keep landing.
    static let changeAttempts = 4

    /// `PUT /auth/v1/user` with a password and no current one (GoTrue's recovery flow): allowed
    /// only to a session a reset or magic link opened within `PasswordResetService.recoveryWindow`,
    /// the proof of the inbox standing in for the old password. Ends every other session, as a
    /// reset does.
    ///
    /// `proven`: the caller has just used up a mailed code as the same proof (GoTrue's
    /// `/reauthenticate` nonce), so any session of the account may set it.
    func setPasswordAfterLink(_ signedIn: SignedIn, new: String, proven: Bool = false, client: ClientInfo) async throws -> UserResponse {
        let (identity, user, session) = (signedIn.identity, signedIn.user, signedIn.session)
        guard proven
            || (session.method == PasswordResetService.linkMethod
                && clock.now.timeIntervalSince(session.createdAt) <= PasswordResetService.recoveryWindow)
        else {
            // Its code's one status (403); the GoTrue surface, the only caller, answers GoTrue's
            // own `reauthentication_needed` with 400 from its mapping.
            throw GatehouseError(.reauthenticationRequired, "Send the current password too, or set the password from a reset link.")
        }
        try await stepUp.require(.changePassword, signedIn)
        try await credentials.checkStrength(new, email: user.normalizedEmail ?? "")
        let hash = try await credentials.hash(new)
        try await unitOfWork.run(client: client) { work in
            let revoked = try await replacePassword(work, of: user, with: hash, keeping: identity.sessionID, reason: .passwordReset)
            try await work.audit(.passwordReset, user: user.id, session: identity.sessionID, details: ["sessions_revoked": String(revoked)])
        }
        if let normalized = user.normalizedEmail { try await throttle.clearAccount(normalized) }
        var updated = user
        updated.passwordHash = hash
        return UserResponse(user: updated.payload(identities: try await store.identities(of: user.id)))
    }

    // MARK: Accounts made by an operator

    /// An email account made by an operator (`POST /auth/v1/admin/users`): with a password (the
    /// policy applies), a hash made elsewhere (bcrypt or Argon2id, checked at the first sign-in and
    /// then replaced), or neither (a magic link or reset signs in). No session is opened.
    func createByOperator(
        email: String, password: String?, passwordHash: String?, emailConfirmed: Bool, displayName: String?,
        userMetadata: [String: JSONValue] = [:], appMetadata: [String: JSONValue] = [:]
    ) async throws -> User {
        let metadata = (user: try AccountMetadata.fresh(userMetadata, kind: .user), app: try AccountMetadata.fresh(appMetadata, kind: .app))
        let address = try credentials.canonicalAddress(email)
        let normalized = EmailAddress.normalize(address)
        let hash: String?
        if let password {
            try await credentials.checkStrength(password, email: normalized)
            hash = try await credentials.hash(password)
        } else if let passwordHash {
            if let problem = PasswordHashBounds.problem(passwordHash) {
                throw GatehouseError.invalidRequest("password_hash must be a bcrypt ($2a$, $2b$, $2y$) or Argon2id hash within Gatehouse's bounds: \(problem).")
            }
            hash = passwordHash
        } else {
            hash = nil
        }
        if try await store.user(normalizedEmail: normalized) != nil { throw GatehouseError.emailInUse(preset) }
        // An operator's call (the app's backend, with the service key): no person's client to name.
        let admission = try await lifecycle.admit(NewAccount(.byOperator, email: address), client: ClientInfo(ip: nil, userAgent: nil))
        do {
            let created = try await lifecycle.withTemporaryHandle { handle in
                try await unitOfWork.run { work in
                    let now = work.now
                    var user = User(
                        id: .random(), email: address, normalizedEmail: normalized, emailVerifiedAt: emailConfirmed ? now : nil,
                        displayName: displayName, handle: handle, passwordHash: hash, passwordChangedAt: hash == nil ? nil : now,
                        createdAt: now)
                    user.onboardingComplete = false
                    (user.userMetadata, user.appMetadata) = metadata
                    let identity = Identity(userID: user.id, provider: .email, subject: normalized, email: address, createdAt: now)
                    try await lifecycle.create(work.narrowed { $0 }, user, identity: identity, provider: .email, admitted: admission)
                    try await work.audit(.signup, user: user.id, details: ["provider": "email", "by": "operator"])
                    return user
                }
            }
            // A hash made elsewhere may bring a scheme this server has no decoy for yet.
            if let passwordHash { try await credentials.hasher.useScheme(of: passwordHash) }
            return created
        } catch let error as StoreError where error.uniqueKey != nil && error.uniqueKey != .handle {
            throw GatehouseError.emailInUse(preset)
        }
    }

    /// A password set by an operator (`PUT /auth/v1/admin/users/{id}`): the policy applies, every
    /// session ends and the owner is told by mail.
    func setByOperator(_ user: User, password: String) async throws {
        try await credentials.checkStrength(password, email: user.normalizedEmail ?? "")
        let hash = try await credentials.hash(password)
        try await unitOfWork.run { work in
            _ = try await replacePassword(work, of: user, with: hash, keeping: nil, reason: .passwordSetByOperator)
            try await work.audit(.passwordChange, user: user.id, details: ["by": "operator"])
        }
    }

    /// A password set without the old one (after a link, or by an operator): the new hash, the
    /// reset links made under the old one retired, the other sessions and the sign-up replays
    /// ended, the owner told by mail. Answers how many sessions ended.
    private func replacePassword(
        _ work: Work<Stores>, of user: User, with hash: String, keeping session: SessionID?, reason: SessionRevokeReason
    ) async throws -> Int {
        let (tx, now) = (work.tx, work.now)
        try await tx.updatePassword(user.id, hash: hash, changedAt: now, now: now)
        try await tx.retireEmailTokens(userID: user.id, normalizedEmail: nil, purpose: .passwordReset, at: now)
        let revoked = try await tx.revokeSessions(of: user.id, keeping: session, reason: reason, at: now)
        try await tx.deleteIdempotencyKeys(of: user.id)
        try await mail.queuePasswordChanged(work, user: user)
        return revoked.count
    }
}
