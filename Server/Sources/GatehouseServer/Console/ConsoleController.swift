import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import HTTPTypes
import Hummingbird
import NIOCore

/// The admin console at `/admin`: server-rendered pages for the operator, signed in with the
/// admin key. Every form is a POST with the session's CSRF token and answers with a redirect
/// (post/redirect/get), so a reload never repeats an action, but for the two that show an OAuth
/// client's new secret once (`ConsoleController+Clients`). Pages run no script and load
/// nothing from elsewhere.
struct ConsoleController {
    let console: ConsoleService
    let operators: OperatorService
    let operatorMail: OperatorMailService
    let operatorKeys: OperatorKeysService
    let adminKey: AdminKey
    let clients: OperatorClientsService
    let cookies: ConsoleCookies
    let views: ConsoleViews
    let resolver: ClientAddressResolver
    let throttle: Throttle
    let clock: any WallClock
    let bodyLimit: Int

    /// The console's routes: pages for a browser, not the JSON API (so not in the OpenAPI
    /// document; `OpenAPITests` holds the router to this list).
    static let operations = ConsoleRoutes.all.map(\.operation)

    /// Sign-in attempts per address per five minutes.
    static let signInsPerWindow = 10

    func register(on router: Router<GatehouseRequestContext>) {
        router.on(ConsoleRoutes.overview, use: overview)
        router.on(ConsoleRoutes.countOverview, use: countOverview)
        router.on(ConsoleRoutes.signIn, use: signIn)
        router.on(ConsoleRoutes.signOut, use: signOut)
        router.on(ConsoleRoutes.users, use: users)
        router.on(ConsoleRoutes.user, use: user)
        userAction(router, ConsoleRoutes.revokeSession, notice: "session_revoked", revokeSession)
        userAction(router, ConsoleRoutes.revokeAllSessions, notice: "sessions_revoked", revokeAllSessions)
        userAction(router, ConsoleRoutes.setPlan, notice: "plan_set", setPlan)
        userAction(router, ConsoleRoutes.setMetadata, notice: "metadata_set", setMetadata)
        userAction(router, ConsoleRoutes.grantCredits, notice: "credits_granted", grantCredits)
        userAction(router, ConsoleRoutes.createGrant, notice: "grant_created", createGrant)
        userAction(router, ConsoleRoutes.revokeGrant, notice: "grant_revoked", revokeGrant)
        userAction(router, ConsoleRoutes.disable, notice: "disabled", disable)
        userAction(router, ConsoleRoutes.enable, notice: "enabled", enable)
        userAction(router, ConsoleRoutes.sendMail, sendMail)
        userAction(router, ConsoleRoutes.delete, notice: "user_deleted", then: "/admin/users", delete)
        router.on(ConsoleRoutes.audit, use: audit)
        router.on(ConsoleRoutes.events, use: events)
        router.on(ConsoleRoutes.keys, use: keys)
        router.on(ConsoleRoutes.rotateKeys, use: rotateKeys)
        router.on(ConsoleRoutes.mail, use: mail)
        router.on(ConsoleRoutes.testMail, use: testMail)
        router.on(ConsoleRoutes.clients, use: clientsList)
        router.on(ConsoleRoutes.createClient, use: createClient)
        router.on(ConsoleRoutes.rotateClientSecret, use: rotateClientSecret)
        router.on(ConsoleRoutes.deleteClient, use: deleteClient)
        router.on(ConsoleRoutes.preset, use: preset)
    }

    // MARK: Handlers

    @Sendable func overview(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await page(request, context) { views.overview(try await console.overview()) }
    }

    /// "Count again": the counts start at once, and the overview shows them when they are done.
    @Sendable func countOverview(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await action(request, context) { _, _, _ in
            console.countOverviewAgain()
            return redirect("/admin", notice: "counting")
        }
    }

    @Sendable func signOut(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await action(request, context) { session, _, _ in
            // Ended on the server: a copy of the cookie is refused from now on, on every node.
            try await console.endSession(session)
            var response = redirect("/admin")
            response.headers[.setCookie] = cookies.clearSession
            return response
        }
    }

    @Sendable func users(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await page(request, context) {
            let query = ConsoleViews.UsersQuery(request.uri.queryParameters)
            return views.users(try await console.users(query.filter, planState: query.plan, provider: query.provider, cursor: query.cursor), query: query)
        }
    }

    @Sendable func user(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await page(request, context) {
            try await userPage(try context.parameters.require("id"), from: try ConsoleViews.historyCursors(request.uri.queryParameters))
        }
    }

    @Sendable func revokeSession(_ id: String, _ form: [String: String], _ context: GatehouseRequestContext, _ client: ClientInfo) async throws {
        try await operators.revokeSession(id, session: try context.parameters.require("session"), by: ConsoleService.actor, client: client)
    }

    @Sendable func revokeAllSessions(_ id: String, _ form: [String: String], _ context: GatehouseRequestContext, _ client: ClientInfo) async throws {
        _ = try await operators.revokeAllSessions(id, by: ConsoleService.actor, client: client)
    }

    @Sendable func setPlan(_ id: String, _ form: [String: String], _ context: GatehouseRequestContext, _ client: ClientInfo) async throws {
        let plan = form["plan"].flatMap { $0.isEmpty ? nil : $0 }
        _ = try await operators.setPlanOverride(id, plan: plan, by: ConsoleService.actor, reason: form["reason"], required: true, client: client)
    }

    /// The form's two objects, each JSON text, merged as the admin API's are; an empty field
    /// leaves its object. Both are read before anything is written.
    @Sendable func setMetadata(_ id: String, _ form: [String: String], _ context: GatehouseRequestContext, _ client: ClientInfo) async throws {
        let user = try ConsoleViews.metadataPatch(form, .user), app = try ConsoleViews.metadataPatch(form, .app)
        try await operators.setMetadata(id, userMetadata: user, appMetadata: app, by: ConsoleService.actor, client: client)
    }

    @Sendable func grantCredits(_ id: String, _ form: [String: String], _ context: GatehouseRequestContext, _ client: ClientInfo) async throws {
        guard let amount = Int(form["amount"] ?? "") else { throw GatehouseError.invalidRequest("The amount must be a whole number.") }
        try await operators.grantCredits(
            id, credit: form["credit"] ?? "", amount: amount, reason: form["reason"], by: ConsoleService.actor, client: client)
    }

    /// A promotional grant until the end (UTC) of the form's day, at its tier or the plan's own.
    @Sendable func createGrant(_ id: String, _ form: [String: String], _ context: GatehouseRequestContext, _ client: ClientInfo) async throws {
        guard let until = Self.endOfDay(form["until"] ?? "") else { throw GatehouseError.invalidRequest("The date must be a day, YYYY-MM-DD.") }
        let tier = form["tier"].flatMap { $0.isEmpty ? nil : $0 }
        _ = try await operators.createGrant(
            id, GrantRequest(tier: tier, until: until, reason: form["reason"] ?? ""), by: ConsoleService.actor, client: client)
    }

    @Sendable func revokeGrant(_ id: String, _ form: [String: String], _ context: GatehouseRequestContext, _ client: ClientInfo) async throws {
        try await operators.revokeGrant(id, grant: try context.parameters.require("grant"), by: ConsoleService.actor, client: client)
    }

    @Sendable func disable(_ id: String, _ form: [String: String], _ context: GatehouseRequestContext, _ client: ClientInfo) async throws {
        _ = try await operators.disable(id, reason: form["reason"], required: true, by: ConsoleService.actor, client: client)
    }

    @Sendable func enable(_ id: String, _ form: [String: String], _ context: GatehouseRequestContext, _ client: ClientInfo) async throws {
        _ = try await operators.enable(id, by: ConsoleService.actor, client: client)
    }

    /// Answers the notice for the mail sent.
    @Sendable func sendMail(_ id: String, _ form: [String: String], _ context: GatehouseRequestContext, _ client: ClientInfo) async throws -> String? {
        let kind = form["kind"] ?? ""
        try await operatorMail.send(id, kind: kind, by: ConsoleService.actor, client: client)
        return ["password_reset": "reset_sent", "magic_link": "magic_link_sent", "verification": "verification_sent"][kind]
    }

    /// Deletes the account when the form's confirmation is exactly its email (or its id when it has none).
    @Sendable func delete(_ id: String, _ form: [String: String], _ context: GatehouseRequestContext, _ client: ClientInfo) async throws {
        let user = try await operators.find(id)
        guard form["confirm"] ?? "" == ConsoleService.confirmationText(user) else {
            throw ConsoleService.Refusal(
                code: "confirmation_mismatch", message: "Type \(ConsoleService.confirmationText(user)) exactly to delete this account.")
        }
        try await operators.delete(user.id.description, by: ConsoleService.actor, client: client)
    }

    @Sendable func audit(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await page(request, context) {
            let query = request.uri.queryParameters
            let user = try Self.userID(query["user_id"].map(String.init))
            let event = query["event"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
            let page = try Self.page(query["before"].map(String.init))
            return views.audit(try await operators.audit(user: user, event: event, page), user: user, event: event)
        }
    }

    @Sendable func events(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await page(request, context) {
            let query = request.uri.queryParameters
            let user = try Self.userID(query["user_id"].map(String.init))
            let type = query["type"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
            let page = try Self.page(query["after"].map(String.init))
            return views.events(try await operators.events(user: user, type: type, page), user: user, type: type)
        }
    }

    @Sendable func keys(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await page(request, context) { try await keysPage() }
    }

    @Sendable func rotateKeys(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await action(request, context, onError: { try await keysPage() }) { _, form, client in
            guard form["confirm"] == "rotate" else {
                throw ConsoleService.Refusal(code: "confirmation_mismatch", message: "Type rotate to rotate the signing key.")
            }
            try await operatorKeys.rotate(by: ConsoleService.actor, client: client)
            return redirect("/admin/keys", notice: "keys_rotated")
        }
    }

    @Sendable func mail(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await page(request, context) { try await mailPage() }
    }

    @Sendable func testMail(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await action(request, context, onError: { try await mailPage() }) { _, form, client in
            _ = try await operatorMail.sendTest(to: form["to"] ?? "", by: ConsoleService.actor, client: client)
            return redirect("/admin/mail", notice: "test_mail_queued")
        }
    }

    @Sendable func preset(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await page(request, context) { try views.preset(console.preset) }
    }

    // MARK: Pages

    private func userPage(_ id: String, from cursors: ConsoleService.HistoryCursors = .init()) async throws -> ConsoleViews.Page {
        views.user(
            try await console.user(id, from: cursors), live: console.isLive, liveGrant: console.isLive, credits: operators.creditNames,
            tiers: operators.knownTiers.sorted())
    }

    private func keysPage() async throws -> ConsoleViews.Page {
        views.keys(try await console.signingKeys(), active: console.keys.activeKID)
    }

    private func mailPage() async throws -> ConsoleViews.Page {
        views.mail(try await console.mailCounts(), recent: try await console.recentMail())
    }

    /// A user action: `POST /admin/users/{id}/<path>`, then `notice` on the user's page (or on `location`).
    private func userAction(
        _ router: Router<GatehouseRequestContext>, _ route: Route, notice: String, then location: String? = nil,
        _ run: @escaping @Sendable (String, [String: String], GatehouseRequestContext, ClientInfo) async throws -> Void
    ) {
        userAction(router, route, then: location) { id, form, context, client in
            try await run(id, form, context, client)
            return notice
        }
    }

    /// A user action whose notice depends on what it did.
    private func userAction(
        _ router: Router<GatehouseRequestContext>, _ route: Route, then location: String? = nil,
        _ run: @escaping @Sendable (String, [String: String], GatehouseRequestContext, ClientInfo) async throws -> String?
    ) {
        router.on(route, use: userHandler(then: location, run))
    }

    /// The handler of a user action: the form checked by `action`, then `run` with the user's id.
    private func userHandler(
        then location: String?, _ run: @escaping @Sendable (String, [String: String], GatehouseRequestContext, ClientInfo) async throws -> String?
    ) -> @Sendable (Request, GatehouseRequestContext) async throws -> Response {
        { request, context in
            let id = try context.parameters.require("id")
            return try await action(request, context, onError: { try await userPage(id) }) { _, form, client in
                let notice = try await run(id, form, context, client)
                return redirect(location ?? "/admin/users/\(id)", notice: notice)
            }
        }
    }

    // MARK: Sign-in

    @Sendable func signIn(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
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
            try await console.recordRefusedSignIn(client: client)
            return signInPage(error: ("wrong_key", "That is not the admin key."), status: .unauthorized)
        }
        let started = cookies.newSession(now: clock.now)
        try await console.startSession(started.session, client: client)
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
    func page(
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
    func action(
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

    func redirect(_ location: String, notice: String? = nil) -> Response {
        let target = notice.map { "\(location)?notice=\($0)" } ?? location
        return Response(status: .seeOther, headers: [.location: target, .cacheControl: "no-store"])
    }

    func render(_ page: ConsoleViews.Page, session: ConsoleCookies.Session?, status: HTTPResponse.Status) -> Response {
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

    /// An HTML date input's `YYYY-MM-DD` as the RFC 3339 end of that day in UTC; nil for anything
    /// that is not a day of the calendar.
    static func endOfDay(_ day: String) -> String? {
        let parts = day.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.map(\.count) == [4, 2, 2], day.allSatisfy({ $0 == "-" || ("0"..."9").contains($0) }),
            let year = Int64(parts[0]), let month = Int64(parts[1]), let date = Int64(parts[2]),
            UTCCivil.validDays(year: year, month: month, day: date) != nil
        else { return nil }
        return "\(day)T23:59:59Z"
    }

    /// A page of 50 from the cursor in the query (the operator's paging, `PageQuery`).
    static func page(_ cursor: String?) throws -> PageQuery {
        try PageQuery(limit: nil, default: 50, range: 50...50, cursor: cursor, allowsNegative: false)
    }
}
