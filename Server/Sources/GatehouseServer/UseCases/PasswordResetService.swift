import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// "Forgot password": asking for a reset link and setting a new password with it, for the
/// JSON API and the hosted form alike.
struct PasswordResetService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any PhoneStore & UserStore & PasswordStore & IdentityStore & IdempotencyStore & SessionStore & RefreshTokenStore
        & EmailTokenStore & PlanLedgerStore & PasskeyStore & MFAFactorStore & RecoveryCodeStore & MFAChallengeStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let gate: SignInGate
    let credentials: Credentials
    let requests: InboxRequests
    let lifecycle: AccountLifecycle
    let mail: AccountMail
    let throttle: Throttle
    let sessions: SessionIssuer
    let preset: Preset
    let clock: any WallClock

    /// `POST /v1/auth/password/forgot`. Under `strict` the answer and the work are the same
    /// whether or not the address has an account: one queued request, composed later by the
    /// mail worker. `helpful` (Handz) says so when there is none.
    func forgot(email: String, client: ClientInfo) async throws {
        try gate.requireMethod(preset.signInMethods.emailPassword)
        let (address, normalized) = try await requests.check(email: email, kind: .passwordReset, client: client)
        if preset.enumerationProtection == .helpful, try await store.user(normalizedEmail: normalized) == nil {
            throw GatehouseError(
                status: 404, code: .emailNotFound, message: preset.text("error.email_not_found", "No account found for that email."))
        }
        try await unitOfWork.run { work in
            try await mail.queueRequest(work, kind: .passwordReset, email: address)
        }
    }

    /// `POST /auth/v1/verify` with `type: recovery` (GoTrue's flow): the reset link, used once,
    /// signs its inbox's owner in as a magic link would (it proves the same thing), and the
    /// password is then set with `PUT /auth/v1/user` within `recoveryWindow`. Everything else a
    /// reset does at the link (verifying the address, retiring the other reset links, clearing
    /// the lockout) happens here; the sessions end when the new password is set.
    func redeem(token: String, client: ClientInfo) async throws -> SignInAnswer<AuthResponse> {
        try gate.requireMethod(preset.signInMethods.emailPassword)
        let hash = StoredSecret.hash(token)
        let record = try await validRecord(hash: hash, at: clock.now)
        let outcome = try await sessions.signingIn(client: client) { admitted in
            try await unitOfWork.run(client: client) { work -> SignInOutcome in
                let (tx, now) = (work.tx, work.now)
                guard try await tx.useEmailToken(hash: hash, at: now), let found = try await tx.user(id: record.user.id), !found.isDisabled else {
                    throw GatehouseError.usedResetLink(preset)
                }
                // The first proof of the address: a password set before it may be a pre-hijacker's,
                // and no new one comes with this link, so it goes (as at a magic link).
                let user = try await lifecycle.proveInbox(work.narrowed { $0 }, found, removePassword: true)
                try await tx.retireEmailTokens(userID: user.id, normalizedEmail: nil, purpose: .passwordReset, at: now)
                return try await sessions.signIn(
                    work.narrowed { $0 }, user, provider: .email, method: Self.linkMethod, event: .login, door: .passwordReset, admitted: admitted)
            }
        }
        if let normalized = record.user.normalizedEmail { try await throttle.clearAccount(normalized) }
        return outcome.answer
    }

    /// The `amr` method of a session a reset link opened: the link proves the inbox, as a magic
    /// link does.
    static let linkMethod = MagicLinkService.method
    /// How long after a reset link signed a session in that session may set the password
    /// without the old one.
    static let recoveryWindow: TimeInterval = 600

    /// The reset link's record and account when the link can still be used.
    private func validRecord(hash: [UInt8], at now: Date) async throws -> (record: EmailToken, user: User) {
        guard let record = try await store.emailToken(hash: hash), record.purpose == .passwordReset, let userID = record.userID,
            let user = try await store.user(id: userID), !user.isDisabled
        else {
            throw GatehouseError.tokenInvalid(preset)
        }
        switch record.state(at: now) {
        case .expired:
            throw GatehouseError(
                status: 400, code: .resetTokenExpired,
                message: preset.text("error.reset_token_expired", "This password reset link has expired. Please request a new one."))
        case .used:
            throw GatehouseError.usedResetLink(preset)
        case .valid:
            guard record.matchesPassword(of: user) else { throw GatehouseError.usedResetLink(preset) }
        }
        return (record, user)
    }

    /// `POST /v1/auth/password/reset` and the hosted form: sets the new password, ends every
    /// session, verifies the address (the link proved the inbox) and mails a notice.
    func reset(token: String, password: String, client: ClientInfo) async throws {
        try gate.requireMethod(preset.signInMethods.emailPassword)
        let hash = StoredSecret.hash(token)
        let now = clock.now
        let (_, user) = try await validRecord(hash: hash, at: now)
        let userID = user.id
        // The policy first, so that a weak password leaves the link usable for another try.
        try await credentials.checkStrength(password, email: user.normalizedEmail ?? "")
        let newHash = try await credentials.hash(password)
        try await unitOfWork.run(client: client) { work in
            let tx = work.tx
            guard try await tx.useEmailToken(hash: hash, at: now) else { throw GatehouseError.usedResetLink(preset) }
            // The first proof of the address: nothing added before it survives (finding 13).
            let proved = try await lifecycle.proveInbox(work.narrowed { $0 }, user, removePassword: false)
            try await tx.updatePassword(userID, hash: newHash, changedAt: now, now: now)
            try await tx.retireEmailTokens(userID: userID, normalizedEmail: nil, purpose: .passwordReset, at: now)
            let revoked = try await tx.revokeSessions(of: userID, keeping: nil, reason: .passwordReset, at: now)
            try await tx.deleteIdempotencyKeys(of: userID)
            try await work.audit(.passwordReset, user: userID, details: ["sessions_revoked": String(revoked.count)])
            try await mail.queuePasswordChanged(work, user: proved)
        }
        if let normalized = user.normalizedEmail { try await throttle.clearAccount(normalized) }
    }
}
