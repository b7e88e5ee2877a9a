import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// Anonymous sign-in, the profile and handles, merge, export and the entitlement snapshot.
struct AccountController {
    let profiles: ProfileService
    let entitlements: EntitlementService
    let usage: UsageService
    /// The app backends' key for `/v1/usage/{meter}`; nil when none is configured.
    let serviceKey: AdminKey?
    let analytics: AnalyticsService
    let auth: AuthService
    let tokens: TokenService
    let resolver: ClientAddressResolver
    let bodyLimit: Int

    func register(on router: Router<GatehouseRequestContext>) {
        let noStore: HTTPFields = [.cacheControl: "no-store"]
        router.post("/v1/auth/anonymous") { request, context in
            let result = try await profiles.anonymous(
                client: resolver.client(request, context.peerAddress), idempotencyKey: try request.idempotencyKey)
            return try JSONBody.response(result, status: .created, headers: noStore)
        }
        router.get("/v1/handles/:handle") { _, context in
            try JSONBody.response(try await profiles.availability(try context.parameters.require("handle")))
        }
        // A guest (no token) gets the guest snapshot and nothing is stored; a bad token is refused.
        router.get("/v1/entitlements") { request, _ in
            let user = try await request.optionalUser(tokens: tokens, auth: auth)
            return try JSONBody.response(try await entitlements.snapshot(user), headers: noStore)
        }
        // Client analytics; a token is optional (events may come before any account exists).
        router.post("/v1/events") { request, context in
            let body = try await request.decodeJSON(ClientEventBatch.self, limit: bodyLimit)
            let user = try await request.optionalUser(tokens: tokens, auth: auth)
            try await analytics.record(body, user: user, client: resolver.client(request, context.peerAddress))
            return JSONBody.empty(.accepted)
        }
        router.post("/v1/entitlements/check") { request, _ in
            let body = try await request.decodeJSON(EntitlementCheckRequest.self, limit: bodyLimit)
            let user = try await request.optionalUser(tokens: tokens, auth: auth)
            return try JSONBody.response(
                try await entitlements.check(user, action: body.action, context: body.context ?? [:]), headers: noStore)
        }

        // From the app's own backend, with the service key: the end user is named in the body.
        router.group("/v1/usage").add(middleware: BearerKeyMiddleware(key: serviceKey, name: "service key"))
            .post(":meter") { request, context in
                let body = try await request.decodeJSON(UsageRequest.self, limit: bodyLimit)
                return try JSONBody.response(try await usage.use(try context.parameters.require("meter"), request: body), headers: noStore)
            }

        let signedIn = router.group()
            .add(middleware: AccessTokenMiddleware(tokens: tokens, auth: auth))
            .group(context: AuthenticatedContext.self)
        signedIn.post("/v1/me/anonymous-name") { request, context in
            let body = try await request.decodeJSON(AnonymousNameRequest.self, limit: bodyLimit)
            return try JSONBody.response(try await profiles.chooseName(context.signedIn, name: body.name))
        }
        signedIn.patch("/v1/me") { request, context in
            let body = try await request.decodeJSON(ProfilePatch.self, limit: bodyLimit)
            return try JSONBody.response(try await profiles.patch(context.signedIn, body))
        }
        signedIn.get("/v1/me/export") { _, context in
            try JSONBody.response(try await profiles.export(context.signedIn), headers: noStore)
        }
        signedIn.post("/v1/credits/:name/spend") { request, context in
            let body = try await request.decodeJSON(CreditSpendRequest.self, limit: bodyLimit)
            return try JSONBody.response(
                try await entitlements.spend(context.signedIn.user, credit: try context.parameters.require("name"), request: body))
        }
        signedIn.post("/v1/trial/start") { _, context in
            try JSONBody.response(try await entitlements.startTrial(context.signedIn.user))
        }
        signedIn.post("/v1/auth/merge") { request, context in
            let body = try await request.decodeJSON(MergeRequest.self, limit: bodyLimit)
            return try JSONBody.response(try await profiles.merge(context.signedIn, token: body.mergeToken))
        }
    }
}

extension Request {
    /// The `Idempotency-Key` header (decision 3), 1–255 printable ASCII characters.
    var idempotencyKey: String? {
        get throws {
            guard let key = headers[.idempotencyKey] else { return nil }
            guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
                throw GatehouseError.invalidRequest("The Idempotency-Key header must be 1 to 255 printable characters.")
            }
            return key
        }
    }
}

extension HTTPField.Name {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}
