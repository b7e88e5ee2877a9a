import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `POST /v1/purchases/google-play` for the signed-in account and Google Play's Pub/Sub push
/// (issue 59).
struct GooglePlayController {
    let googlePlay: GooglePlayPurchaseService
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>, signedIn: SignedInRoutes) {
        signedIn.on(Endpoints.googlePlayPurchase, use: purchase)
        router.on(Endpoints.googlePlayWebhook, use: push)
    }

    @Sendable func purchase(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(GooglePlayPurchaseRequest.self, request)
        return try JSONBody.response(try await googlePlay.purchase(body, user: context.signedIn.user), headers: noStore)
    }

    /// The push's token is checked before its body is read; 204 once applied (or applied before).
    @Sendable func push(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await request.collectBody(limit: input.bodyLimit(request))
        try await googlePlay.push(body: Array(buffer: body), authorization: request.headers[.authorization])
        return Response(status: .noContent)
    }
}
