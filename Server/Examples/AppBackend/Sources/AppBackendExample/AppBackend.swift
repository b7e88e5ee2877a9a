import Foundation
import GatehouseCore
import GatehouseVerifier
import GatehouseWire
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle

/// An app's own backend in front of Gatehouse, built on `GatehouseVerifier`: the example that
/// shows where a plan's limits are enforced. The app's clients may ask Gatehouse
/// (`POST /v1/entitlements/check`) to decide what to show, but only the backend that holds the
/// data can count it, so the backend decides:
/// - **Handz's flows** (`/flows`): the backend counts the user's saved flows in its own SQLite
///   table and runs Gatehouse's rules on that count; a Free user's third flow is refused
///   whatever the client claims, and after a downgrade every flow stays readable while the
///   flows beyond the cap are read-only.
/// - **Hannah's costly routes** (`/ai/chat`, `/search`, `/sms`): refused once the trial has
///   ended; AI chats and searches are counted in Gatehouse-held meters with the service key,
///   so every instance of this backend shares one daily limit per user.
/// - **Gatehouse's `CUSTOM_ACCESS_TOKEN` hook** (`POST /hooks/custom-access-token`, with a hook
///   secret): the backend checks the call's Standard Webhooks signature with
///   `GatehouseVerifier`'s `HookSignature` and answers the user's saved-flow count from its own
///   table, which every token then carries under `app` (`GET /whoami` reads it typed).
public struct AppBackendSettings: Sendable {
    public enum Routes: String, Sendable, CaseIterable {
        /// Handz: `GET/POST /flows`, `GET/PATCH /flows/{id}`, `POST /inbox`, `DELETE /inbox/{id}`.
        case flows
        /// Hannah: `POST /ai/chat`, `POST /search`, `POST /sms`.
        case assistant
    }

    /// Where this backend reaches Gatehouse.
    public var gatehouseURL: URL
    /// The Gatehouse token audience (the preset's name unless `GATEHOUSE_TOKEN_AUDIENCE` says otherwise).
    public var audience: String
    /// Gatehouse's public URL (its tokens' `iss`), when it differs from `gatehouseURL`.
    public var issuer: String?
    /// `GATEHOUSE_SERVICE_KEY`, for the Gatehouse-held meters of `assistant`.
    public var serviceKey: String?
    /// The `whsec_…` secret of Gatehouse's `CUSTOM_ACCESS_TOKEN` hook
    /// (`GATEHOUSE_HOOK_CUSTOM_ACCESS_TOKEN_SECRET`); the hook's route is served only with it.
    public var hookSecret: String?
    public var databasePath: String
    public var routes: Set<Routes>
    public var host: String
    public var port: Int
    public var clock: any WallClock

    public init(
        gatehouseURL: URL, audience: String, issuer: String? = nil, serviceKey: String? = nil, databasePath: String = "app-backend.sqlite",
        routes: Set<Routes>, host: String = "127.0.0.1", port: Int = 8090, clock: any WallClock = SystemClock(), hookSecret: String? = nil
    ) {
        self.hookSecret = hookSecret
        self.gatehouseURL = gatehouseURL
        self.audience = audience
        self.issuer = issuer
        self.serviceKey = serviceKey
        self.databasePath = databasePath
        self.routes = routes
        self.host = host
        self.port = port
        self.clock = clock
    }
}

public struct AppBackendContext: GatehouseUserContext {
    public var coreContext: CoreRequestContextStorage
    public var gatehouseUser: GatehouseUser?
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    /// Set by `GatehouseMiddleware` on every route behind it.
    var user: GatehouseUser {
        get throws {
            guard let gatehouseUser else { throw HTTPError(.unauthorized) }
            return gatehouseUser
        }
    }
}

struct FlowBody: Decodable {
    var title: String
}

struct FlowList: ResponseEncodable {
    struct Item: Encodable {
        var id: String
        var title: String
        var rank: Int
        var editable: Bool
    }
    var flows: [Item]
}

extension FlowStore.Flow: ResponseEncodable {}

/// The claims this backend's `CUSTOM_ACCESS_TOKEN` hook puts under the token's `app` claim
/// (docs/hooks.md): the user's saved flows, counted in this backend's own table.
struct FlowClaims: Codable {
    var savedFlows: Int

    enum CodingKeys: String, CodingKey {
        case savedFlows = "saved_flows"
    }
}

/// `GET /whoami`: who the token speaks for, with the app's own claims read typed.
struct WhoAmI: ResponseEncodable {
    var userID: String
    var plan: String
    var savedFlows: Int?

    enum CodingKeys: String, CodingKey {
        case plan
        case userID = "user_id"
        case savedFlows = "saved_flows"
    }
}

/// What the `CUSTOM_ACCESS_TOKEN` hook reads of Gatehouse's call: the account's id.
struct ClaimsCall: Decodable {
    struct Payload: Decodable {
        struct User: Decodable { var id: String }
        var user: User
    }
    var type: String
    var data: Payload
}

/// The hook's answer: `{"claims": {…}}`.
struct ClaimsAnswer: ResponseEncodable {
    var claims: FlowClaims
}

/// Builds the example backend: `main` runs it, the tests drive it over HTTP.
public func buildAppBackend(_ settings: AppBackendSettings, logger: Logger = Logger(label: "app-backend")) async throws
    -> some ApplicationProtocol
{
    let access = GatehouseAccess(
        baseURL: settings.gatehouseURL, audience: settings.audience, issuer: settings.issuer, clock: settings.clock)
    let store = try await FlowStore.open(path: settings.databasePath, logger: logger)
    let router = Router(context: AppBackendContext.self)
    if settings.routes.contains(.flows) { flowRoutes(router, access: access, store: store, clock: settings.clock) }
    if let secret = settings.hookSecret { claimsHookRoute(router, signature: try HookSignature(secret: secret), store: store, clock: settings.clock) }
    if settings.routes.contains(.assistant) {
        guard let serviceKey = settings.serviceKey else {
            throw HTTPError(.internalServerError, message: "the assistant routes need Gatehouse's service key")
        }
        // Every request the middleware lets through is one use: the meter makes its idempotency
        // key itself for each call, so no header the app sends can make a use count as an
        // earlier one (docs/verifier.md).
        let meters = UsageMeter(
            gatehouse: GatehouseMeters(baseURL: settings.gatehouseURL, serviceKey: serviceKey),
            meters: ["ai_chat": "ai_chat", "search": "search"], clock: settings.clock)
        assistantRoutes(router, access: access, usage: meters)
    }
    var app = Application(
        router: router, configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "app-backend"),
        logger: logger)
    app.addServices(ClosingService(store: store))
    return app
}

func flowRoutes(_ router: Router<AppBackendContext>, access: GatehouseAccess, store: FlowStore, clock: any WallClock) {
    router.group("whoami").add(middleware: GatehouseMiddleware<AppBackendContext>(access: access))
        .get { _, context -> WhoAmI in
            let user = try context.user
            // nil without a hook; claims of another shape are the app's mistake, answered as 500.
            let claims = try user.app(as: FlowClaims.self)
            return WhoAmI(userID: user.userID, plan: user.plan(at: clock.now).rawValue, savedFlows: claims?.savedFlows)
        }
    let flows = router.group("flows").add(middleware: GatehouseMiddleware<AppBackendContext>(access: access))
    flows.get { _, context -> FlowList in
        let user = try context.user
        var items: [FlowList.Item] = []
        for flow in try await store.flows(owner: user.userID) {
            let edit = try await access.decide("edit_flow", for: user, context: ["flow_rank": flow.rank])
            items.append(.init(id: flow.id, title: flow.title, rank: flow.rank, editable: edit.allowed))
        }
        return FlowList(flows: items)
    }
    // Save: decide on the count this backend holds, and insert only while that count stands.
    flows.post { request, context -> EditedResponse<FlowStore.Flow> in
        let body = try await request.decode(as: FlowBody.self, context: context)
        return try await add(body.title, to: .saved, action: "save_flow", count: "saved_count", for: try context.user)
    }
    // The inbox: flows shared with the user, accepted as imports (Free holds 10).
    let inbox = router.group("inbox").add(middleware: GatehouseMiddleware<AppBackendContext>(access: access))
    inbox.post { request, context -> EditedResponse<FlowStore.Flow> in
        let body = try await request.decode(as: FlowBody.self, context: context)
        return try await add(body.title, to: .inbox, action: "accept_import", count: "inbox_count", for: try context.user)
    }
    inbox.delete(":id") { _, context -> HTTPResponse.Status in
        guard try await store.delete(try context.parameters.require("id"), owner: try context.user.userID, shelf: .inbox) else {
            throw HTTPError(.notFound)
        }
        return .noContent
    }

    @Sendable func add(_ title: String, to shelf: FlowStore.Shelf, action: String, count name: String, for user: GatehouseUser) async throws
        -> EditedResponse<FlowStore.Flow>
    {
        for _ in 0..<20 {
            let count = try await store.count(owner: user.userID, shelf: shelf)
            try await access.require(action, for: user, context: [name: count])
            if let flow = try await store.insert(owner: user.userID, shelf: shelf, title: title, ifCountIs: count, now: clock.now) {
                return EditedResponse(status: .created, response: flow)
            }
        }
        throw HTTPError(.conflict, message: "Too many at once. Please try again.")
    }
    flows.get(":id") { _, context -> FlowStore.Flow in
        guard let flow = try await store.flow(try context.parameters.require("id"), owner: try context.user.userID) else {
            throw HTTPError(.notFound)
        }
        return flow
    }
    // Edit: the flow's rank comes from this backend's table; beyond a Free plan's cap the flow
    // is read-only (H8.10-7).
    router.group("flows/:id")
        .add(
            middleware: GatehouseMiddleware<AppBackendContext>(access: access, action: "edit_flow") { _, context, user in
                guard let flow = try await store.flow(try context.parameters.require("id"), owner: user.userID) else {
                    throw HTTPError(.notFound)
                }
                return ["flow_rank": flow.rank]
            }
        )
        .patch { request, context -> FlowStore.Flow in
            let user = try context.user
            let id = try context.parameters.require("id")
            let body = try await request.decode(as: FlowBody.self, context: context)
            guard try await store.rename(id, owner: user.userID, title: body.title), let flow = try await store.flow(id, owner: user.userID)
            else { throw HTTPError(.notFound) }
            return flow
        }
}

/// `POST /hooks/custom-access-token`: Gatehouse asks for the claims of a token it is about to
/// sign. The signature is checked over the raw body before anything in it is read.
func claimsHookRoute(_ router: Router<AppBackendContext>, signature: HookSignature, store: FlowStore, clock: any WallClock) {
    router.post("hooks/custom-access-token") { request, context -> ClaimsAnswer in
        let body = try await request.body.collect(upTo: 16_384)
        let headers = request.headers
        do {
            try signature.verify(
                body.readableBytesView, id: headers[HTTPField.Name("webhook-id")!], timestamp: headers[HTTPField.Name("webhook-timestamp")!],
                signature: headers[HTTPField.Name("webhook-signature")!], now: clock.now)
        } catch {
            throw HTTPError(.unauthorized, message: "The hook call's signature does not verify.")
        }
        let call = try JSONDecoder().decode(ClaimsCall.self, from: Data(body.readableBytesView))
        guard call.type == "custom_access_token" else { throw HTTPError(.badRequest) }
        return ClaimsAnswer(claims: FlowClaims(savedFlows: try await store.count(owner: call.data.user.id, shelf: .saved)))
    }
}

func assistantRoutes(_ router: Router<AppBackendContext>, access: GatehouseAccess, usage: UsageMeter) {
    router.group("ai").add(middleware: GatehouseMiddleware<AppBackendContext>(access: access, action: "ai_chat", usage: usage))
        .post("chat") { _, context in "AI answer for \(try context.user.userID)" }
    // Search is one of the AI features (the plan's `ai_chat` gate), with a meter of its own.
    router.group("search").add(middleware: GatehouseMiddleware<AppBackendContext>(access: access, action: "ai_chat", usage: usage, meter: "search"))
        .post { _, context in "search results for \(try context.user.userID)" }
    router.group("sms").add(middleware: GatehouseMiddleware<AppBackendContext>(access: access, action: "send_sms"))
        .post { _, context in "SMS sent for \(try context.user.userID)" }
}

/// Closes the flow database when the backend shuts down.
struct ClosingService: Service {
    let store: FlowStore
    func run() async throws {
        try? await gracefulShutdown()
        try await store.close()
    }
}
