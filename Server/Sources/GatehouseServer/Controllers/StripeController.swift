import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/purchases/stripe/*` for the signed-in account and Stripe's webhook (issue 44).
struct StripeController {
    let stripe: StripeService
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>, signedIn: SignedInRoutes) {
        signedIn.on(Endpoints.stripeCheckout, use: checkout)
        signedIn.on(Endpoints.stripePortal, use: portal)
        router.on(Endpoints.stripeWebhook, use: webhook)
    }

    @Sendable func checkout(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(StripeCheckoutRequest.self, request)
        return try JSONBody.response(try await stripe.checkout(body, user: context.signedIn.user), headers: noStore)
    }

    @Sendable func portal(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(StripePortalRequest.self, request)
        return try JSONBody.response(try await stripe.portal(body, user: context.signedIn.user), headers: noStore)
    }

    /// The raw body, as Stripe signed it: nothing in it is read before the signature checks.
    @Sendable func webhook(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        let body = try await request.collectBody(limit: input.bodyLimit(request))
        try await stripe.webhook(body: Array(buffer: body), signature: request.headers[HTTPField.Name("Stripe-Signature")!])
        return try JSONBody.response(EmptyObject())
    }
}
