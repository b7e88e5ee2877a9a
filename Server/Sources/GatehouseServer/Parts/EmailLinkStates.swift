import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// What an emailed link is worth, for the hosted pages, and who a "send a new link" request
/// following one is for. The new link itself is sent by the use case that sends its kind
/// (`PagesController` asks each).
struct EmailLinkStates: Sendable {
    let store: any UserStore & EmailTokenStore
    let clock: any WallClock

    /// What a link is worth; `nil` when there is no such link. A reset link made under an older
    /// password, or for a disabled account, counts as used.
    func linkState(token: String, purpose: EmailTokenPurpose) async throws -> (record: EmailToken, state: EmailToken.State)? {
        guard let record = try await store.emailToken(hash: StoredSecret.hash(token)), record.purpose == purpose else { return nil }
        let state = record.state(at: clock.now)
        if purpose == .passwordReset, state == .valid {
            guard let userID = record.userID, let user = try await store.user(id: userID), !user.isDisabled, record.matchesPassword(of: user)
            else { return (record, .used) }
        }
        return (record, state)
    }

    /// Who a fresh link following `token` (expired or used) goes to.
    enum Resend: Sendable {
        /// A verification link for this account, which still has the address the link was for.
        case verification(User)
        case passwordReset(email: String)
        case magicLink(email: String, redirectTo: String?)
        /// No such link, or its account is disabled or changed address.
        case invalid
    }

    func resend(following token: String) async throws -> Resend {
        guard let record = try await store.emailToken(hash: StoredSecret.hash(token)) else { return .invalid }
        switch record.purpose {
        case .verifyEmail:
            guard let userID = record.userID, let user = try await store.user(id: userID), !user.isDisabled,
                user.normalizedEmail == record.normalizedEmail
            else { return .invalid }
            return .verification(user)
        case .passwordReset:
            return .passwordReset(email: record.email)
        case .magicLink:
            return .magicLink(email: record.email, redirectTo: record.redirectTo)
        default:
            return .invalid
        }
    }
}
