import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Verifying an account's address: (re)sending the link and following it, for the JSON API and
/// the hosted page alike.
struct EmailVerificationService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdentityStore & EmailTokenStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let mail: AccountMail
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
