import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird

/// `/v1/auth/apple`, `/v1/auth/google`, `/v1/auth/identities/*`, Apple's account events and
/// `DELETE /v1/me`.
struct ProviderController {
    let providers: ProviderSignInService
    let account: AccountService
    let auth: AuthService
    let tokens: TokenService
    let resolver: ClientAddressResolver
    let bodyLimit: Int

    func register(on router: Router<GatehouseRequestContext>) {
        let noStore: HTTPFields = [.cacheControl: "no-store"]
        for provider in [Provider.apple, .google] {
            router.post(.init(stringLiteral: "/v1/auth/\(provider.rawValue)")) { request, context in
                let body = try await request.decodeJSON(ProviderSignInRequest.self, limit: bodyLimit)
                let result = try await providers.signIn(provider, body, client: resolver.client(request, context.peerAddress))
                return try JSONBody.response(result, headers: noStore)
            }
        }
        router.post("/v1/webhooks/apple/sign-in") { request, _ in
            let body = try await request.decodeJSON(AppleEventRequest.self, limit: bodyLimit)
            try await providers.handleAppleEvent(body.payload)
            return try JSONBody.response(EmptyObject())
        }

        let signedIn = router.group()
            .add(middleware: AccessTokenMiddleware(tokens: tokens, auth: auth))
            .group(context: AuthenticatedContext.self)
        signedIn.delete("/v1/me") { request, context in
            let body = try await request.decodeJSON(DeleteAccountRequest.self, limit: bodyLimit)
            try await account.delete(context.signedIn, body, client: resolver.client(request, context.peerAddress))
            return JSONBody.empty()
        }
        signedIn.post("/v1/auth/identities/email") { request, context in
            let body = try await request.decodeJSON(EmailPasswordRequest.self, limit: bodyLimit)
            return try JSONBody.response(
                try await providers.linkEmail(
                    context.signedIn, email: body.email, password: body.password, client: resolver.client(request, context.peerAddress)))
        }
        for provider in [Provider.apple, .google] {
            signedIn.post(.init(stringLiteral: "/v1/auth/identities/\(provider.rawValue)")) { request, context in
                let body = try await request.decodeJSON(ProviderSignInRequest.self, limit: bodyLimit)
                return try JSONBody.response(
                    try await providers.link(context.signedIn, provider, body, client: resolver.client(request, context.peerAddress)))
            }
        }
        // The literal paths are listed because the router does not fall back from a literal
        // segment (`email`, taken by the POST routes) to a parameter.
        for path in ["email", "apple", "google", ":provider"] {
            signedIn.delete(.init(stringLiteral: "/v1/auth/identities/\(path)")) { request, context in
                let provider = path.hasPrefix(":") ? try context.parameters.require("provider") : path
                try await providers.unlink(context.signedIn, provider: provider, client: resolver.client(request, context.peerAddress))
                return JSONBody.empty()
            }
        }
    }
}
