import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// `/oauth/authorize`: whether a page must be shown (`OAuthInteraction` decides, for every
/// step), and the one-time code when none is.
extension OpenIDService {
    /// What `/oauth/authorize` does next for a checked request.
    enum Step: Sendable {
        case signIn
        case consent(OAuthClient, User)
        /// "Continue as …": a public client that cannot prove who it is (RFC 8252 §8.6).
        case confirm(OAuthClient, User)
        /// Back to the client: a code, or an error (`prompt=none`, a refusal).
        case redirect(String)
    }

    /// The next step for `request`, with the browser's sign-in (`browser`) at `moment`: a page,
    /// or a code. A browser signed in by the app's hand-over counts as signed in for that
    /// hand-over's client only.
    func next(_ request: AuthorizationRequest, browser: (User, Session)?, moment: OAuthInteraction.Moment, client caller: ClientInfo) async throws -> Step {
        guard let target = try await client(request.clientID) else { throw OAuthProtocolError.invalidRequest("Unknown client.") }
        let signedIn = browser.flatMap { $0.1.clientID == nil || $0.1.clientID == target.id ? $0 : nil }
        var covers = false
        if let (user, _) = signedIn, let consent = try await store.consent(of: user.id, to: target.id) {
            covers = Set(request.scopes).isSubset(of: Set(consent.scopes))
        }
        let need = OAuthInteraction.need(
            request, client: target, authTime: signedIn.map { $0.1.authTime ?? $0.1.createdAt }, consentCovers: covers, moment: moment, now: clock.now)
        if request.prompt.contains("none"), let error = need.promptNoneError {
            return .redirect(refusal(request, error, "The person must see a page first."))
        }
        switch need {
        case .signIn: return .signIn
        case .consent:
            guard let (user, _) = signedIn else { return .signIn }
            return .consent(target, user)
        case .confirm:
            guard let (user, _) = signedIn else { return .signIn }
            return .confirm(target, user)
        case .none:
            guard let (user, session) = signedIn else { return .signIn }
            // The person's answer on the consent page is their consent (a first-party client
            // needs none, and none is kept).
            let consented = moment == .answered && !target.firstParty ? request.scopes : nil
            return .redirect(try await issueCode(request, user: user, session: session, client: target, consented: consented, caller: caller))
        }
    }

    /// The person's answer on the consent or "Continue as …" page.
    func decide(_ request: AuthorizationRequest, allow: Bool, browser: (User, Session)?, client: ClientInfo) async throws -> Step {
        guard allow else { return .redirect(refusal(request, "access_denied", "The person declined.")) }
        return try await next(request, browser: browser, moment: .answered, client: client)
    }

    /// A one-time code for the browser's session, 60 seconds, bound to the client, its redirect
    /// URI, the PKCE challenge and the nonce. The transaction holds the browser's session (its
    /// account's row locked); the consent given with it is kept there, and one given before
    /// must still cover the scopes there.
    private func issueCode(
        _ request: AuthorizationRequest, user: User, session: Session, client: OAuthClient, consented: [String]?, caller: ClientInfo?
    ) async throws -> String {
        let code = randomToken(bytes: 32)
        try await unitOfWork.run(client: caller) { work in
            guard let (held, owner) = try await work.tx.holdSession(session.id, of: user.id), live(held, owner) else {
                throw OAuthProtocolError.invalidRequest("The sign-in ended. Please sign in again.")
            }
            if let consented {
                try await work.tx.saveConsent(OAuthConsent(userID: user.id, clientID: client.id, scopes: consented, grantedAt: work.now))
                try await work.audit(
                    .oauthConsentGranted, user: user.id, session: session.id,
                    details: ["client_id": client.id, "scope": consented.joined(separator: " ")])
            } else if !client.firstParty {
                guard let consent = try await work.tx.consent(of: user.id, to: client.id), Set(request.scopes).isSubset(of: Set(consent.scopes)) else {
                    throw OAuthProtocolError.invalidRequest("The consent to this app was withdrawn. Start again from the app.")
                }
            }
            try await work.tx.insertOAuthCode(
                OAuthCode(
                    hash: StoredSecret.hash(code), kind: .authorization, clientID: client.id, userID: user.id, sessionID: session.id,
                    redirectURI: request.redirectURI, scopes: request.scopes, nonce: request.nonce, codeChallenge: request.codeChallenge,
                    createdAt: work.now))
            try await work.audit(
                .oauthAuthorized, user: user.id, session: session.id,
                details: ["client_id": client.id, "scope": request.scopes.joined(separator: " ")])
        }
        return Self.append(to: request.redirectURI, [("code", code), ("state", request.state), ("iss", issuer)])
    }

    /// The redirect that tells the client why (RFC 6749 §4.1.2.1), with RFC 9207's `iss`.
    func refusal(_ request: AuthorizationRequest, _ error: String, _ description: String) -> String {
        Self.append(to: request.redirectURI, [("error", error), ("error_description", description), ("state", request.state), ("iss", issuer)])
    }
}
