import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `POST /v1/events`: client analytics; a token is optional (events may come before any
/// account exists).
struct AnalyticsController {
    let analytics: AnalyticsService
    let authenticator: Authenticator
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>) {
        router.on(Endpoints.events, use: record)
    }

    @Sendable func record(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let user = try await request.optionalUser(authenticator)
        let body = try await input.body(ClientEventBatch.self, request)
        try await analytics.record(body, user: user, client: input.client(request, context))
        return JSONBody.empty(.accepted)
    }
}
