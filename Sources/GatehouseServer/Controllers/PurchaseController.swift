import GatehouseWire
import HTTPTypes
import Hummingbird

/// App Store purchases posted by the app and Apple's Server Notifications V2.
struct PurchaseController {
    let purchases: PurchaseService
    let auth: AuthService
    let tokens: TokenService
    let bodyLimit: Int

    func register(on router: Router<GatehouseRequestContext>) {
        let noStore: HTTPFields = [.cacheControl: "no-store"]
        // Signed in: the snapshot with the purchase applied. Without a token: only who owns it.
        router.post("/v1/purchases/apple") { request, _ in
            let body = try await request.decodeJSON(ApplePurchaseRequest.self, limit: bodyLimit)
            let user = try await request.optionalUser(tokens: tokens, auth: auth)
            switch try await purchases.purchase(body, user: user) {
            case .snapshot(let snapshot): return try JSONBody.response(snapshot, headers: noStore)
            case .hint(let hint): return try JSONBody.response(hint, headers: noStore)
            }
        }
        // Apple retries until it gets a 2xx; a payload that fails verification gets 400.
        router.post("/v1/webhooks/apple/app-store") { request, _ in
            let body = try await request.decodeJSON(AppStoreNotificationRequest.self, limit: bodyLimit)
            try await purchases.notification(body)
            return try JSONBody.response(EmptyObject())
        }
    }
}
