import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `POST /v1/purchases/apple`: an App Store purchase posted by the app.
struct AppStorePurchaseController {
    let purchases: AppStorePurchaseService
    let authenticator: Authenticator
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>) {
        router.on(Endpoints.applePurchase, use: purchase)
    }

    /// Signed in: the snapshot with the purchase applied. Without a token: only who owns it.
    @Sendable func purchase(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let user = try await request.optionalUser(authenticator)
        let body = try await input.body(ApplePurchaseRequest.self, request)
        switch try await purchases.purchase(body, user: user) {
        case .snapshot(let snapshot): return try JSONBody.response(snapshot, headers: noStore)
        case .hint(let hint): return try JSONBody.response(hint, headers: noStore)
        }
    }
}
