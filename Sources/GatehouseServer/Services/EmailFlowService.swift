import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Everything that runs through a person's inbox: email verification, password reset and
/// magic links, for the JSON API and the hosted pages alike.
struct EmailFlowService: Sendable {
    let store: any GatehouseStore
    let auth: AuthService
    let mail: AccountMail
    let links: EmailLinks
    let throttle: ThrottleService
    let redirects: RedirectPolicy
    let preset: Preset
    let clock: any WallClock
    let merges: MergeTokens

    // MARK: Verification

    /// `POST /v1/auth/email/verification`: (re)sends the link, at most once a minute and five
    /// times a day (the preset's numbers), counting the one sent at sign-up.
    func resendVerification(_ user: User) async throws {
        guard user.email != nil else {
            throw GatehouseError.invalidRequest("This account has no email address to verify.")
        }
        guard !user.emailVerified else {
            throw GatehouseError(status: 409, code: .alreadyVerified, message: preset.text("error.already_verified", "Your email is already verified."))
        }
        let now = clock.now
        // The count and the new link in one transaction that holds the user's row (PostgreSQL's
        // row lock; SQLite's single writer), so parallel resends take turns and see each
        // other's links: never more mail than the limits allow (finding 6).
        try await store.transaction { tx in
            try await tx.lockUser(user.id)
            let sent = try await tx.emailTokenTimes(userID: user.id, purpose: .verifyEmail, since: now.addingTimeInterval(-86_400))
            if let wait = MailRequestPolicy.retryAfter(
                sent: sent, now: now, interval: preset.verification.resendIntervalSeconds, perDay: preset.verification.resendDailyLimit)
            {
                throw rateLimited(wait)
            }
            try await mail.queueVerification(tx, user: user)
        }
        mail.wake()
    }

    /// `POST /v1/auth/email/verify` and the hosted page: marks the address verified.
    func verifyEmail(token: String) async throws -> UserResponse {
        let user = try await verifiedUser(token: token)
        return UserResponse(user: user.payload(identities: try await store.identities(of: user.id)))
    }

    private func verifiedUser(token: String) async throws -> User {
        let hash = TokenService.hash(token)
        let now = clock.now
        guard let record = try await store.emailToken(hash: hash), record.purpose == .verifyEmail, let userID = record.userID else {
            throw tokenInvalid
        }
        switch record.state(at: now) {
        case .expired:
            throw tokenExpired
        case .used:
            // A second tap on the same link: fine if it did its job.
            if let user = try await store.user(id: userID), user.emailVerified, user.normalizedEmail == record.normalizedEmail {
                return user
            }
            throw tokenInvalid
        case .valid:
            break
        }
        try await store.transaction { tx in
            guard try await tx.useEmailToken(hash: hash, at: now),
                try await tx.markEmailVerified(userID, normalizedEmail: record.normalizedEmail, at: now)
            else {
                // Used meanwhile, or the account's address changed since the link was made.
                throw tokenInvalid
            }
            try await tx.insertAudit(AuditEvent(createdAt: now, event: "email_verified", outcome: "success", userID: userID))
        }
        guard let user = try await store.user(id: userID) else { throw tokenInvalid }
        return user
    }

    // MARK: Password reset

    /// `POST /v1/auth/password/forgot`. Under `strict` the answer and the work are the same
    /// whether or not the address has an account: one queued request, composed later by the
    /// mail worker. `helpful` (Handz) says so when there is none.
    func forgotPassword(email: String, client: ClientInfo) async throws {
        try auth.requireMethod(preset.signInMethods.emailPassword)
        let (address, normalized) = try await checkRequest(email: email, kind: "password_reset", client: client)
        if preset.enumerationProtection == .helpful, try await store.user(normalizedEmail: normalized) == nil {
            throw GatehouseError(
                status: 404, code: .emailNotFound, message: preset.text("error.email_not_found", "No account found for that email."))
        }
        try await store.transaction { tx in
            try await mail.queueRequest(tx, kind: "password_reset", email: address)
        }
        mail.wake()
    }

    /// What a link is worth, for the hosted pages; `nil` when there is no such link. A reset
    /// link made under an older password, or for a disabled account, counts as used.
    func linkState(token: String, purpose: EmailTokenPurpose) async throws -> (record: EmailToken, state: EmailToken.State)? {
        guard let record = try await store.emailToken(hash: TokenService.hash(token)), record.purpose == purpose else { return nil }
        let state = record.state(at: clock.now)
        if purpose == .passwordReset, state == .valid {
            guard let userID = record.userID, let user = try await store.user(id: userID), !user.isDisabled, record.matchesPassword(of: user)
            else { return (record, .used) }
        }
        return (record, state)
    }

    /// `POST /v1/auth/password/reset` and the hosted form: sets the new password, ends every
    /// session, verifies the address (the link proved the inbox) and mails a notice.
    func resetPassword(token: String, password: String, client: ClientInfo) async throws {
        try auth.requireMethod(preset.signInMethods.emailPassword)
        let hash = TokenService.hash(token)
        let now = clock.now
        let kept = client.stored(under: preset.privacy)
        guard let record = try await store.emailToken(hash: hash), record.purpose == .passwordReset, let userID = record.userID,
            let user = try await store.user(id: userID), !user.isDisabled
        else {
            throw tokenInvalid
        }
        switch record.state(at: now) {
        case .expired:
            throw GatehouseError(
                status: 400, code: .resetTokenExpired,
                message: preset.text("error.reset_token_expired", "This password reset link has expired. Please request a new one."))
        case .used:
            throw usedResetLink
        case .valid:
            guard record.matchesPassword(of: user) else { throw usedResetLink }
        }
        // The policy first, so that a weak password leaves the link usable for another try.
        try await auth.checkPassword(password, email: user.normalizedEmail ?? "")
        let newHash = try await auth.hasher.hash(password)
        try await store.transaction { tx in
            guard try await tx.useEmailToken(hash: hash, at: now) else { throw usedResetLink }
            if !user.emailVerified {
                // The first proof of the address: nothing added before it survives (finding 13).
                try await endWhatCameBeforeProof(tx, user, removePassword: false, client: kept, now: now)
            }
            try await tx.updatePassword(userID, hash: newHash, changedAt: now, now: now)
            try await tx.retireEmailTokens(userID: userID, normalizedEmail: nil, purpose: .passwordReset, at: now)
            if let normalized = user.normalizedEmail {
                _ = try await tx.markEmailVerified(userID, normalizedEmail: normalized, at: now)
            }
            let revoked = try await tx.revokeSessions(of: userID, keeping: nil, reason: "password_reset", at: now)
            try await tx.deleteIdempotencyKeys(of: userID)
            try await tx.insertAudit(
                AuditEvent(createdAt: now, event: "password_reset", outcome: "success", userID: userID, ipAddress: kept.ip,
                           userAgent: kept.userAgent, details: ["sessions_revoked": String(revoked.count)]))
            var updated = user
            updated.emailVerifiedAt = user.emailVerifiedAt ?? now
            try await mail.queuePasswordChanged(tx, user: updated)
        }
        mail.wake()
        if let normalized = user.normalizedEmail { try await throttle.clearAccount(normalized) }
    }

    // MARK: Magic links

    /// `POST /v1/auth/magic-link`: queues a link and code for the address, account or not
    /// (the link signs a new person up).
    func requestMagicLink(email: String, redirectTo: String?, client: ClientInfo, upgrading: User? = nil) async throws {
        try auth.requireMethod(preset.signInMethods.magicLink)
        let redirect = try redirectTo.map { candidate in
            guard let allowed = redirects.check(candidate) else {
                throw GatehouseError(
                    status: 400, code: .invalidRedirect,
                    message: "This redirect address is not allowed. Add its origin to GATEHOUSE_REDIRECT_ALLOWLIST.")
            }
            return allowed
        }
        let (address, _) = try await checkRequest(email: email, kind: "magic_link", client: client)
        try await store.transaction { tx in
            try await mail.queueRequest(
                tx, kind: "magic_link", email: address, redirectTo: redirect,
                upgrading: upgrading.flatMap { $0.isAnonymous ? $0.id : nil })
        }
        mail.wake()
    }

    /// `POST /v1/auth/magic-link/verify`: the link's token, or the address and the code.
    func verifyMagicLink(token: String?, email: String?, code: String?, client: ClientInfo) async throws -> SignInResponse {
        try auth.requireMethod(preset.signInMethods.magicLink)
        let kept = client.stored(under: preset.privacy)
        let now = clock.now
        let record: EmailToken
        if let token, !token.isEmpty {
            guard let found = try await store.emailToken(hash: TokenService.hash(token)), found.purpose == .magicLink else {
                throw tokenInvalid
            }
            record = found
        } else if let email, let code {
            try await throttle.limitIP("magic-code", client: client, limit: preset.throttling.loginPerIPPerMinute, windowSeconds: 60)
            record = try await checkCode(email: email, code: code)
        } else {
            throw GatehouseError.invalidRequest("Send the link's token, or the email address and the 6-digit code.")
        }
        try refuseUnusable(record, at: now)
        if let anonymous = record.upgradeUserID, try await store.user(id: anonymous)?.isAnonymous == true {
            return try await upgrade(anonymous, record: record, client: kept, now: now)
        }
        let (response, created) = try await auth.withTemporaryHandle { handle in
            try await store.transaction { tx -> (AuthResponse, Bool) in
                guard try await tx.useEmailToken(hash: record.hash, at: now) else { throw tokenInvalid }
                let (user, created) = try await signInUser(tx, record: record, handle: handle, client: kept, now: now)
                if created { try await auth.events.record(tx, "user.created", user: user.id, data: ["provider": "magic_link"]) }
                let response = try await auth.signIn(in: tx, user, provider: "email", client: kept, event: created ? "signup" : "login")
                return (response, created)
            }
        }
        mail.wake()
        auth.events.wake()
        // The inbox owner got in without the password: a lockout kept up by someone guessing it
        // ends here (finding 11).
        try await throttle.clearAccount(record.normalizedEmail)
        return SignInResponse(user: response.user, session: response.session, created: created)
    }

    /// Uses up the live magic-link code of an address as proof that the person holds the inbox
    /// (e.g. before deleting the account); throws like `magic-link/verify`.
    func consumeCode(email: String, code: String) async throws {
        let record = try await checkCode(email: email, code: code)
        try refuseUnusable(record, at: clock.now)
        guard try await store.useEmailToken(hash: record.hash, at: clock.now) else { throw tokenInvalid }
    }

    /// A magic link asked for by a signed-in anonymous account: the address joins that account
    /// (same id, data kept, `user.upgraded`), or, when the address has an account already,
    /// 409 `identity_in_use` with a merge token.
    private func upgrade(_ anonymous: UserID, record: EmailToken, client: ClientInfo, now: Date) async throws -> SignInResponse {
        let response = try await store.transaction { tx -> AuthResponse in
            guard try await tx.useEmailToken(hash: record.hash, at: now), var user = try await tx.user(id: anonymous) else {
                throw tokenInvalid
            }
            if let owner = try await tx.user(normalizedEmail: record.normalizedEmail), owner.id != anonymous {
                throw try merges.identityInUse("This email already belongs to another account.", caller: user, owner: owner.id)
            }
            try await tx.updateEmail(anonymous, email: record.email, normalizedEmail: record.normalizedEmail, verifiedAt: now, now: now)
            try await tx.insertIdentity(
                Identity(userID: anonymous, provider: .email, subject: record.normalizedEmail, email: record.email, createdAt: now))
            try await auth.events.upgradeAnonymous(tx, anonymous, provider: "magic_link")
            user.email = record.email
            user.normalizedEmail = record.normalizedEmail
            user.emailVerifiedAt = now
            user.isAnonymous = false
            return try await auth.signIn(in: tx, user, provider: "email", client: client, event: "login")
        }
        auth.events.wake()
        return SignInResponse(user: response.user, session: response.session, created: false)
    }

    /// Finds the live code for an address and checks it. The attempt is reserved before the
    /// comparison by one conditional update (`code_attempts < limit`, unused, unexpired), so
    /// the limit holds for any number of parallel guesses (finding 1); the guess that uses the
    /// last attempt and is wrong kills the code.
    private func checkCode(email: String, code: String) async throws -> EmailToken {
        let normalized = EmailAddress.normalize(email)
        guard EmailAddress.isValid(email), let record = try await store.newestEmailToken(normalizedEmail: normalized, purpose: .magicLink)
        else {
            throw tokenInvalid
        }
        let limit = preset.email.magicCodeMaxAttempts
        let now = clock.now
        guard record.state(at: now) == .valid else { return record }
        guard let attempts = try await store.reserveCodeAttempt(hash: record.hash, limit: limit, now: now) else {
            // No attempt left, or used or expired meanwhile: say which.
            let current = try await store.emailToken(hash: record.hash) ?? record
            if MagicCodePolicy.isExhausted(unreserved: current, at: now, maxAttempts: limit) { throw codeExhausted }
            return current
        }
        let trimmed = code.filter { !$0.isWhitespace }
        guard try links.codeMatches(trimmed, token: record) else {
            switch MagicCodePolicy.wrongCode(attempt: attempts, maxAttempts: limit) {
            case .exhausted:
                _ = try await store.useEmailToken(hash: record.hash, at: now)
                throw codeExhausted
            case .retry(let attemptsLeft):
                throw GatehouseError(
                    status: 400, code: .tokenInvalid,
                    message: preset.text("error.code_invalid", "That code is not right. Check the email and try again."),
                    details: ["attempts_left": .number(Double(attemptsLeft))])
            }
        }
        return record
    }

    /// Throws the answer to a link or code the policy refuses (expired, used, or killed by
    /// wrong codes).
    private func refuseUnusable(_ record: EmailToken, at now: Date) throws {
        switch MagicCodePolicy.refusal(record, at: now, maxAttempts: preset.email.magicCodeMaxAttempts) {
        case .expired: throw tokenExpired
        case .invalid: throw tokenInvalid
        case .exhausted: throw codeExhausted
        case nil: break
        }
    }

    /// The account a magic link signs in to, made when there is none. An existing account whose
    /// address was never verified may have been set up by someone else with this address (a
    /// pre-hijack): the inbox owner gets it without anything added before this proof.
    private func signInUser(
        _ tx: any GatehouseStore, record: EmailToken, handle: String?, client: ClientInfo, now: Date
    ) async throws -> (User, created: Bool) {
        if var user = try await tx.user(normalizedEmail: record.normalizedEmail) {
            guard !user.isDisabled else { throw auth.accountDisabled }
            if !user.emailVerified {
                try await endWhatCameBeforeProof(tx, user, removePassword: true, client: client, now: now)
                if user.passwordHash != nil { user.passwordChangedAt = now }
                user.passwordHash = nil
                _ = try await tx.markEmailVerified(user.id, normalizedEmail: record.normalizedEmail, at: now)
                user.emailVerifiedAt = now
            }
            if try await tx.identities(of: user.id).contains(where: { $0.provider == .email }) == false {
                try await tx.insertIdentity(
                    Identity(userID: user.id, provider: .email, subject: record.normalizedEmail, email: record.email, createdAt: now))
            }
            return (user, false)
        }
        let user = User(
            id: .random(), email: record.email, normalizedEmail: record.normalizedEmail, emailVerifiedAt: now, handle: handle,
            createdAt: now)
        try await tx.insertUser(user)
        try await tx.insertIdentity(
            Identity(userID: user.id, provider: .email, subject: record.normalizedEmail, email: record.email, createdAt: now))
        return (user, true)
    }

    /// The inbox owner proves an address the account never verified (finding 13): whoever set
    /// the account up with it may not be that person, so every way in added before this proof
    /// ends: the password (unless the proof sets a new one), every provider identity, every
    /// session and every Idempotency-Key that could replay a sign-in.
    private func endWhatCameBeforeProof(
        _ tx: any GatehouseStore, _ user: User, removePassword: Bool, client: ClientInfo, now: Date
    ) async throws {
        if removePassword, user.passwordHash != nil {
            try await tx.updatePassword(user.id, hash: nil, changedAt: now, now: now)
        }
        var removed: [String] = []
        for identity in try await tx.identities(of: user.id) where identity.provider != .email && identity.provider != .anonymous {
            if identity.provider == .apple { try await auth.events.jobs.queueAppleRevocation(tx, user: user.id) }
            _ = try await tx.deleteIdentities(of: user.id, provider: identity.provider)
            removed.append(identity.provider.rawValue)
        }
        let revoked = try await tx.revokeSessions(of: user.id, keeping: nil, reason: "unverified_takeover_guard", at: now)
        try await tx.deleteIdempotencyKeys(of: user.id)
        try await tx.insertAudit(
            AuditEvent(createdAt: now, event: "unverified_access_removed", outcome: "success", userID: user.id,
                       ipAddress: client.ip, userAgent: client.userAgent,
                       details: ["sessions_revoked": String(revoked.count), "identities_removed": removed.sorted().joined(separator: ","),
                                 "password_removed": String(removePassword && user.passwordHash != nil)]))
    }

    // MARK: "Send a new link" (hosted pages)

    enum ResendOutcome: Sendable, Equatable {
        case sent
        case alreadyVerified
        case rateLimited(Int)
        case invalid
    }

    /// Sends a fresh link of the same kind to the same person as `token` (expired or used).
    func resendLink(token: String, client: ClientInfo) async throws -> ResendOutcome {
        guard let record = try await store.emailToken(hash: TokenService.hash(token)) else { return .invalid }
        do {
            switch record.purpose {
            case .verifyEmail:
                guard let userID = record.userID, let user = try await store.user(id: userID), !user.isDisabled,
                    user.normalizedEmail == record.normalizedEmail
                else { return .invalid }
                if user.emailVerified { return .alreadyVerified }
                try await resendVerification(user)
            case .passwordReset:
                try await forgotPassword(email: record.email, client: client)
            case .magicLink:
                try await requestMagicLink(email: record.email, redirectTo: record.redirectTo, client: client)
            default:
                return .invalid
            }
        } catch let error as GatehouseError where error.code == .rateLimited {
            return .rateLimited(error.retryAfter ?? 60)
        } catch let error as GatehouseError where error.code == .emailNotFound || error.code == .methodDisabled {
            return .invalid
        }
        return .sent
    }

    // MARK: Helpers

    /// Validates the address (canonical form only) and counts the request against the client's
    /// address and the email address; returns the address and its normalised form. The same
    /// work whether or not it has an account.
    private func checkRequest(email: String, kind: String, client: ClientInfo) async throws -> (address: String, normalized: String) {
        try await throttle.limitIP("mail-request", client: client, limit: preset.email.requestsPerIPPerHour, windowSeconds: 3_600)
        let address = try auth.canonicalAddress(email)
        let normalized = EmailAddress.normalize(address)
        let key = "mail-request:\(kind):\(normalized)"
        if preset.email.requestIntervalSeconds > 0 {
            try await throttle.limit(key, limit: 1, windowSeconds: Int64(preset.email.requestIntervalSeconds))
        }
        try await throttle.limit(key, limit: preset.email.requestsPerDay, windowSeconds: 86_400)
        return (address, normalized)
    }

    private func rateLimited(_ wait: Int) -> GatehouseError {
        GatehouseError(
            status: 429, code: .rateLimited,
            message: preset.text("error.rate_limited", "Too many requests. Please wait a moment and try again."), retryAfter: wait)
    }

    var tokenInvalid: GatehouseError {
        GatehouseError(
            status: 400, code: .tokenInvalid,
            message: preset.text("error.token_invalid", "This link is not valid or has already been used. Please request a new one."))
    }
    var tokenExpired: GatehouseError {
        GatehouseError(status: 400, code: .tokenExpired, message: preset.text("error.token_expired", "This link has expired. Please request a new one."))
    }
    var codeExhausted: GatehouseError {
        GatehouseError(
            status: 400, code: .codeExhausted,
            message: preset.text("error.code_exhausted", "Too many wrong codes. Please request a new sign-in link."))
    }
    var usedResetLink: GatehouseError {
        GatehouseError(
            status: 400, code: .tokenInvalid,
            message: preset.text("error.reset_token_used", "This password reset link has already been used. Please request a new one."))
    }
}
