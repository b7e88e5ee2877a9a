import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Signing in by email: a link and a 6-digit code, which also sign a new person up and turn a
/// signed-in anonymous account into one with the address.
struct MagicLinkService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any PhoneStore & UserStore & PasswordStore & IdentityStore & ProfileStore & IdempotencyStore & SessionStore
        & RefreshTokenStore & EmailTokenStore & PlanLedgerStore & PasskeyStore & MFAFactorStore & RecoveryCodeStore
        & MFAChallengeStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let gate: SignInGate
    let requests: InboxRequests
    let codes: MagicCodes
    let sessions: SessionIssuer
    let lifecycle: AccountLifecycle
    let mail: AccountMail
    let merges: MergeTokens
    let redirects: RedirectPolicy
    let throttle: Throttle
    let preset: Preset
    let clock: any WallClock

    /// `POST /v1/auth/magic-link`: queues a link and code for the address, account or not
    /// (the link signs a new person up).
    /// `existingAccountsOnly`: an address without an account gets no mail (the mail worker drops
    /// the request, so the answer does not depend on it), and so no link makes an account.
    /// `serverRedirect`: an address of this server's own that the link returns to (the OpenID
    /// provider's pending sign-in), made by the server and never taken from a request.
    func request(
        email: String, redirectTo: String?, client: ClientInfo, upgrading: User? = nil, existingAccountsOnly: Bool = false,
        serverRedirect: String? = nil
    ) async throws {
        try gate.requireMethod(preset.signInMethods.magicLink)
        let redirect = try serverRedirect ?? redirectTo.map { try redirects.require($0) }
        let (address, _) = try await requests.check(email: email, kind: .magicLink, client: client)
        try await unitOfWork.run { work in
            try await mail.queueRequest(
                work, kind: .magicLink, email: address, redirectTo: redirect,
                upgrading: upgrading.flatMap { $0.isAnonymous ? $0.id : nil }, existingAccountsOnly: existingAccountsOnly)
        }
    }

    /// `POST /v1/auth/magic-link/verify`: the link's token, or the address and the code.
    func verify(token: String?, email: String?, code: String?, client: ClientInfo) async throws -> SignInAnswer<SignInResponse> {
        try gate.requireMethod(preset.signInMethods.magicLink)
        let now = clock.now
        let record: EmailToken
        if let token, !token.isEmpty {
            guard let found = try await store.emailToken(hash: StoredSecret.hash(token)), found.purpose == .magicLink else {
                throw GatehouseError.tokenInvalid(preset)
            }
            record = found
        } else if let email, let code {
            try await throttle.limitIP("magic-code", client: client, limit: preset.throttling.loginPerIPPerMinute, windowSeconds: 60)
            record = try await codes.check(email: email, code: code)
        } else {
            throw GatehouseError.invalidRequest("Send the link's token, or the email address and the 6-digit code.")
        }
        try codes.requireValid(record, at: now)
        if let anonymous = record.upgradeUserID, try await store.user(id: anonymous)?.isAnonymous == true {
            return try await upgrade(anonymous, record: record, client: client)
        }
        // The app's say before an address with no account gets one (`BEFORE_USER_CREATED`).
        let newAccount = NewAccount(.wayIn(.emailLink), email: record.email)
        let needed = try await store.user(normalizedEmail: record.normalizedEmail) == nil
        // A new account's id, the same if the transaction runs twice (`BEFORE_SIGN_IN`).
        let id = UserID.random()
        let (outcome, created) = try await lifecycle.admitting(newAccount, client: client, needed: needed) { admission in
            try await sessions.signingIn(client: client) { admitted in
                try await lifecycle.withTemporaryHandle { handle in
                    try await unitOfWork.run(client: client) { work -> (SignInOutcome, Bool) in
                        guard try await work.tx.useEmailToken(hash: record.hash, at: now) else { throw GatehouseError.tokenInvalid(preset) }
                        let (user, created) = try await signInUser(work, record: record, handle: handle, id: id, admission: admission)
                        let outcome = try await sessions.signIn(
                            work.narrowed { $0 }, user, provider: .email, method: Self.method, event: created ? .signup : .login, door: .magicLink,
                            admitted: admitted)
                        return (outcome, created)
                    }
                }
            }
        }
        // The inbox owner got in without the password: a lockout kept up by someone guessing it
        // ends here (finding 11).
        try await throttle.clearAccount(record.normalizedEmail)
        return outcome.answer { SignInResponse(user: $0.user, session: $0.session, created: created) }
    }

    /// The `amr` method of a magic link's (or its code's) sessions.
    static let method = "magic_link"

    /// A magic link asked for by a signed-in anonymous account: the address joins that account
    /// (same id, data kept, `user.upgraded`), or, when the address has an account already,
    /// 409 `identity_in_use` with a merge token.
    private func upgrade(_ anonymous: UserID, record: EmailToken, client: ClientInfo) async throws -> SignInAnswer<SignInResponse> {
        let outcome = try await sessions.signingIn(client: client) { admitted in
            try await unitOfWork.run(client: client) { work -> SignInOutcome in
                let (tx, now) = (work.tx, work.now)
                guard try await tx.useEmailToken(hash: record.hash, at: now), var user = try await tx.user(id: anonymous) else {
                    throw GatehouseError.tokenInvalid(preset)
                }
                if let owner = try await tx.user(normalizedEmail: record.normalizedEmail), owner.id != anonymous {
                    throw try merges.identityInUse("This email already belongs to another account.", caller: user, owner: owner.id)
                }
                try await tx.updateEmail(anonymous, email: record.email, normalizedEmail: record.normalizedEmail, verifiedAt: now, now: now)
                try await tx.insertIdentity(
                    Identity(userID: anonymous, provider: .email, subject: record.normalizedEmail, email: record.email, createdAt: now))
                try await lifecycle.upgradeAnonymous(work.narrowed { $0 }, anonymous, provider: .magicLink)
                user.email = record.email
                user.normalizedEmail = record.normalizedEmail
                user.emailVerifiedAt = now
                user.isAnonymous = false
                return try await sessions.signIn(
                    work.narrowed { $0 }, user, provider: .email, method: Self.method, event: .login, door: .magicLink, admitted: admitted)
            }
        }
        return outcome.answer { SignInResponse(user: $0.user, session: $0.session, created: false) }
    }

    /// The account a magic link signs in to, made when there is none. An existing account whose
    /// address was never verified may have been set up by someone else with this address (a
    /// pre-hijack): the inbox owner gets it without anything added before this proof.
    private func signInUser(
        _ work: Work<Stores>, record: EmailToken, handle: String?, id: UserID, admission: AccountAdmission?
    ) async throws -> (User, created: Bool) {
        let (tx, now) = (work.tx, work.now)
        if let found = try await tx.user(normalizedEmail: record.normalizedEmail) {
            guard !found.isDisabled else { throw GatehouseError.accountDisabled(preset) }
            let user = try await lifecycle.proveInbox(work.narrowed { $0 }, found, removePassword: true)
            if try await tx.identities(of: user.id).contains(where: { $0.provider == .email }) == false {
                try await tx.insertIdentity(
                    Identity(userID: user.id, provider: .email, subject: record.normalizedEmail, email: record.email, createdAt: now))
            }
            return (user, false)
        }
        let user = User(
            id: id, email: record.email, normalizedEmail: record.normalizedEmail, emailVerifiedAt: now, handle: handle,
            createdAt: now)
        try await lifecycle.create(
            work.narrowed { $0 }, user, identity: Identity(userID: user.id, provider: .email, subject: record.normalizedEmail, email: record.email, createdAt: now),
            provider: .magicLink, admitted: admission)
        return (user, true)
    }
}
