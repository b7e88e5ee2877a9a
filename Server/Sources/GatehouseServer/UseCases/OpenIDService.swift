import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// An answer of the OAuth endpoints in RFC 6749's shape (`{"error", "error_description"}`),
/// not Gatehouse's own: relying parties' libraries read this one.
struct OAuthProtocolError: Error, Sendable, Equatable {
    var status: Int
    var error: String
    var description: String
    /// Seconds, for 429.
    var retryAfter: Int? = nil

    static func invalidRequest(_ text: String) -> Self { .init(status: 400, error: "invalid_request", description: text) }
    static func invalidGrant(_ text: String) -> Self { .init(status: 400, error: "invalid_grant", description: text) }
    static let invalidClient = Self(status: 401, error: "invalid_client", description: "The client could not be authenticated.")
    static func invalidToken(_ text: String) -> Self { .init(status: 401, error: "invalid_token", description: text) }
}

/// Gatehouse as an OpenID provider (issue 45): the browser's side (who is signed in at the
/// provider, consent, one-time codes, the app's hand-over) here, the token endpoint and the
/// resource side in `OpenIDService+Tokens.swift`. Every way into a session is an existing one:
/// a browser signs in through the password and second-factor use cases (the same checks as a
/// login) or through the app's hand-over, which carries the app's session over as it is.
struct OpenIDService: Sendable {
    typealias Stores = any UserStore & SessionStore & RefreshTokenStore & OAuthClientStore & OAuthGrantStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let tokens: OpenIDTokens
    let chains: RefreshChains
    let throttle: Throttle
    let preset: Preset
    let clock: any WallClock

    var issuer: String { tokens.issuer }

    func client(_ id: String?) async throws -> OAuthClient? {
        guard let id, !id.isEmpty, id.count <= 128 else { return nil }
        return try await store.oauthClient(id: id)
    }

    // MARK: The browser at the provider

    /// The account and session a browser's cookie stands for, while both can still sign in.
    func browser(cookie: String?) async throws -> (User, Session)? {
        guard let cookie, isBase64URLText(cookie, lengths: 43...43),
            let id = try await store.browserSession(tokenHash: StoredSecret.hash(cookie), at: clock.now),
            let (session, user) = try await store.sessionAndUser(id: id), live(session, user)
        else { return nil }
        return (user, session)
    }

    private func live(_ session: Session, _ user: User) -> Bool {
        !user.isDisabled && session.isLive(at: clock.now, settings: preset.tokens)
    }

    /// A cookie for a browser that just signed in (`sessionID`, opened by a sign-in use case).
    func rememberBrowser(_ sessionID: SessionID) async throws -> String {
        let cookie = randomToken(bytes: 32)
        let now = clock.now
        try await store.insertBrowserSession(
            tokenHash: StoredSecret.hash(cookie), sessionID: sessionID, at: now,
            expiresAt: now.addingTimeInterval(TimeInterval(preset.tokens.refreshTokenTTLSeconds)))
        return cookie
    }

    /// What `/oauth/authorize` does next for a checked request.
    enum Step: Sendable {
        case signIn
        case consent(OAuthClient)
        /// Back to the client: a code, or an error (`prompt=none`).
        case redirect(String)
    }

    func next(_ request: AuthorizationRequest, browser: (User, Session)?, client: ClientInfo) async throws -> Step {
        guard let target = try await self.client(request.clientID) else { throw OAuthProtocolError.invalidRequest("Unknown client.") }
        guard let (user, session) = browser, !request.prompt.contains("login") else {
            if request.prompt.contains("none") { return .redirect(refusal(request, "login_required", "The person is not signed in.")) }
            return .signIn
        }
        let consent = try await store.consent(of: user.id, to: target.id)
        let covered = consent.map { Set(request.scopes).isSubset(of: Set($0.scopes)) } ?? false
        if !target.firstParty, !covered || request.prompt.contains("consent") {
            if request.prompt.contains("none") { return .redirect(refusal(request, "consent_required", "The person has not consented.")) }
            return .consent(target)
        }
        return .redirect(try await issueCode(request, user: user, session: session, client: target, consented: nil, caller: client))
    }

    /// The person's answer on the consent page.
    func decide(_ request: AuthorizationRequest, allow: Bool, browser: (User, Session), client: ClientInfo) async throws -> String {
        guard allow else { return refusal(request, "access_denied", "The person declined.") }
        guard let found = try await self.client(request.clientID) else { throw OAuthProtocolError.invalidRequest("Unknown client.") }
        return try await issueCode(request, user: browser.0, session: browser.1, client: found, consented: request.scopes, caller: client)
    }

    /// A one-time code for the browser's session, 60 seconds, bound to the client, its redirect
    /// URI, the PKCE challenge and the nonce; the consent given with it is kept in the same
    /// transaction, which holds the browser's session.
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

    static func append(to uri: String, _ items: [(String, String?)]) -> String {
        guard var components = URLComponents(string: uri) else { return uri }
        let added = items.compactMap { name, value in value.map { URLQueryItem(name: name, value: $0) } }
        components.queryItems = (components.queryItems ?? []) + added
        // `+` is a space in a form-encoded query: encode it so that state values survive.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        return components.string ?? uri
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

    /// The hand-over URL opened in a browser: the code is used once, the app's session must
    /// still be live, and the browser gets a session of its own that carries the app's sign-in
    /// as it is (its second factor only if the app's session has one). Answers the browser's
    /// cookie and where it goes next (the client's `initiate_login_uri`, with `iss`).
    func openHandover(code: String, client: ClientInfo) async throws -> (cookie: String, location: String)? {
        guard isBase64URLText(code, lengths: 43...43) else { return nil }
        let browserID = SessionID.random()
        let opened = try await unitOfWork.run(client: client) { work -> OAuthClient? in
            guard let used = try await work.tx.useOAuthCode(hash: StoredSecret.hash(code), kind: .handover, issuing: browserID, at: work.now),
                let target = try await work.tx.oauthClient(id: used.clientID),
                let (app, user) = try await work.tx.holdSession(used.sessionID, of: used.userID), app.clientID == nil, live(app, user)
            else { return nil }
            try await work.tx.insertSession(
                Session(
                    id: browserID, userID: user.id, provider: app.provider, createdAt: work.now,
                    expiresAt: app.expiresAt, userAgent: client.userAgent, ipAddress: client.ip, method: app.method,
                    assurance: app.assurance, secondFactor: app.secondFactor, secondFactorAt: app.secondFactorAt,
                    authTime: app.authTime ?? app.createdAt))
            try await work.audit(.oauthHandover, user: user.id, session: browserID, details: ["client_id": target.id, "step": "used"])
            return target
        }
        guard let target = opened, let start = target.initiateLoginURI else { return nil }
        let cookie = try await rememberBrowser(browserID)
        return (cookie, Self.append(to: start, [("iss", issuer)]))
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

    /// `DELETE /v1/me/connections/{client}`: the consent goes and the client's sessions end.
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
