import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Verifying an account's address: (re)sending the link and following it, for the JSON API and
/// the hosted page alike.
struct EmailVerificationService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdentityStore & EmailTokenStore & SessionStore & RefreshTokenStore & MFAFactorStore
        & MFAChallengeStore & PlanLedgerStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let mail: AccountMail
    /// `signIn(token:client:)`'s session.
    let sessions: SessionIssuer
    let preset: Preset
    let clock: any WallClock

    /// `POST /v1/auth/email/verification`: (re)sends the link, at most once a minute and five
    /// times a day (the preset's numbers), counting the one sent at sign-up.
    func resend(_ user: User) async throws {
        guard user.email != nil else {
            throw GatehouseError.invalidRequest("This account has no email address to verify.")
        }
        guard !user.emailVerified else {
            throw GatehouseError(status: 409, code: .alreadyVerified, message: preset.text("error.already_verified", "Your email is already verified."))
        }
        // The count and the new link in one transaction that holds the user's row (PostgreSQL's
        // row lock; SQLite's single writer), so parallel resends take turns and see each
        // other's links: never more mail than the limits allow (finding 6).
        try await unitOfWork.run { work in
            try await work.tx.lockUser(user.id)
            let sent = try await work.tx.emailTokenTimes(userID: user.id, purpose: .verifyEmail, since: work.now.addingTimeInterval(-86_400))
            if let wait = MailRequestPolicy.retryAfter(
                sent: sent, now: work.now, interval: preset.verification.resendIntervalSeconds, perDay: preset.verification.resendDailyLimit)
            {
                throw GatehouseError.rateLimited(preset, retryAfter: wait)
            }
            try await mail.queueVerification(work.narrowed { $0 }, user: user)
        }
    }

    /// `POST /v1/auth/email/verify` and the hosted page: marks the address verified.
    func verify(token: String) async throws -> UserResponse {
        let user = try await verifiedUser(token: token)
        return UserResponse(user: user.payload(identities: try await store.identities(of: user.id)))
    }

    /// `/auth/v1`'s `GET` and `POST /verify` with `type` `signup` or `email_change`, as GoTrue
    /// answers them: the link used once (a second use is refused, not answered again), its
    /// address verified (`verify_email`) or made the account's (`email_change_*`, under
    /// `AddressChange`'s rules), and a session, in one transaction. The link proves the inbox it
    /// went to, as a magic link does (`amr` `magic_link`); an account with a second factor gets
    /// its challenge instead.
    func signIn(token: String, client: ClientInfo) async throws -> SignInAnswer<SignInResponse> {
        let hash = StoredSecret.hash(token)
        let now = clock.now
        let purposes: [EmailTokenPurpose] = [.verifyEmail, .emailChangeNew, .emailChangeCurrent]
        guard let record = try await store.emailToken(hash: hash), purposes.contains(record.purpose), let userID = record.userID else {
            throw GatehouseError.tokenInvalid(preset)
        }
        switch record.state(at: now) {
        case .expired: throw GatehouseError.tokenExpired(preset)
        case .used: throw GatehouseError.tokenInvalid(preset)
        case .valid: break
        }
        do {
            let outcome = try await sessions.signingIn(client: client) { admitted in
                try await unitOfWork.run(client: client) { work -> SignInOutcome in
                    guard try await work.tx.useEmailToken(hash: hash, at: now) else { throw GatehouseError.tokenInvalid(preset) }
                    try await work.tx.lockUser(userID)
                    guard let stored = try await work.tx.user(id: userID) else { throw GatehouseError.tokenInvalid(preset) }
                    guard !stored.isDisabled else { throw GatehouseError.accountDisabled(preset) }
                    if record.purpose == .verifyEmail {
                        // The address the link was made for, still the account's.
                        guard try await work.tx.markEmailVerified(userID, normalizedEmail: record.normalizedEmail, at: now) else {
                            throw GatehouseError.tokenInvalid(preset)
                        }
                        try await work.audit(.emailVerified, user: userID)
                    } else {
                        let outcome = try await AddressChange.apply(
                            work.narrowed { $0 }, stored, to: record.email, verified: record.purpose == .emailChangeNew)
                        if case .changed(let verified) = outcome {
                            try await work.audit(.emailChanged, user: userID, details: ["by": "user", "verified": String(verified)])
                        }
                    }
                    guard let user = try await work.tx.user(id: userID) else { throw GatehouseError.tokenInvalid(preset) }
                    return try await sessions.signIn(
                        work.narrowed { $0 }, user, provider: .email, method: MagicLinkService.method, event: .login, door: .emailVerification,
                        admitted: admitted)
                }
            }
            return outcome.answer { SignInResponse(user: $0.user, session: $0.session, created: false) }
        } catch let error as StoreError where AddressChange.inUse(error) {
            throw GatehouseError(status: 409, code: .emailInUse, message: "This email is already in use.")
        }
    }

    private func verifiedUser(token: String) async throws -> User {
        let hash = StoredSecret.hash(token)
        let now = clock.now
        guard let record = try await store.emailToken(hash: hash), record.purpose == .verifyEmail, let userID = record.userID else {
            throw GatehouseError.tokenInvalid(preset)
        }
        switch record.state(at: now) {
        case .expired:
            throw GatehouseError.tokenExpired(preset)
        case .used:
            // A second tap on the same link: fine if it did its job.
            if let user = try await store.user(id: userID), user.emailVerified, user.normalizedEmail == record.normalizedEmail {
                return user
            }
            throw GatehouseError.tokenInvalid(preset)
        case .valid:
            break
        }
        try await unitOfWork.run { work in
            guard try await work.tx.useEmailToken(hash: hash, at: now),
                try await work.tx.markEmailVerified(userID, normalizedEmail: record.normalizedEmail, at: now)
            else {
                // Used meanwhile, or the account's address changed since the link was made.
                throw GatehouseError.tokenInvalid(preset)
            }
            try await work.audit(.emailVerified, user: userID)
        }
        guard let user = try await store.user(id: userID) else { throw GatehouseError.tokenInvalid(preset) }
        return user
    }
}
