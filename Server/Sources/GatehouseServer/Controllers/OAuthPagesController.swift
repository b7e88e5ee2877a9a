import Crypto
import Foundation
import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird
import NIOCore

/// The OpenID provider's pages (issue 45): `/oauth/authorize` (sign-in, second factor and
/// consent, in the preset's colours and copy), the app's hand-over and RP-initiated logout.
///
/// Like the mail pages they load nothing from elsewhere and run no script (a strict CSP, no
/// framing), and every form is a POST carrying a CSRF token equal to its `SameSite=Strict`
/// cookie, from this origin. The pages send `Referrer-Policy: same-origin`, so the browser names
/// their origin on their own posts and a post naming another origin, or none (`null`), is refused.
/// A browser signed in at the provider holds an opaque cookie (`SameSite=Lax`, so a client's
/// redirect to `/oauth/authorize` carries it) that stands for a session of the account.
struct OAuthPagesController {
    let openID: OpenIDService
    let passwords: PasswordService
    let magicLinks: MagicLinkService
    let passkeys: PasskeyService
    let mfa: MFAService
    let templates: Templates
    let resolver: ClientAddressResolver
    let preset: Preset
    let secureCookies: Bool
    let bodyLimit: Int

    var browserCookie: String { secureCookies ? "__Host-gatehouse_op" : "gatehouse_op" }
    var csrfCookie: String { secureCookies ? "__Host-gatehouse_oauth_csrf" : "gatehouse_oauth_csrf" }

    func register(on router: Router<GatehouseRequestContext>) {
        router.on(OAuthRoutes.authorize, use: authorize)
        router.on(OAuthRoutes.authorizeForm, use: authorizeForm)
        router.on(OAuthRoutes.handover, use: handover)
        router.on(OAuthRoutes.handoverForm, use: handoverForm)
        router.on(OAuthRoutes.logout, use: logout)
        router.on(OAuthRoutes.logoutForm, use: logoutForm)
        router.on(OAuthRoutes.magicLink, use: magicLink)
    }

    // MARK: Routes

    @Sendable func authorize(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await showingRefusals { try await authorizePage(request, context: context) }
    }

    @Sendable func authorizeForm(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await showingRefusals { try await authorizePost(request, context: context) }
    }

    /// A refusal the provider's use case names (a client deleted, a sign-in ended mid-way)
    /// is a page, not an internal error.
    private func showingRefusals(_ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch let error as OAuthProtocolError {
            return render(
                page("error", text("page.oauth.error.title", "Something is not right"), [error.description], status: "warning"),
                csrf: randomToken(bytes: 32), formTarget: nil, status: .badRequest)
        }
    }

    private func authorizePage(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        // Form-encoded (`+` is a space), as relying parties' libraries write it.
        let (query, repeated) = PagesController.parseFormNamingRepeats(request.uri.query ?? "")
        let csrf = pageCSRF(request)
        let client = resolver.client(request, context.peerAddress)
        return try await proceed(
            query, repeated: repeated, csrf: csrf, browser: try await openID.browser(cookie: request.cookies[browserCookie]?.value), moment: .arrived,
            client: client)
    }

    /// A post of one of the pages' forms: its CSRF token checked, then the step it names (the
    /// sign-in's in `+SignIn.swift`, the consent's and "Continue as …"'s here).
    private func authorizePost(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let (fields, repeated) = PagesController.parseFormNamingRepeats(String(buffer: try await request.collectBody(limit: bodyLimit)))
        guard let cookie = checkedCSRF(request, fields) else { return forbidden(request) }
        let client = resolver.client(request, context.peerAddress)
        let browser = try await openID.browser(cookie: request.cookies[browserCookie]?.value)
        guard case .success(let authorization) = AuthorizationRequest.check(fields, repeated: repeated, client: try await openID.client(fields["client_id"]))
        else {
            return try await proceed(fields, repeated: repeated, csrf: cookie, browser: browser, moment: .arrived, client: client)
        }
        guard fields["step"] == "consent" else {
            return try await signInStep(fields, authorization, csrf: cookie, browser: browser, client: client)
        }
        let step = try await openID.decide(authorization, allow: fields["decision"] == "allow", browser: browser, client: client)
        return present(step, authorization, csrf: cookie)
    }

    /// The browser's CSRF cookie when it is well formed.
    func ownCSRF(_ request: Request) -> String? {
        request.cookies[csrfCookie].map(\.value).flatMap { PagesController.isToken($0) ? $0 : nil }
    }

    /// The CSRF token a page shows: the browser's own, or a new one.
    func pageCSRF(_ request: Request) -> String {
        ownCSRF(request) ?? randomToken(bytes: 32)
    }

    /// The form's CSRF token when it equals the browser's cookie and the post is from this
    /// origin; nil otherwise.
    func checkedCSRF(_ request: Request, _ fields: [String: String]) -> String? {
        let cookie = request.cookies[csrfCookie]?.value ?? ""
        guard Self.fromThisOrigin(request), PagesController.isToken(cookie),
            constantTimeEquals(Array(cookie.utf8), Array((fields["csrf_token"] ?? "").utf8))
        else { return nil }
        return cookie
    }

    func forbidden(_ request: Request) -> Response {
        let cookie = request.cookies[csrfCookie]?.value ?? ""
        return render(
            page("forbidden", text("page.csrf.title", "Please open the link again"), [text("page.oauth.forbidden", "This form could not be checked. Go back to the app or site and start again.")]),
            // The browser's token stays: the person's own page still posts with it.
            csrf: PagesController.isToken(cookie) ? cookie : randomToken(bytes: 32), formTarget: nil, status: .forbidden)
    }

    /// The app's hand-over link: an interstitial that names the account and the client, and
    /// signs the browser in only once the person confirms it there (R124).
    @Sendable func handover(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let code = PagesController.parseForm(request.uri.query ?? "")["code"] ?? ""
        let csrf = pageCSRF(request)
        guard let (account, target) = try await openID.handoverPreview(code: code) else { return handoverExpired() }
        // The confirmation's redirect goes to the client's `initiate_login_uri`.
        return render(
            handoverPage(code: code, account: account, client: target, csrf: csrf), csrf: csrf, formTarget: nil,
            formRedirect: target.initiateLoginURI)
    }

    /// The interstitial's "Continue": the code is used and the browser signed in, for the
    /// link's client only.
    @Sendable func handoverForm(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let fields = PagesController.parseForm(String(buffer: try await request.collectBody(limit: bodyLimit)))
        guard let csrf = checkedCSRF(request, fields) else { return forbidden(request) }
        guard fields["decision"] == "continue" else {
            let cancelled = page(
                "handover-cancelled", text("page.oauth.handover_cancelled.title", "Nothing was signed in"),
                [text("page.oauth.handover_cancelled.body", "This browser was not signed in. You can close this page.")], status: "success")
            return render(cancelled, csrf: csrf, formTarget: nil)
        }
        guard let (cookie, location) = try await openID.openHandover(code: fields["code"] ?? "", client: resolver.client(request, context.peerAddress))
        else { return handoverExpired() }
        var response = redirect(location)
        response.headers.append(HTTPField(name: .setCookie, value: browserCookieValue(cookie)))
        return response
    }

    private func handoverExpired() -> Response {
        let refused = page(
            "error", text("page.oauth.handover_used.title", "This link has expired"),
            [text("page.oauth.handover_used.body", "Links from {app} that sign you in on the web work once, for a minute. Open it again from {app}.")],
            status: "warning")
        return render(refused, csrf: randomToken(bytes: 32), formTarget: nil, status: .badRequest)
    }

    /// A magic link asked for on the sign-in page, back with its token and the pending request:
    /// the token signs the browser in (the same use case as the app's link), then the request
    /// goes on. A link past its time or used already shows a page.
    @Sendable func magicLink(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await showingRefusals {
            var query = PagesController.parseForm(request.uri.query ?? "")
            let token = query.removeValue(forKey: "token") ?? ""
            let binding = query.removeValue(forKey: "binding") ?? ""
            let client = resolver.client(request, context.peerAddress)
            let own = ownCSRF(request)
            guard let own, constantTimeEquals(Array(Self.binding(own).utf8), Array(binding.utf8)) else {
                // Another browser than the one that asked: the link is left unused for that one.
                let elsewhere = page(
                    "error", text("page.oauth.other_browser.title", "Open the link where you asked for it"),
                    [text("page.oauth.other_browser.body", "This sign-in link works in the browser where you asked for it. Open it there, or start again here.")],
                    status: "warning")
                return render(elsewhere, csrf: own ?? randomToken(bytes: 32), formTarget: nil, status: .badRequest)
            }
            let csrf = own
            guard case .success(let authorization) = AuthorizationRequest.check(query, client: try await openID.client(query["client_id"])) else {
                return try await proceed(query, csrf: csrf, browser: nil, moment: .arrived, client: client)
            }
            do {
                switch try await magicLinks.verify(token: token, email: nil, code: nil, client: client) {
                case .signedIn(let response):
                    return try await signedIn(response.session.sessionID, authorization, csrf: csrf, client: client)
                case .mfaRequired(let challenge):
                    return challengePage(challenge, authorization, csrf: csrf)
                }
            } catch let error as GatehouseError {
                return render(signInPage(authorization, csrf: csrf, email: "", errors: [error.message]), csrf: csrf, formTarget: authorization)
            }
        }
    }

    /// RP-initiated logout. The browser's sign-in ends (its cookie cleared) only when it is the
    /// account the hint names; a browser signed in as someone else is asked first.
    @Sendable func logout(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        // Form-encoded (`+` is a space), as relying parties' libraries write it.
        let query = PagesController.parseForm(request.uri.query ?? "")
        let browser = try await openID.browser(cookie: request.cookies[browserCookie]?.value)
        let outcome: OpenIDService.Logout
        do {
            outcome = try await openID.logout(query, browser: browser, caller: resolver.client(request, context.peerAddress))
        } catch let error as OAuthProtocolError {
            return render(page("error", text("page.oauth.error.title", "Something is not right"), [error.description], status: "warning"),
                csrf: randomToken(bytes: 32), formTarget: nil, status: .badRequest)
        }
        switch outcome {
        case .signedOut(let location):
            return signedOut(location)
        case .confirm(let person):
            let csrf = pageCSRF(request)
            return render(logoutConfirmPage(person, csrf: csrf), csrf: csrf, formTarget: nil)
        }
    }

    /// The logout confirmation's answer, from this browser's own page.
    @Sendable func logoutForm(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let fields = PagesController.parseForm(String(buffer: try await request.collectBody(limit: bodyLimit)))
        guard let csrf = checkedCSRF(request, fields) else { return forbidden(request) }
        guard fields["decision"] == "sign_out" else { return signedOutKept(csrf: csrf) }
        let browser = try await openID.browser(cookie: request.cookies[browserCookie]?.value)
        try await openID.endBrowser(browser, caller: resolver.client(request, context.peerAddress))
        return signedOut(nil)
    }

    private func signedOut(_ location: String?) -> Response {
        var response: Response
        if let location {
            response = redirect(location)
        } else {
            let done = page(
                "logged-out", text("page.oauth.signed_out.title", "You are signed out"),
                [text("page.oauth.signed_out.body", "You signed out of {app} on this browser.")], status: "success")
            response = render(done, csrf: randomToken(bytes: 32), formTarget: nil)
        }
        response.headers.append(HTTPField(name: .setCookie, value: browserCookieValue("", maxAge: 0)))
        return response
    }

    private func signedOutKept(csrf: String) -> Response {
        let kept = page(
            "still-signed-in", text("page.oauth.still_signed_in.title", "You are still signed in"),
            [text("page.oauth.still_signed_in.body", "You are still signed in to {app} on this browser.")], status: "success")
        return render(kept, csrf: csrf, formTarget: nil)
    }

    // MARK: Steps

    /// The next page for a request (query or form): an error page for a client or redirect URI
    /// that cannot be trusted, else what `OpenIDService.next` decides.
    func proceed(
        _ parameters: [String: String], repeated: Set<String> = [], csrf: String, browser: (User, Session)?, moment: OAuthInteraction.Moment,
        client: ClientInfo
    ) async throws -> Response {
        switch AuthorizationRequest.check(parameters, repeated: repeated, client: try await openID.client(parameters["client_id"])) {
        case .failure(.page(let reason)):
            return render(
                page("error", text("page.oauth.error.title", "Something is not right"), [reason], status: "warning"), csrf: csrf, formTarget: nil,
                status: .badRequest)
        case .failure(.redirect(let error, let description)):
            let redirectURI = parameters["redirect_uri"] ?? ""
            return redirect(
                OpenIDService.append(to: redirectURI, [("error", error), ("error_description", description), ("state", parameters["state"]), ("iss", openID.issuer)]))
        case .success(let authorization):
            return present(try await openID.next(authorization, browser: browser, moment: moment, client: client), authorization, csrf: csrf)
        }
    }

    /// The page (or redirect) for a step the use case decided.
    func present(_ step: OpenIDService.Step, _ authorization: AuthorizationRequest, csrf: String) -> Response {
        switch step {
        case .signIn:
            return render(signInPage(authorization, csrf: csrf, email: "", errors: []), csrf: csrf, formTarget: authorization)
        case .consent(let target, let user):
            return render(consentPage(authorization, client: target, user: user, csrf: csrf), csrf: csrf, formTarget: authorization)
        case .confirm(let target, let user):
            return render(continuePage(authorization, client: target, user: user, csrf: csrf), csrf: csrf, formTarget: authorization)
        case .redirect(let location):
            return redirect(location)
        }
    }

    /// A sign-in completed on the page: the browser is remembered, then the request goes on
    /// (the sign-in was this request's: `prompt=login` and `max_age` are met).
    func signedIn(_ sessionID: String, _ authorization: AuthorizationRequest, csrf: String, client: ClientInfo) async throws -> Response {
        guard let id = SessionID(sessionID) else { throw GatehouseError.internalError(nil) }
        let cookie = try await openID.rememberBrowser(id)
        let browser = try await openID.browser(cookie: cookie)
        var response = try await proceed(
            Dictionary(uniqueKeysWithValues: authorization.parameters), csrf: csrf, browser: browser, moment: .signedInHere, client: client)
        response.headers.append(HTTPField(name: .setCookie, value: browserCookieValue(cookie)))
        return response
    }

    // MARK: Plumbing

    /// The page with its CSP: no script, styles by nonce, no framing, and forms only to this
    /// origin and (for the redirect that follows a post) the client's redirect URI's origin.
    func render(
        _ page: Templates.Page, csrf: String, formTarget: AuthorizationRequest?, formRedirect: String? = nil, status: HTTPResponse.Status = .ok
    ) -> Response {
        let nonce = randomToken(bytes: 16)
        var formAction = "'self'"
        if let target = (formTarget?.redirectURI ?? formRedirect).flatMap({ URLComponents(string: $0) }), let scheme = target.scheme {
            if let host = target.host, !host.isEmpty {
                formAction += " \(scheme)://\(host)\(target.port.map { ":\($0)" } ?? "")"
            } else {
                formAction += " \(scheme):"
            }
        }
        // The passkey button's script, by nonce, and its one call to this origin; no other page runs any.
        let script = page.passkey == nil ? "" : " script-src 'nonce-\(nonce)'; connect-src 'self';"
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8",
            .contentSecurityPolicy:
                "default-src 'none';\(script) style-src 'nonce-\(nonce)'; img-src data:; form-action \(formAction); frame-ancestors 'none'; base-uri 'none'",
            .xFrameOptions: "DENY", .cacheControl: "no-store", .referrerPolicy: "same-origin",
        ]
        headers[.setCookie] = secureCookies
            ? "\(csrfCookie)=\(csrf); Path=/; Max-Age=3600; HttpOnly; SameSite=Strict; Secure"
            : "\(csrfCookie)=\(csrf); Path=/oauth; Max-Age=3600; HttpOnly; SameSite=Strict"
        let html = templates.render(page, nonce: nonce, referrer: "same-origin")
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store", .referrerPolicy: "no-referrer"])
    }

    func browserCookieValue(_ value: String, maxAge: Int? = nil) -> String {
        let age = maxAge ?? preset.tokens.refreshTokenTTLSeconds
        return secureCookies
            ? "\(browserCookie)=\(value); Path=/; Max-Age=\(age); HttpOnly; SameSite=Lax; Secure"
            : "\(browserCookie)=\(value); Path=/oauth; Max-Age=\(age); HttpOnly; SameSite=Lax"
    }

    /// A form post from this origin: the browser names it in `Origin` (the pages' referrer
    /// policy is `same-origin`); a post from another origin, or an opaque one (`null`), is
    /// refused. Browsers that send no `Origin` are left to the CSRF cookie.
    /// What a magic link asked for on the page carries of the browser's CSRF cookie: its SHA-256,
    /// so the link (in a mail, a log) never reveals the cookie.
    static func binding(_ cookie: String) -> String {
        Data(SHA256.hash(data: Data(cookie.utf8))).base64URLEncoded
    }

    static func fromThisOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers[.origin] else { return true }
        guard origin != "null", let host = request.head.authority, let url = URL(string: origin), let originHost = url.host else { return false }
        let authority = url.port.map { "\(originHost):\($0)" } ?? originHost
        return authority.lowercased() == host.lowercased()
    }
}
