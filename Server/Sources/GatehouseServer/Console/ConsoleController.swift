import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import HTTPTypes
import Hummingbird
import NIOCore

/// The admin console at `/admin`: server-rendered pages for the operator, signed in with the
/// admin key. Every form is a POST with the session's CSRF token and answers with a redirect
/// (post/redirect/get), so a reload never repeats an action. Pages run no script and load
/// nothing from elsewhere.
struct ConsoleController {
    let console: ConsoleService
    let adminKey: AdminKey
    let cookies: ConsoleCookies
    let views: ConsoleViews
    let resolver: ClientAddressResolver
    let throttle: Throttle
    let clock: any WallClock
    let bodyLimit: Int

    /// The console's routes: pages for a browser, not the JSON API (so not in the OpenAPI
    /// document; `OpenAPITests` holds the router to this list).
    static let operations = [
        "GET /admin", "POST /admin/sign-in", "POST /admin/sign-out", "GET /admin/users", "GET /admin/users/{id}",
        "POST /admin/users/{id}/sessions/{session}/revoke", "POST /admin/users/{id}/sessions/revoke-all",
        "POST /admin/users/{id}/plan", "POST /admin/users/{id}/credits", "POST /admin/users/{id}/disable",
        "POST /admin/users/{id}/enable", "POST /admin/users/{id}/mail", "POST /admin/users/{id}/delete", "GET /admin/audit",
        "GET /admin/events", "GET /admin/keys", "POST /admin/keys/rotate", "GET /admin/mail", "POST /admin/mail/test",
        "GET /admin/preset",
    ]

    /// Sign-in attempts per address per five minutes.
    static let signInsPerWindow = 10

    func register(on router: Router<GatehouseRequestContext>) {
        router.get("/admin") { request, context in
            try await page(request, context) { views.overview(try await console.overview()) }
        }
        router.post("/admin/sign-in") { request, context in try await signIn(request, context) }
        router.post("/admin/sign-out") { request, context in
            try await action(request, context) { session, _, _ in
                // Ended on the server: a copy of the cookie is refused from now on, on every node.
                try await console.endSession(session)
                var response = redirect("/admin")
                response.headers[.setCookie] = cookies.clearSession
                return response
            }
        }
        router.get("/admin/users") { request, context in
            try await page(request, context) {
                let query = ConsoleViews.UsersQuery(request.uri.queryParameters)
                return views.users(try await console.users(query.filter, planState: query.plan, cursor: query.cursor), query: query)
            }
        }
        router.get("/admin/users/{id}") { request, context in
            try await page(request, context) { try await userPage(try context.parameters.require("id")) }
        }
        userAction(router, "sessions/{session}/revoke", notice: "session_revoked") { id, _, context, client in
            try await console.revokeSession(id, session: try context.parameters.require("session"), client: client)
        }
        userAction(router, "sessions/revoke-all", notice: "sessions_revoked") { id, _, _, client in
            _ = try await console.revokeAllSessions(id, client: client)
        }
        userAction(router, "plan", notice: "plan_set") { id, form, _, client in
            let plan = form["plan"].flatMap { $0.isEmpty ? nil : $0 }
            try await console.setPlan(id, plan: plan, reason: form["reason"] ?? "", client: client)
        }
        userAction(router, "credits", notice: "credits_granted") { id, form, _, client in
            guard let amount = Int(form["amount"] ?? "") else { throw GatehouseError.invalidRequest("The amount must be a whole number.") }
            try await console.grantCredits(id, credit: form["credit"] ?? "", amount: amount, reason: form["reason"] ?? "", client: client)
        }
        userAction(router, "disable", notice: "disabled") { id, form, _, client in
            try await console.disable(id, reason: form["reason"] ?? "", client: client)
        }
        userAction(router, "enable", notice: "enabled") { id, _, _, client in
            try await console.enable(id, client: client)
        }
        userAction(router, "mail") { id, form, _, client in
            let kind = form["kind"] ?? ""
            try await console.sendMail(id, kind: kind, client: client)
            return ["password_reset": "reset_sent", "magic_link": "magic_link_sent", "verification": "verification_sent"][kind]
        }
        userAction(router, "delete", notice: "user_deleted", then: "/admin/users") { id, form, _, client in
            try await console.delete(id, confirmation: form["confirm"] ?? "", client: client)
        }
        router.get("/admin/audit") { request, context in
            try await page(request, context) {
                let query = request.uri.queryParameters
                let user = try Self.userID(query["user_id"].map(String.init))
                let event = query["event"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
                let before = try Self.cursor(query["before"].map(String.init))
                let rows = try await console.store.auditEvents(userID: user, event: event, before: before, limit: 51)
                return views.audit(rows, user: user, event: event)
            }
        }
        router.get("/admin/events") { request, context in
            try await page(request, context) {
                let query = request.uri.queryParameters
                let user = try Self.userID(query["user_id"].map(String.init))
                let type = query["type"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
                let after = try Self.cursor(query["after"].map(String.init))
                let rows = try await console.store.events(after: after, type: type, userID: user, limit: 51)
                return views.events(rows, user: user, type: type)
            }
        }
        router.get("/admin/keys") { request, context in
            try await page(request, context) { views.keys(try await console.store.allSigningKeys(), active: console.keys.activeKID) }
        }
        router.post("/admin/keys/rotate") { request, context in
            try await action(request, context, onError: { views.keys(try await console.store.allSigningKeys(), active: console.keys.activeKID) }) {
                _, form, client in
                try await console.rotateKeys(confirmation: form["confirm"] ?? "", client: client)
                return redirect("/admin/keys", notice: "keys_rotated")
            }
        }
        router.get("/admin/mail") { request, context in
            try await page(request, context) { try await mailPage() }
        }
        router.post("/admin/mail/test") { request, context in
            try await action(request, context, onError: { try await mailPage() }) { _, form, client in
                try await console.sendTestMail(to: form["to"] ?? "", client: client)
                return redirect("/admin/mail", notice: "test_mail_queued")
            }
        }
        router.get("/admin/preset") { request, context in
            try await page(request, context) { try views.preset(console.preset) }
        }
    }

    // MARK: Pages

    private func userPage(_ id: String) async throws -> ConsoleViews.Page {
        views.user(try await console.user(id), live: console.isLive, credits: console.creditNames)
    }

    private func mailPage() async throws -> ConsoleViews.Page {
        views.mail(try await console.store.mailCounts(), recent: try await console.store.recentMail(limit: 30))
    }

    /// A user action: `POST /admin/users/{id}/<path>`, then `notice` on the user's page (or on `location`).
    private func userAction(
        _ router: Router<GatehouseRequestContext>, _ path: String, notice: String, then location: String? = nil,
        _ run: @escaping @Sendable (String, [String: String], GatehouseRequestContext, ClientInfo) async throws -> Void
    ) {
        userAction(router, path, then: location) { id, form, context, client in
            try await run(id, form, context, client)
            return notice
        }
    }

    /// A user action whose notice depends on what it did.
    private func userAction(
        _ router: Router<GatehouseRequestContext>, _ path: String, then location: String? = nil,
        _ run: @escaping @Sendable (String, [String: String], GatehouseRequestContext, ClientInfo) async throws -> String?
    ) {
        router.post(RouterPath("/admin/users/{id}/\(path)")) { request, context in
            let id = try context.parameters.require("id")
            return try await action(request, context, onError: { try await userPage(id) }) { _, form, client in
                let notice = try await run(id, form, context, client)
                return redirect(location ?? "/admin/users/\(id)", notice: notice)
            }
        }
    }

    // MARK: Sign-in

    private func signIn(_ request: Request, _ context: GatehouseRequestContext) async throws -> Response {
        let form = try await readForm(request)
        let client = resolver.client(request, context.peerAddress)
        guard PagesController.sameOrigin(request),
            cookies.checkSignIn(cookie: request.cookies[cookies.preSessionName]?.value, token: form["csrf_token"])
        else {
            return render(views.forbidden(), session: nil, status: .forbidden)
        }
        do {
            // Counted per address whatever the preset says of IP limits: this guards the admin key.
            try await throttle.limit(
                "admin_console_sign_in:\(client.ip ?? "unknown")", limit: Self.signInsPerWindow, windowSeconds: 300)
        } catch let error as GatehouseError where error.status == 429 {
            return signInPage(error: ("rate_limited", "Too many attempts. Wait a few minutes and try again."), status: .tooManyRequests)
        }
        guard adminKey.matches(form["key"] ?? "") else {
            try await console.recordSignIn(succeeded: false, client: client)
            return signInPage(error: ("wrong_key", "That is not the admin key."), status: .unauthorized)
        }
        try await console.recordSignIn(succeeded: true, client: client)
        let started = cookies.newSession(now: clock.now)
        try await console.startSession(started.session)
        var response = redirect("/admin", notice: "signed_in")
        response.headers.append(HTTPField(name: .setCookie, value: started.header))
        return response
    }

    private func signInPage(error: (code: String, message: String)? = nil, status: HTTPResponse.Status = .ok) -> Response {
        let pair = cookies.newSignInPair()
        var response = render(views.signIn(token: pair.token, error: error), session: nil, status: status)
        response.headers.append(HTTPField(name: .setCookie, value: pair.header))
        return response
    }

    // MARK: Plumbing

    /// A signed-in GET page (the sign-in page when there is no live session).
    private func page(
        _ request: Request, _ context: GatehouseRequestContext, _ build: () async throws -> ConsoleViews.Page
    ) async throws -> Response {
        guard let session = try await liveSession(request) else { return signInPage() }
        var page: ConsoleViews.Page
        var status = HTTPResponse.Status.ok
        do {
            page = try await build()
        } catch let error as GatehouseError where error.status == 404 {
            page = views.notFound(error.message)
            status = .notFound
        } catch let error as GatehouseError where error.status == 400 {
            page = views.notFound(error.message)
            status = .badRequest
        }
        page.notice = request.uri.queryParameters["notice"].map(String.init).flatMap { ConsoleViews.notices[$0] == nil ? nil : $0 }
        return render(page, session: session, status: status)
    }

    /// A signed-in form POST: checked for its session, origin and CSRF token before `run`. A
    /// refusal of the action itself answers `onError`'s page with the reason.
    private func action(
        _ request: Request, _ context: GatehouseRequestContext, onError: (() async throws -> ConsoleViews.Page)? = nil,
        _ run: (ConsoleCookies.Session, [String: String], ClientInfo) async throws -> Response
    ) async throws -> Response {
        guard let session = try await liveSession(request) else { return signInPage(status: .unauthorized) }
        let form = try await readForm(request)
        guard PagesController.sameOrigin(request), cookies.checkCSRF(form["csrf_token"], session: session) else {
            return render(views.forbidden(), session: session, status: .forbidden)
        }
        let client = resolver.client(request, context.peerAddress)
        do {
            return try await run(session, form, client)
        } catch let refusal as ConsoleService.Refusal {
            guard let onError else { throw refusal }
            var page = try await onError()
            page.error = (refusal.code, refusal.message)
            return render(page, session: session, status: HTTPResponse.Status(code: refusal.status))
        } catch let error as GatehouseError where error.status < 500 {
            guard let onError else { throw error }
            var page = try await onError()
            page.error = (error.code.rawValue, error.message)
            return render(page, session: session, status: HTTPResponse.Status(code: error.status))
        }
    }

    /// The request's console session: its cookie signed and unexpired, and not signed out.
    private func liveSession(_ request: Request) async throws -> ConsoleCookies.Session? {
        guard let session = cookies.session(request.cookies[cookies.sessionName]?.value, now: clock.now),
            try await console.sessionIsLive(session)
        else { return nil }
        return session
    }

    private func readForm(_ request: Request) async throws -> [String: String] {
        PagesController.parseForm(String(buffer: try await request.collectBody(limit: bodyLimit)))
    }

    private func redirect(_ location: String, notice: String? = nil) -> Response {
        let target = notice.map { "\(location)?notice=\($0)" } ?? location
        return Response(status: .seeOther, headers: [.location: target, .cacheControl: "no-store"])
    }

    private func render(_ page: ConsoleViews.Page, session: ConsoleCookies.Session?, status: HTTPResponse.Status) -> Response {
        let nonce = randomToken(bytes: 16)
        let html = views.render(page, csrf: session.map(cookies.csrf(for:)), nonce: nonce)
        return Response(
            status: status,
            headers: [
                .contentType: "text/html; charset=utf-8",
                .contentSecurityPolicy:
                    "default-src 'none'; style-src 'nonce-\(nonce)'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
                .xFrameOptions: "DENY", .cacheControl: "no-store", HTTPField.Name("Referrer-Policy")!: "no-referrer",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            ],
            body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    static func userID(_ text: String?) throws -> UserID? {
        guard let text, !text.isEmpty else { return nil }
        guard let id = UserID(text) else { throw GatehouseError.invalidRequest("The user id is not valid.") }
        return id
    }

    static func cursor(_ text: String?) throws -> Int64? {
        guard let text, !text.isEmpty else { return nil }
        guard let value = Int64(text), value >= 0 else { throw GatehouseError.invalidRequest("The cursor is not valid.") }
        return value
    }
}
