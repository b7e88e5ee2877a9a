import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Sign in with Apple and Google, linking and unlinking identities, and Apple's account events.
///
/// Users are keyed by (provider, `sub`), never by email. A provider's address joins an existing
/// account only when that is safe: the provider says the address is verified, the account's
/// address is verified too, and it is not an Apple private-relay address (pre-hijacking
/// defence, decision 8). Otherwise the answer is 409 `link_confirmation_required` and the person
/// links from inside the account.
struct ProviderSignInService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & PasswordStore & IdentityStore & ProfileStore & IdempotencyStore & SessionStore
        & RefreshTokenStore & EmailTokenStore & PlanLedgerStore & ReplayStore & PasskeyStore & MFAFactorStore
        & RecoveryCodeStore & MFAChallengeStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let gate: SignInGate
    let credentials: Credentials
    let sessions: SessionIssuer
    let lifecycle: AccountLifecycle
    let mail: AccountMail
    let throttle: Throttle
    let verifiers: ProviderVerifiers
    let preset: Preset
    /// Exchanges Apple's authorization code in the background (when Apple credentials are set).
    let appleTokens: Bool
    let merges: MergeTokens
    let stepUp: StepUpGate

    func signIn(_ provider: Provider, _ request: ProviderSignInRequest, client: ClientInfo) async throws -> SignInAnswer<SignInResponse> {
        try gate.requireMethod(provider == .apple ? preset.signInMethods.apple : preset.signInMethods.google)
        let person = try await verifiers.verifier(provider).verify(request.idToken, rawNonce: request.rawNonce)
        let displayName = Self.displayName(request.fullName) ?? person.name
        let avatar = provider == .google ? person.picture : nil
        // The app's say before a person new to it gets an account (`BEFORE_USER_CREATED`), asked
        // before the transaction when what it reads says one will be made.
        let credential: Credential = provider == .apple ? .apple : .google
        let vouched = person.email.flatMap(EmailAddress.canonical)
        let newAccount = NewAccount(
            .wayIn(credential), email: person.emailVerified ? vouched : nil,
            provider: NewAccount.ProviderClaims(subject: person.subject, email: person.email, emailVerified: person.emailVerified, name: displayName))
        var needed = try await store.identity(provider: provider, subject: person.subject) == nil
        if needed, let vouched { needed = try await store.user(normalizedEmail: EmailAddress.normalize(vouched)) == nil }
        // A new account's id, the same if the transaction runs twice (`BEFORE_SIGN_IN`).
        let id = UserID.random()
        let (outcome, created, userID) = try await lifecycle.admitting(newAccount, client: client, needed: needed) { admission in
            try await sessions.signingIn(client: client) { admitted in
                try await lifecycle.withTemporaryHandle { handle in
                    try await unitOfWork.run(client: client) { work -> (SignInOutcome, Bool, UserID) in
                        let (tx, now) = (work.tx, work.now)
                        // A returning person: the identity decides, whatever the address says.
                        if let identity = try await tx.identity(provider: provider, subject: person.subject) {
                            guard let user = try await tx.user(id: identity.userID) else { throw GatehouseError.invalidCredentials(preset) }
                            guard !user.isDisabled else { throw GatehouseError.accountDisabled(preset) }
                            // Apple sends the address on the first sign-in only; later tokens keep the stored one.
                            if let email = person.email, email != identity.email || person.isPrivateRelay != identity.isPrivateRelay {
                                try await tx.updateIdentity(identity.id, email: email, isPrivateRelay: person.isPrivateRelay)
                            }
                            return (try await sessions.signIn(work.narrowed { $0 }, user, provider: provider, event: .login, door: .provider, admitted: admitted), false, user.id)
                        }
                        let address = person.email.flatMap(EmailAddress.canonical)
                        if let address, let existing = try await tx.user(normalizedEmail: EmailAddress.normalize(address)) {
                            guard person.emailVerified, existing.emailVerified, !person.isPrivateRelay else { throw linkConfirmationRequired }
                            guard !existing.isDisabled else { throw GatehouseError.accountDisabled(preset) }
                            try await tx.insertIdentity(
                                Identity(userID: existing.id, provider: provider, subject: person.subject, email: address,
                                         isPrivateRelay: person.isPrivateRelay, createdAt: now))
                            try await tx.fillProfile(existing.id, displayName: displayName, avatarURL: avatar, now: now)
                            try await audit(work, .identityLinked, user: existing.id, provider: provider, how: "verified email")
                            let user = try await tx.user(id: existing.id) ?? existing
                            return (try await sessions.signIn(work.narrowed { $0 }, user, provider: provider, event: .login, door: .provider, admitted: admitted), false, user.id)
                        }
                        // An address the provider does not vouch for never becomes the account's (finding
                        // 13): it stays on the identity only, so it cannot squat the inbox owner's account.
                        let owned = person.emailVerified ? address : nil
                        let user = User(
                            id: id, email: owned, normalizedEmail: owned.map(EmailAddress.normalize),
                            emailVerifiedAt: owned != nil ? now : nil, displayName: displayName, handle: handle,
                            avatarURL: avatar, createdAt: now)
                        try await lifecycle.create(
                            work.narrowed { $0 }, user,
                            identity: Identity(userID: user.id, provider: provider, subject: person.subject, email: address,
                                               isPrivateRelay: person.isPrivateRelay, createdAt: now),
                            provider: provider, admitted: admission)
                        return (try await sessions.signIn(work.narrowed { $0 }, user, provider: provider, event: .signup, door: .provider, admitted: admitted), true, user.id)
                    }
                }
            }
        }
        if let code = request.authorizationCode, provider == .apple, appleTokens {
            // Apple's refresh token, for revoking it at deletion; fetched off the request's path.
            try await unitOfWork.run { work in
                try await work.enqueueJob(
                    kind: .appleExchange, payload: ["user_id": userID.description, "subject": person.subject, "code": code])
            }
        }
        return outcome.answer { SignInResponse(user: $0.user, session: $0.session, created: created) }
    }

    // MARK: Linking

    /// `POST /v1/auth/identities/apple|google`: adds the provider to the signed-in account.
    func link(_ signedIn: SignedIn, _ provider: Provider, _ request: ProviderSignInRequest, client: ClientInfo) async throws -> UserResponse {
        // A method the preset turns off cannot be linked either (403 `method_disabled`).
        try gate.requireMethod(provider == .apple ? preset.signInMethods.apple : preset.signInMethods.google)
        let person = try await verifiers.verifier(provider).verify(request.idToken, rawNonce: request.rawNonce)
        let user = signedIn.user
        let address = person.email.flatMap(EmailAddress.canonical)
        // Linking needs a verified address (finding 13): whoever made an account with an address
        // they never proved must not attach a sign-in of their own to it before the inbox owner
        // turns up. A provider that vouches for that very address proves it.
        let providerProvesAddress = person.emailVerified && address.map { EmailAddress.normalize($0) == user.normalizedEmail } == true
        if user.email != nil, !user.emailVerified, !providerProvesAddress {
            throw GatehouseError(
                status: 403, code: .verificationRequired,
                message: preset.text("error.link_needs_verification", "Verify your email address before connecting another sign-in."))
        }
        try await unitOfWork.run(client: client) { work in
            let (tx, now) = (work.tx, work.now)
            // One link at a time per account (the row lock on PostgreSQL; SQLite's single writer).
            try await tx.lockUser(user.id)
            if let identity = try await tx.identity(provider: provider, subject: person.subject) {
                guard identity.userID == user.id else { throw try identityInUse(from: user, owner: identity.userID) }
                return
            }
            if try await tx.identities(of: user.id).contains(where: { $0.provider == provider }) {
                throw GatehouseError(
                    status: 409, code: .identityInUse, message: "This account is already connected to another \(provider.displayName) account.")
            }
            try await tx.insertIdentity(
                Identity(userID: user.id, provider: provider, subject: person.subject, email: address,
                         isPrivateRelay: person.isPrivateRelay, createdAt: now))
            if providerProvesAddress, !user.emailVerified, let normalized = user.normalizedEmail {
                _ = try await tx.markEmailVerified(user.id, normalizedEmail: normalized, at: now)
            }
            // The provider's address becomes the account's only when it has none, and only one
            // the provider vouches for.
            if user.email == nil, let address, person.emailVerified,
                try await tx.user(normalizedEmail: EmailAddress.normalize(address)) == nil
            {
                try await tx.updateEmail(user.id, email: address, normalizedEmail: EmailAddress.normalize(address), verifiedAt: now, now: now)
            }
            try await tx.fillProfile(
                user.id, displayName: Self.displayName(request.fullName) ?? person.name,
                avatarURL: provider == .google ? person.picture : nil, now: now)
            try await audit(work, .identityLinked, user: user.id, provider: provider, how: "signed in")
            try await upgradeIfAnonymous(work, user, provider: provider)
        }
        return try await userResponse(user.id)
    }

    /// `POST /v1/auth/identities/email`: adds an email and password to the signed-in account.
    func linkEmail(_ signedIn: SignedIn, email: String, password: String, client: ClientInfo) async throws -> UserResponse {
        try gate.requireMethod(preset.signInMethods.emailPassword)
        try await stepUp.require(.changeEmail, signedIn)
        let user = signedIn.user
        // What a sign-up costs, before anything says whether the address is taken (finding 8):
        // the per-IP sign-up limit, a canonical address, and the password policy.
        try await throttle.limitIP("signup", client: client, limit: preset.throttling.signupPerIPPerHour, windowSeconds: 3_600)
        let address = try credentials.canonicalAddress(email)
        let normalized = EmailAddress.normalize(address)
        try await credentials.checkStrength(password, email: normalized)
        let hash = try await credentials.hash(password)
        do {
            try await unitOfWork.run(client: client) { work in
                let (tx, now) = (work.tx, work.now)
                // The checks inside the transaction that holds the user's row, so two parallel
                // links cannot both pass them.
                try await tx.lockUser(user.id)
                guard let current = try await tx.user(id: user.id) else { throw GatehouseError.unauthorized() }
                if try await tx.identities(of: user.id).contains(where: { $0.provider == .email }) {
                    throw GatehouseError(status: 409, code: .identityInUse, message: "This account already has an email and password.")
                }
                if let owner = try await tx.user(normalizedEmail: normalized), owner.id != user.id {
                    throw current.isAnonymous ? try identityInUse(from: current, owner: owner.id) : GatehouseError.emailInUse(preset)
                }
                let sameAddress = current.normalizedEmail == normalized
                try await tx.updateEmail(
                    user.id, email: address, normalizedEmail: normalized, verifiedAt: sameAddress ? current.emailVerifiedAt : nil, now: now)
                try await tx.updatePassword(user.id, hash: hash, changedAt: now, now: now)
                try await tx.insertIdentity(Identity(userID: user.id, provider: .email, subject: normalized, email: address, createdAt: now))
                try await audit(work, .identityLinked, user: user.id, provider: .email, how: "password")
                try await upgradeIfAnonymous(work, current, provider: .email)
                if !(sameAddress && current.emailVerified), preset.verification.sendOnSignup, var updated = try await tx.user(id: user.id) {
                    updated.emailVerifiedAt = nil
                    try await mail.queueVerification(work.narrowed { $0 }, user: updated)
                }
            }
        } catch StoreError.uniqueViolation {
            throw GatehouseError.emailInUse(preset)
        }
        return try await userResponse(user.id)
    }

    private func upgradeIfAnonymous(_ work: Work<Stores>, _ user: User, provider: Provider) async throws {
        guard user.isAnonymous else { return }
        try await lifecycle.upgradeAnonymous(work.narrowed { $0 }, user.id, provider: provider)
    }

    /// 409 `identity_in_use`, with a merge token for an anonymous caller.
    private func identityInUse(from user: User, owner: UserID) throws -> GatehouseError {
        try merges.identityInUse("This sign-in already belongs to another account.", caller: user, owner: owner)
    }

    /// `DELETE /v1/auth/identities/{provider}`: never the last way in.
    func unlink(_ signedIn: SignedIn, provider name: String, client: ClientInfo) async throws {
        let provider = Provider(rawValue: name)
        let user = signedIn.user
        try await unitOfWork.run(client: client) { work in
            let (tx, now) = (work.tx, work.now)
            // "Never the last way in" holds for parallel unlinks too: they take turns on the row.
            try await tx.lockUser(user.id)
            let identities = try await tx.identities(of: user.id)
            guard identities.contains(where: { $0.provider == provider }) else {
                throw GatehouseError.notFound("This account has no \(provider.displayName) sign-in.")
            }
            // The email identity carries the password with it.
            let removed: [Credential: Int] = provider == .email
                ? [.emailLink: 1, .password: 1] : Credential.identity(provider).map { [$0: 1] } ?? [:]
            try await lifecycle.requireAnotherWayIn(
                work.narrowed { $0 }, user.id, removing: removed, message: "This is the only way to sign in to this account, so it cannot be removed.")
            if provider == .apple { try await work.queueAppleRevocation(of: user.id) }
            _ = try await tx.deleteIdentities(of: user.id, provider: provider)
            if provider == .email {
                try await tx.updatePassword(user.id, hash: nil, changedAt: now, now: now)
            }
            try await audit(work, .identityUnlinked, user: user.id, provider: provider, how: "by user")
        }
    }

    // MARK: Apple's server-to-server events

    /// `POST /v1/webhooks/apple/sign-in`. Every event is idempotent: a duplicate finds nothing
    /// left to do.
    func handleAppleEvent(_ payload: String) async throws {
        let event: AppleEvent
        do {
            event = try await verifiers.apple.verifiedEvent(payload)
        } catch let error as GatehouseError where error.code == .providerUnavailable {
            throw error
        } catch {
            throw GatehouseError.invalidRequest("The event could not be verified.")
        }
        try await unitOfWork.run { work in
            let (tx, now) = (work.tx, work.now)
            // Each event once (finding 14): the id is reserved by a unique key before anything
            // is done, in the same transaction, so a failure lets Apple's retry through.
            guard try await tx.recordMessageID(issuer: "apple-sign-in", id: event.id, keepUntil: event.keepUntil) else {
                throw GatehouseError.invalidRequest("This event was delivered before.")
            }
            guard let identity = try await tx.identity(provider: .apple, subject: event.sub) else { return }
            let user = identity.userID
            switch event.type {
            case "consent-revoked", "account-delete":
                let others = try await tx.identities(of: user).filter { $0.provider != .apple }
                _ = try await tx.deleteIdentities(of: user, provider: .apple)
                _ = try await tx.revokeSessions(of: user, provider: Provider.apple.rawValue, reason: event.type == "account-delete" ? .appleAccountDelete : .appleConsentRevoked, at: now)
                if others.isEmpty {
                    // Apple was the only way in: nothing of the account can be reached any more.
                    _ = try await tx.revokeSessions(of: user, keeping: nil, reason: event.type == "account-delete" ? .appleAccountDelete : .appleConsentRevoked, at: now)
                }
                if event.type == "account-delete", others.isEmpty {
                    _ = try await lifecycle.delete(work.narrowed { $0 }, user, reason: "apple_account_deleted")
                }
            case "email-disabled", "email-enabled":
                try await tx.updateIdentity(
                    identity.id, email: event.email ?? identity.email, isPrivateRelay: event.isPrivateEmail ?? identity.isPrivateRelay)
            default:
                break
            }
            try await work.audit(.appleEvent, AuditEvent.Outcome(rawValue: event.type), user: event.type == "account-delete" ? nil : user, details: ["type": event.type])
        }
    }

    // MARK: Helpers

    private func userResponse(_ id: UserID) async throws -> UserResponse {
        guard let user = try await store.user(id: id) else { throw GatehouseError.unauthorized() }
        return UserResponse(user: user.payload(identities: try await store.identities(of: id)))
    }

    private func audit(_ work: Work<Stores>, _ event: AuditEvent.Name, user: UserID, provider: Provider, how: String) async throws {
        try await work.audit(event, user: user, details: ["provider": provider.rawValue, "how": how])
    }

    static func displayName(_ name: PersonName?) -> String? {
        guard let name else { return nil }
        let joined = [name.givenName, name.familyName].compactMap { $0?.trimmingCharacters(in: .whitespacesAndNewlines) }
            .filter { !$0.isEmpty }.joined(separator: " ")
        return joined.isEmpty ? nil : String(joined.prefix(100))
    }

    var linkConfirmationRequired: GatehouseError {
        GatehouseError(
            status: 409, code: .linkConfirmationRequired,
            message: preset.text(
                "error.link_confirmation_required", "An account with this email already exists. Log in with your password to connect it."))
    }
}

/// The id_token verifiers of the two providers.
struct ProviderVerifiers: Sendable {
    let apple: ProviderTokenVerifier
    let google: ProviderTokenVerifier

    func verifier(_ provider: Provider) -> ProviderTokenVerifier { provider == .apple ? apple : google }
}

extension Provider {
    var displayName: String {
        switch self {
        case .apple: return "Apple"
        case .google: return "Google"
        case .email: return "email"
        default: return rawValue
        }
    }
}

/// One Sign in with Apple server-to-server event.
struct AppleEvent: Sendable, Equatable {
    var type: String
    var sub: String
    var email: String?
    var isPrivateEmail: Bool?
    /// The event's `jti`: applied once.
    var id: String
    /// Until when a replay could still pass the age check (how long the id is kept).
    var keepUntil: Date
}
