/// Every route of the OpenID provider's protocol (issue 45), declared once: `OAuthController`
/// and `OAuthPagesController` register these and `OpenAPITests` holds the router and the OpenAPI
/// document to them. Their bodies are OAuth's (forms in, RFC 6749 errors out), not Wire types;
/// the app-facing and admin routes are in `Endpoints`.
enum OAuthRoutes {
    static let discovery = Route(.get, "/.well-known/openid-configuration")
    /// The hosted sign-in and consent pages (GET), and their forms (POST).
    static let authorize = Route(.get, "/oauth/authorize")
    static let authorizeForm = Route(.post, "/oauth/authorize")
    static let token = Route(.post, "/oauth/token")
    static let userinfo = Route(.get, "/oauth/userinfo")
    static let userinfoPost = Route(.post, "/oauth/userinfo")
    static let revoke = Route(.post, "/oauth/revoke")
    static let introspect = Route(.post, "/oauth/introspect")
    static let logout = Route(.get, "/oauth/logout")
    /// The confirmation page's answer when the browser is signed in as another account.
    static let logoutForm = Route(.post, "/oauth/logout")
    /// The app's hand-over URL, opened in a browser: an interstitial naming the account.
    static let handover = Route(.get, "/oauth/handover")
    /// The interstitial's "Continue".
    static let handoverForm = Route(.post, "/oauth/handover")
    /// Where a magic link asked for on the sign-in page returns, with the pending request.
    static let magicLink = Route(.get, "/oauth/magic-link")

    static let all = [discovery, authorize, authorizeForm, token, userinfo, userinfoPost, revoke, introspect, logout, logoutForm, handover, handoverForm, magicLink]
}
