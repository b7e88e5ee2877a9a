import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// The routes of the paid sources that sell outside the App Store (issue 44, issue 59): Stripe's
/// checkout and portal and Google Play's purchase for the signed-in account, and each source's
/// webhook, whose raw body goes to its use case to be checked before anything in it is read.
struct PaymentSourcesController {
    let stripe: StripeService
    let googlePlay: GooglePlayPurchaseService
    let input: HTTPInput

    func register(on router: Router<GatehouseRequestContext>, signedIn: SignedInRoutes) {
        signedIn.on(Endpoints.stripeCheckout, use: stripeCheckout)
        signedIn.on(Endpoints.stripePortal, use: stripePortal)
        signedIn.on(Endpoints.googlePlayPurchase, use: googlePlayPurchase)
        router.on(Endpoints.stripeWebhook, use: stripeWebhook)
        router.on(Endpoints.googlePlayWebhook, use: googlePlayPush)
    }

    @Sendable func stripeCheckout(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(StripeCheckoutRequest.self, request)
        return try JSONBody.response(try await stripe.checkout(body, user: context.signedIn.user), headers: noStore)
    }

    @Sendable func stripePortal(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(StripePortalRequest.self, request)
        return try JSONBody.response(try await stripe.portal(body, user: context.signedIn.user), headers: noStore)
    }

    @Sendable func googlePlayPurchase(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let body = try await input.body(GooglePlayPurchaseRequest.self, request)
        return try JSONBody.response(try await googlePlay.purchase(body, user: context.signedIn.user), headers: noStore)
    }

    /// Stripe's event, raw, as Stripe signed it (`Stripe-Signature`): `{}` once applied.
    @Sendable func stripeWebhook(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await stripe.webhook(body: try await rawBody(request), signature: request.headers[HTTPField.Name("Stripe-Signature")!])
        return try JSONBody.response(EmptyObject())
    }

    /// Pub/Sub's push, its `Authorization` token checked first: 204 once applied (or applied before).
    @Sendable func googlePlayPush(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await googlePlay.push(body: try await rawBody(request), authorization: request.headers[.authorization])
        return Response(status: .noContent)
    }

    /// A webhook's body as it arrived, within the route's limit (`BodyLimits.paymentSource`).
    private func rawBody(_ request: Request) async throws -> [UInt8] {
        Array(buffer: try await request.collectBody(limit: input.bodyLimit(request)))
    }
}
