import Foundation
import GatehouseCore
import GatehouseStore

/// What the hosted pages ask of an emailed link: what it is worth, and "send a new link" (a
/// fresh link of the same kind, to the same person, through the use case that sends that kind).
struct LinkPagesService: Sendable {
    let store: any UserStore & EmailTokenStore
    let clock: any WallClock
    let verification: EmailVerificationService
    let reset: PasswordResetService
    let magicLinks: MagicLinkService

    /// What a link is worth, for the hosted pages; `nil` when there is no such link. A reset
    /// link made under an older password, or for a disabled account, counts as used.
    func linkState(token: String, purpose: EmailTokenPurpose) async throws -> (record: EmailToken, state: EmailToken.State)? {
        guard let record = try await store.emailToken(hash: StoredSecret.hash(token)), record.purpose == purpose else { return nil }
        let state = record.state(at: clock.now)
        if purpose == .passwordReset, state == .valid {
            guard let userID = record.userID, let user = try await store.user(id: userID), !user.isDisabled, record.matchesPassword(of: user)
            else { return (record, .used) }
        }
        return (record, state)
    }

    enum Outcome: Sendable, Equatable {
        case sent
        case alreadyVerified
        case rateLimited(Int)
        case invalid
    }

    /// Sends a fresh link of the same kind to the same person as `token` (expired or used).
    func resend(token: String, client: ClientInfo) async throws -> Outcome {
        guard let record = try await store.emailToken(hash: StoredSecret.hash(token)) else { return .invalid }
        do {
            switch record.purpose {
            case .verifyEmail:
                guard let userID = record.userID, let user = try await store.user(id: userID), !user.isDisabled,
                    user.normalizedEmail == record.normalizedEmail
                else { return .invalid }
                if user.emailVerified { return .alreadyVerified }
                try await verification.resend(user)
            case .passwordReset:
                try await reset.forgot(email: record.email, client: client)
            case .magicLink:
                try await magicLinks.request(email: record.email, redirectTo: record.redirectTo, client: client)
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
}
