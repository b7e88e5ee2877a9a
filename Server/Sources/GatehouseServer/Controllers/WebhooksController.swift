import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/webhooks/apple/*`: Sign in with Apple's account events and the App Store's Server
/// Notifications V2, each verified by its signature.
struct WebhooksController {
    let providers: ProviderSignInService
    let purchases: AppStorePurchaseService
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>) {
        router.on(Endpoints.appleAccountEvent, use: appleSignIn)
        router.on(Endpoints.appStoreNotification, use: appStore)
    }

    @Sendable func appleSignIn(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(AppleEventRequest.self, request)
        try await providers.handleAppleEvent(body.payload)
        return try JSONBody.response(EmptyObject())
    }

    /// Apple retries until it gets a 2xx; a payload that fails verification gets 400.
    @Sendable func appStore(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await input.body(AppStoreNotificationRequest.self, request)
        try await purchases.notification(body)
        return try JSONBody.response(EmptyObject())
    }
}
