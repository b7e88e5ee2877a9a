import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The provider's own sessions: a browser's sign-in (its cookie), the app's hand-over into it,
/// RP-initiated logout, and the person's connected clients.
extension OpenIDService {
    // MARK: The browser at the provider

    /// The account and session a browser's cookie stands for, while both can still sign in.
    func browser(cookie: String?) async throws -> (User, Session)? {
        guard let cookie, isBase64URLText(cookie, lengths: 43...43),
            let id = try await store.browserSession(tokenHash: StoredSecret.hash(cookie), at: clock.now),
            let (session, user) = try await store.sessionAndUser(id: id), live(session, user)
        else { return nil }
        return (user, session)
    }

    /// A cookie for a browser that just signed in (`sessionID`, opened by the issuer).
    func rememberBrowser(_ sessionID: SessionID) async throws -> String {
        let cookie = randomToken(bytes: 32)
        let now = clock.now
        try await store.insertBrowserSession(
            tokenHash: StoredSecret.hash(cookie), sessionID: sessionID, at: now,
            expiresAt: now.addingTimeInterval(TimeInterval(preset.tokens.refreshTokenTTLSeconds)))
        return cookie
    }

    // MARK: The app's hand-over

    /// `POST /v1/oauth/handover`: a code bound to the caller's session, for a client that can
    /// start a sign-in (`initiate_login_uri`). The unit of work holds the caller's session.
    func handover(_ signedIn: SignedIn, request: HandoverRequest, client: ClientInfo) async throws -> HandoverResponse {
        guard let target = try await self.client(request.clientID) else { throw GatehouseError.notFound("No such client.") }
        guard target.initiateLoginURI != nil else {
            throw GatehouseError.invalidRequest("This client has no initiate_login_uri: the web surface cannot be opened signed in.")
        }
        guard !signedIn.user.isAnonymous else {
            throw GatehouseError.invalidRequest("An anonymous account cannot be handed over: sign up first.")
        }
        let code = randomToken(bytes: 32)
        let expires = try await unitOfWork.run(client: client) { work -> Date in
            let record = OAuthCode(
                hash: StoredSecret.hash(code), kind: .handover, clientID: target.id, userID: signedIn.user.id, sessionID: signedIn.session.id,
                redirectURI: nil, scopes: [], nonce: nil, codeChallenge: nil, createdAt: work.now)
            try await work.tx.insertOAuthCode(record)
            try await work.audit(.oauthHandover, user: signedIn.user.id, session: signedIn.session.id, details: ["client_id": target.id, "step": "issued"])
            return record.expiresAt
        }
        return HandoverResponse(url: Self.append(to: issuer + OAuthRoutes.handover.path, [("code", code)]), expiresAt: expires.rfc3339)
    }

    /// Who a hand-over link would sign the browser in as, and where, while it can still be used:
    /// the interstitial names both, and nothing happens until the person confirms it in that
    /// browser (a link someone else minted cannot sign this browser in silently: R124).
    func handoverPreview(code: String) async throws -> (account: User, client: OAuthClient)? {
        guard isBase64URLText(code, lengths: 43...43), let found = try await store.oauthCode(hash: StoredSecret.hash(code)),
            found.kind == .handover, found.usedAt == nil, found.expiresAt > clock.now,
            let target = try await client(found.clientID), let (app, user) = try await store.sessionAndUser(id: found.sessionID),
            app.userID == found.userID, live(app, user)
        else { return nil }
        return (user, target)
    }

    /// The confirmed hand-over: the code is used once, and the issuer carries the app's session
    /// over to a web session for the link's client only (its second factor only if the app's
    /// session has one). Answers the browser's cookie and where it goes next (the client's
    /// `initiate_login_uri`, with `iss`).
    func openHandover(code: String, client: ClientInfo) async throws -> (cookie: String, location: String)? {
        guard isBase64URLText(code, lengths: 43...43) else { return nil }
        let browserID = SessionID.timeOrdered(at: clock.now)
        let opened = try await sessions.signingIn(client: client) { admitted in
            try await unitOfWork.run(client: client) { work -> OAuthClient? in
                guard let used = try await work.tx.useOAuthCode(hash: StoredSecret.hash(code), kind: .handover, issuing: browserID, at: work.now),
                    let target = try await work.tx.oauthClient(id: used.clientID),
                    case .opened = try await sessions.carry(
                        work.narrowed { $0 }, from: used.sessionID, of: used.userID, id: browserID, door: .handover, client: nil, scopes: [],
                        webClient: target.id, refreshable: false, admitted: admitted)
                else { return nil }
                try await work.audit(.oauthHandover, user: used.userID, session: browserID, details: ["client_id": target.id, "step": "used"])
                return target
            }
        }
        guard let target = opened, let start = target.initiateLoginURI else { return nil }
        let cookie = try await rememberBrowser(browserID)
        return (cookie, Self.append(to: start, [("iss", issuer)]))
    }

    // MARK: RP-initiated logout

    /// What `/oauth/logout` comes to.
    enum Logout: Sendable {
        /// Signed out (the browser's sign-in too, if it had one): `location` is the client's
        /// `post_logout_redirect_uri` (nil: the "signed out" page).
        case signedOut(location: String?)
        /// The browser is signed in as someone other than the hint names: only a confirmation
        /// on the page, by this browser's person, ends that sign-in (the client's session of
        /// the hint has ended; the page does not go back to the client).
        case confirm(User)
    }

    /// `GET /oauth/logout`: with an ID token this provider issued (`id_token_hint`, expired or
    /// not), the client's session of that ID token ends, and the browser's sign-in at the
    /// provider too when it is the hint's account. The browser goes to a registered
    /// `post_logout_redirect_uri` (exact), with `state`.
    func logout(_ query: [String: String], browser: (User, Session)?, caller: ClientInfo) async throws -> Logout {
        guard let hint = query["id_token_hint"], let claims = await tokens.verifyIDTokenHint(hint),
            let client = try await client(claims.aud), query["client_id"].map({ $0 == client.id }) ?? true
        else { throw OAuthProtocolError.invalidRequest("A valid id_token_hint is required to sign out.") }
        var location: String?
        if let target = query["post_logout_redirect_uri"] {
            guard client.postLogoutRedirectURIs.contains(target) else {
                throw OAuthProtocolError.invalidRequest("post_logout_redirect_uri is not one this client registered.")
            }
            location = Self.append(to: target, [("state", query["state"])])
        }
        let user = UserID(claims.sub)
        let sameAccount = browser.map { $0.0.id == user } ?? false
        try await unitOfWork.run(client: caller) { work in
            var ended: [SessionID] = []
            if let sid = SessionID(claims.sid), let session = try await work.tx.session(id: sid), session.userID == user,
                try await work.tx.revokeSession(sid, reason: .oauthLogout, at: work.now)
            {
                ended.append(sid)
            }
            if let (_, session) = browser, sameAccount, try await work.tx.revokeSession(session.id, reason: .oauthLogout, at: work.now) {
                ended.append(session.id)
            }
            if !ended.isEmpty {
                try await work.audit(.oauthLogout, user: user, details: ["client_id": client.id, "sessions": String(ended.count)])
            }
        }
        if let (person, _) = browser, !sameAccount { return .confirm(person) }
        return .signedOut(location: location)
    }

    /// The confirmation page's answer: the browser's own sign-in ends.
    func endBrowser(_ browser: (User, Session)?, caller: ClientInfo) async throws {
        guard let (user, session) = browser else { return }
        try await unitOfWork.run(client: caller) { work in
            if try await work.tx.revokeSession(session.id, reason: .oauthLogout, at: work.now) {
                try await work.audit(.oauthLogout, user: user.id, details: ["sessions": "1", "step": "confirmed"])
            }
        }
    }

    // MARK: The person's connected clients

    /// `GET /v1/me/connections`: each client with a consent or a live session.
    func connections(_ signedIn: SignedIn) async throws -> ConnectedClientList {
        let now = clock.now
        let consents = try await store.consents(of: signedIn.user.id)
        let sessions = try await store.sessions(of: signedIn.user.id).filter { $0.clientID != nil && $0.isLive(at: now, settings: preset.tokens) }
        var ids = consents.map(\.clientID)
        for id in sessions.compactMap(\.clientID) where !ids.contains(id) { ids.append(id) }
        var list: [ConnectedClient] = []
        for id in ids {
            guard let client = try await store.oauthClient(id: id) else { continue }
            let consent = consents.first { $0.clientID == id }
            let live = sessions.filter { $0.clientID == id }
            list.append(
                ConnectedClient(
                    clientID: id, name: client.name, scopes: consent?.scopes ?? OAuthScope.words(live.first?.scope),
                    grantedAt: consent?.grantedAt.rfc3339, sessions: live.count))
        }
        return ConnectedClientList(connections: list)
    }

    /// `DELETE /v1/me/connections/{client}`: the consent goes and the client's sessions end
    /// (the web session of a hand-over to it too).
    func revokeConnection(_ signedIn: SignedIn, clientID: String, client: ClientInfo) async throws {
        try await unitOfWork.run(client: client) { work in
            let withdrawn = try await work.tx.deleteConsent(of: signedIn.user.id, to: clientID)
            let ended = try await work.tx.revokeClientSessions(clientID: clientID, of: signedIn.user.id, reason: .oauthConsentRevoked, at: work.now)
            guard withdrawn || !ended.isEmpty else { throw GatehouseError.notFound("No such connection.") }
            try await work.audit(
                .oauthConsentRevoked, user: signedIn.user.id, session: signedIn.session.id,
                details: ["client_id": clientID, "sessions": String(ended.count)])
        }
    }
}
