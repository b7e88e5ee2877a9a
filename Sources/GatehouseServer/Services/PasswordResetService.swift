import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// "Forgot password": asking for a reset link and setting a new password with it, for the
/// JSON API and the hosted form alike.
struct PasswordResetService: Sendable {
    let store: any UserStore & EmailTokenStore
    let unitOfWork: UnitOfWork
    let gate: SignInGate
    let credentials: Credentials
    let requests: InboxRequests
    let lifecycle: AccountLifecycle
    let mail: AccountMail
    let throttle: ThrottleService
    let preset: Preset
    let clock: any WallClock

    /// `POST /v1/auth/password/forgot`. Under `strict` the answer and the work are the same
    /// whether or not the address has an account: one queued request, composed later by the
    /// mail worker. `helpful` (Handz) says so when there is none.
    func forgot(email: String, client: ClientInfo) async throws {
        try gate.requireMethod(preset.signInMethods.emailPassword)
        let (address, normalized) = try await requests.check(email: email, kind: "password_reset", client: client)
        if preset.enumerationProtection == .helpful, try await store.user(normalizedEmail: normalized) == nil {
            throw GatehouseError(
                status: 404, code: .emailNotFound, message: preset.text("error.email_not_found", "No account found for that email."))
        }
        try await unitOfWork.run { work in
            try await mail.queueRequest(work, kind: "password_reset", email: address)
        }
    }

    /// `POST /v1/auth/password/reset` and the hosted form: sets the new password, ends every
    /// session, verifies the address (the link proved the inbox) and mails a notice.
    func reset(token: String, password: String, client: ClientInfo) async throws {
        try gate.requireMethod(preset.signInMethods.emailPassword)
        let hash = StoredSecret.hash(token)
        let now = clock.now
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
        // The policy first, so that a weak password leaves the link usable for another try.
        try await credentials.checkStrength(password, email: user.normalizedEmail ?? "")
        let newHash = try await credentials.hash(password)
        try await unitOfWork.run(client: client) { work in
            let tx = work.tx
            guard try await tx.useEmailToken(hash: hash, at: now) else { throw GatehouseError.usedResetLink(preset) }
            if !user.emailVerified {
                // The first proof of the address: nothing added before it survives (finding 13).
                try await lifecycle.endWhatCameBeforeProof(work, user, removePassword: false)
            }
            try await tx.updatePassword(userID, hash: newHash, changedAt: now, now: now)
            try await tx.retireEmailTokens(userID: userID, normalizedEmail: nil, purpose: .passwordReset, at: now)
            if let normalized = user.normalizedEmail {
                _ = try await tx.markEmailVerified(userID, normalizedEmail: normalized, at: now)
            }
            let revoked = try await tx.revokeSessions(of: userID, keeping: nil, reason: "password_reset", at: now)
            try await tx.deleteIdempotencyKeys(of: userID)
            try await work.audit(.passwordReset, user: userID, details: ["sessions_revoked": String(revoked.count)])
            var updated = user
            updated.emailVerifiedAt = user.emailVerifiedAt ?? now
            try await mail.queuePasswordChanged(work, user: updated)
        }
        if let normalized = user.normalizedEmail { try await throttle.clearAccount(normalized) }
    }
}
