import Foundation
import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird
import NIOCore

/// The hosted pages that email links open: verify an address, choose a new password, and the
/// bridge from a magic link to the app.
///
/// Opening a link (GET) never uses it up: mail scanners fetch links, and a verification done
/// by a scanner would let someone who signed up with another person's address claim it. Each
/// action is a form POST carrying a CSRF token that must equal the page's `SameSite=Strict`
/// cookie. Pages load nothing from elsewhere and run no script, under a CSP that says so.
struct PagesController {
    let verification: EmailVerificationService
    let reset: PasswordResetService
    let magicLinks: MagicLinkService
    let links: EmailLinkStates
    let templates: Templates
    let resolver: ClientAddressResolver
    let preset: Preset
    let secureCookies: Bool
    let bodyLimit: Int

    static let csrfCookie = "gatehouse_csrf"
    /// Over HTTPS the cookie takes the `__Host-` prefix: browsers then insist on `Secure`,
    /// `Path=/` and no `Domain`, so no sibling host or plain-HTTP page can set or overwrite it.
    static let secureCSRFCookie = "__Host-gatehouse_csrf"

    private var csrfCookieName: String { secureCookies ? Self.secureCSRFCookie : Self.csrfCookie }

    var policy: PasswordPolicySettings { preset.passwordPolicy }

    func register(on router: Router<GatehouseRequestContext>) {
        router.on(Endpoints.verifyEmailPage, use: verifyEmailPage)
        router.on(Endpoints.verifyEmailForm, use: verifyEmailForm)
        router.on(Endpoints.resetPasswordPage, use: resetPasswordPage)
        router.on(Endpoints.resetPasswordForm, use: resetPasswordForm)
        router.on(Endpoints.magicLinkPage, use: magicLinkPage)
        router.on(Endpoints.resendLinkForm, use: resendLinkForm)
    }

    @Sendable func verifyEmailPage(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await page(request) { token, csrf in try await verifyPage(token: token, csrf: csrf) }
    }

    @Sendable func verifyEmailForm(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await submit(request, context) { form, csrf in
            try await usingLink(form, csrf: csrf, copy: "page.verify", expired: .tokenExpired) {
                _ = try await verification.verify(token: form.token)
                return verifiedPage()
            }
        }
    }

    @Sendable func resetPasswordPage(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await page(request) { token, csrf in try await resetPage(token: token, csrf: csrf) }
    }

    @Sendable func resetPasswordForm(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await submit(request, context) { form, csrf in
            let password = form.fields["password"] ?? ""
            guard password == form.fields["password_confirm"] else {
                return resetForm(token: form.token, csrf: csrf, errors: [text("page.reset.mismatch", "The two passwords do not match.")])
            }
            return try await usingLink(form, csrf: csrf, copy: "page.reset", expired: .resetTokenExpired) {
                do {
                    try await reset.reset(token: form.token, password: password, client: resolver.client(request, context.peerAddress))
                    return resetDonePage()
                } catch let error as GatehouseError where error.code == .weakPassword {
                    return resetForm(token: form.token, csrf: csrf, errors: [error.message])
                }
            }
        }
    }

    @Sendable func magicLinkPage(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await page(request) { token, csrf in try await magicPage(token: token, csrf: csrf) }
    }

    @Sendable func resendLinkForm(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await submit(request, context) { form, _ in
            switch try await resendLink(following: form.token, client: resolver.client(request, context.peerAddress)) {
            case .sent:
                return Templates.Page(
                    state: "sent", title: text("page.sent.title", "Check your email"), heading: text("page.sent.title", "Check your email"),
                    paragraphs: [text("page.sent.body", "We sent a new link. It may take a minute to arrive; check your spam folder too.")])
            case .alreadyVerified:
                return verifiedPage()
            case .rateLimited(let seconds):
                return Templates.Page(
                    state: "rate_limited", title: text("page.wait.title", "Please wait"), heading: text("page.wait.title", "Please wait"),
                    paragraphs: [text("page.wait.body", "A link was sent very recently. You can ask for another in {seconds} seconds.", ["seconds": String(seconds)])],
                    icon: "warning")
            case .invalid:
                return invalidPage()
            }
        }
    }

    enum ResendOutcome: Sendable, Equatable {
        case sent
        case alreadyVerified
        case rateLimited(Int)
        case invalid
    }

    /// "Send a new link": a fresh link of the same kind as `token`'s (expired or used), to the
    /// same person, through the use case that sends that kind.
    private func resendLink(following token: String, client: ClientInfo) async throws -> ResendOutcome {
        do {
            switch try await links.resend(following: token) {
            case .verification(let user):
                if user.emailVerified { return .alreadyVerified }
                try await verification.resend(user)
            case .passwordReset(let email):
                try await reset.forgot(email: email, client: client)
            case .magicLink(let email, let redirectTo):
                try await magicLinks.request(email: email, redirectTo: redirectTo, client: client)
            case .invalid:
                return .invalid
            }
        } catch let error as GatehouseError where error.code == .rateLimited {
            return .rateLimited(error.retryAfter ?? 60)
        } catch let error as GatehouseError where error.code == .emailNotFound || error.code == .methodDisabled {
            return .invalid
        }
        return .sent
    }

    // MARK: Pages

    private func verifyPage(token: String, csrf: String) async throws -> Templates.Page {
        guard let (_, state) = try await links.linkState(token: token, purpose: .verifyEmail) else { return invalidPage() }
        switch state {
        case .valid:
            return Templates.Page(
                state: "confirm", title: text("page.verify.title", "Verify your email"), heading: text("page.verify.title", "Verify your email"),
                paragraphs: [text("page.verify.body", "Confirm that this address belongs to your {app} account.")],
                form: .init(action: EmailLinks.verifyPath, token: token, csrf: csrf, submit: text("page.verify.button", "Verify my email")))
        case .expired:
            return expiredPage(token: token, csrf: csrf, copy: "page.verify")
        case .used:
            return usedPage(token: token, csrf: csrf)
        }
    }

    private func verifiedPage() -> Templates.Page {
        Templates.Page(
            state: "success", title: text("page.verified.title", "Your email is verified"),
            heading: text("page.verified.title", "Your email is verified"),
            paragraphs: [text("page.verified.body", "Thank you. Go back to {app} and tap \u{201C}I've verified\u{201D} if it still asks.")],
            icon: "success", link: openApp())
    }

    private func resetPage(token: String, csrf: String) async throws -> Templates.Page {
        guard let (_, state) = try await links.linkState(token: token, purpose: .passwordReset) else { return invalidPage() }
        switch state {
        case .valid: return resetForm(token: token, csrf: csrf, errors: [])
        case .expired: return expiredPage(token: token, csrf: csrf, copy: "page.reset")
        case .used: return usedPage(token: token, csrf: csrf)
        }
    }

    private func resetForm(token: String, csrf: String, errors: [String]) -> Templates.Page {
        Templates.Page(
            state: "form", title: text("page.reset.title", "Choose a new password"), heading: text("page.reset.title", "Choose a new password"),
            errors: errors,
            form: .init(
                action: EmailLinks.resetPath, token: token, csrf: csrf, submit: text("page.reset.button", "Set new password"),
                password: (rules: passwordRules(), minLength: policy.minLength, maxLength: policy.maxLength)))
    }

    private func resetDonePage() -> Templates.Page {
        Templates.Page(
            state: "success", title: text("page.reset_done.title", "Your password has been changed"),
            heading: text("page.reset_done.title", "Your password has been changed"),
            paragraphs: [text("page.reset_done.body", "Sign in to {app} with your new password. For your safety, every device was signed out.")],
            icon: "success", link: openApp())
    }

    private func magicPage(token: String, csrf: String) async throws -> Templates.Page {
        guard let (record, state) = try await links.linkState(token: token, purpose: .magicLink) else { return invalidPage() }
        switch state {
        case .valid:
            var link: (url: String, label: String)?
            if let target = record.redirectTo ?? preset.app.openAppURL, var components = URLComponents(string: target) {
                components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "token", value: token)]
                if let url = components.string { link = (url, text("page.magic.button", "Open {app}")) }
            }
            return Templates.Page(
                state: "ready", title: text("page.magic.title", "Sign in to {app}"), heading: text("page.magic.title", "Sign in to {app}"),
                paragraphs: [text("page.magic.body", "Open {app} on this phone to finish signing in.")], link: link,
                hint: text("page.magic.hint", "On another device? Enter the 6-digit code from the email in {app} instead."))
        case .expired:
            return expiredPage(token: token, csrf: csrf, copy: "page.magic")
        case .used:
            return usedPage(token: token, csrf: csrf)
        }
    }

    /// Runs what a link's form does; a link past its time (`expired`) or used already answers
    /// its page instead, with the button that sends a new one.
    private func usingLink(
        _ form: Form, csrf: String, copy: String, expired: ErrorCode, _ use: () async throws -> Templates.Page
    ) async throws -> Templates.Page {
        do {
            return try await use()
        } catch let error as GatehouseError where error.code == expired {
            return expiredPage(token: form.token, csrf: csrf, copy: copy)
        } catch let error as GatehouseError where error.code == .tokenInvalid {
            return usedPage(token: form.token, csrf: csrf)
        }
    }

    /// "This link has expired" with a "send a new link" button. The reset page's heading is
    /// SyncWell's message.
    private func expiredPage(token: String, csrf: String, copy: String) -> Templates.Page {
        let heading = copy == "page.reset"
            ? preset.text("error.reset_token_expired", "This password reset link has expired. Please request a new one.")
            : text("\(copy).expired", "This link has expired. Please request a new one.")
        return Templates.Page(
            state: "expired", title: text("page.expired.title", "Link expired"), heading: heading,
            paragraphs: [text("page.expired.body", "Links in our emails work for a limited time, for your safety.")], icon: "warning",
            form: .init(action: EmailLinks.resendPath, token: token, csrf: csrf, submit: text("page.resend.button", "Send a new link")))
    }

    private func usedPage(token: String, csrf: String) -> Templates.Page {
        Templates.Page(
            state: "used", title: text("page.used.title", "Link already used"), heading: text("page.used.title", "This link was already used"),
            paragraphs: [text("page.used.body", "Each link works once. If you still need to, ask for a new one.")], icon: "warning",
            form: .init(action: EmailLinks.resendPath, token: token, csrf: csrf, submit: text("page.resend.button", "Send a new link")))
    }

    private func invalidPage() -> Templates.Page {
        Templates.Page(
            state: "invalid", title: text("page.invalid.title", "Link not valid"), heading: text("page.invalid.title", "This link is not valid"),
            paragraphs: [text("page.invalid.body", "Check that you opened the whole link from the email, or ask {app} for a new one.")],
            icon: "warning")
    }

    private func openApp() -> (url: String, label: String)? {
        preset.app.openAppURL.map { ($0, text("page.open_app", "Open {app}")) }
    }

    private func passwordRules() -> [String] {
        var rules = [text("page.reset.rule_length", "At least {n} characters.", ["n": String(policy.minLength)])]
        if policy.minCharacterClasses > 0 {
            rules.append(
                text(
                    "page.reset.rule_classes", "At least {n} of: uppercase, lowercase, digits, symbols.",
                    ["n": String(policy.minCharacterClasses)]))
        }
        if policy.blocklist || policy.breachedCheck {
            rules.append(text("page.reset.rule_common", "Not a common or previously leaked password."))
        }
        return rules
    }

    private func text(_ key: String, _ fallback: String, _ values: [String: String] = [:]) -> String {
        templates.text(key, fallback, values)
    }

    // MARK: Plumbing

    /// A GET page: the token from the query, a CSRF cookie (kept if the browser has one).
    private func page(_ request: Request, _ build: (String, String) async throws -> Templates.Page) async throws -> Response {
        let csrf = request.cookies[csrfCookieName].map(\.value).flatMap { Self.isToken($0) ? $0 : nil } ?? randomToken(bytes: 32)
        let token = request.uri.queryParameters["token"].map(String.init) ?? ""
        let page = Self.isToken(token) ? try await build(token, csrf) : invalidPage()
        return render(page, csrf: csrf)
    }

    struct Form {
        var token: String
        var fields: [String: String]
    }

    /// A form POST: checked for its origin and CSRF token before `handle` runs.
    private func submit(
        _ request: Request, _ context: GatehouseRequestContext, _ handle: (Form, String) async throws -> Templates.Page
    ) async throws -> Response {
        let buffer = try await request.collectBody(limit: bodyLimit)
        let fields = Self.parseForm(String(buffer: buffer))
        let cookie = request.cookies[csrfCookieName]?.value ?? ""
        let submitted = fields["csrf_token"] ?? ""
        guard Self.sameOrigin(request), Self.isToken(cookie),
            constantTimeEquals(Array(cookie.utf8), Array(submitted.utf8))
        else {
            let page = Templates.Page(
                state: "forbidden", title: text("page.csrf.title", "Please open the link again"),
                heading: text("page.csrf.title", "Please open the link again"),
                paragraphs: [text("page.csrf.body", "This form could not be checked. Open the link from your email again and retry.")],
                icon: "warning")
            return render(page, csrf: randomToken(bytes: 32), status: .forbidden)
        }
        let token = fields["token"] ?? ""
        guard Self.isToken(token) else { return render(invalidPage(), csrf: cookie) }
        return render(try await handle(Form(token: token, fields: fields), cookie), csrf: cookie)
    }

    private func render(_ page: Templates.Page, csrf: String, status: HTTPResponse.Status = .ok) -> Response {
        let nonce = randomToken(bytes: 16)
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8",
            .contentSecurityPolicy:
                "default-src 'none'; style-src 'nonce-\(nonce)'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            .xFrameOptions: "DENY",
            .cacheControl: "no-store",
        ]
        headers[.setCookie] = secureCookies
            ? "\(Self.secureCSRFCookie)=\(csrf); Path=/; Max-Age=3600; HttpOnly; SameSite=Strict; Secure"
            : "\(Self.csrfCookie)=\(csrf); Path=/auth; Max-Age=3600; HttpOnly; SameSite=Strict"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: templates.render(page, nonce: nonce))))
    }

    /// base64url of random bytes, the only shape tokens and CSRF values take.
    static func isToken(_ text: String) -> Bool {
        isBase64URLText(text, lengths: 16...128)
    }

    /// A POST that names another site as its origin is refused (the cookie's SameSite would
    /// already keep it out; this is the second lock).
    static func sameOrigin(_ request: Request) -> Bool {
        // Under `Referrer-Policy: no-referrer` browsers send `Origin: null` with the page's own
        // POSTs; the SameSite=Strict cookie is what keeps other sites out then.
        guard let origin = request.headers[.origin], origin != "null" else { return true }
        guard let host = request.head.authority, let url = URL(string: origin), let originHost = url.host
        else { return false }
        let authority = url.port.map { "\(originHost):\($0)" } ?? originHost
        return authority.lowercased() == host.lowercased()
    }

    /// `application/x-www-form-urlencoded`.
    static func parseForm(_ body: String) -> [String: String] {
        parseFormNamingRepeats(body).fields
    }

    /// The form's fields (the first of each name) and the names sent more than once, which
    /// OAuth's endpoints refuse (RFC 6749 §3.1, §3.2).
    static func parseFormNamingRepeats(_ body: String) -> (fields: [String: String], repeated: Set<String>) {
        var fields: [String: String] = [:]
        var repeated: Set<String> = []
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            let name = decode(parts[0])
            if fields[name] == nil { fields[name] = parts.count > 1 ? decode(parts[1]) : "" } else { repeated.insert(name) }
        }
        return (fields, repeated)
    }
}

extension HTTPField.Name {
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
}
