import HTTPTypes

/// Every route of `/auth/v1` (Supabase Auth's paths), declared once: `SupabaseController`
/// registers these and `OpenAPITests` holds the router and the OpenAPI document to them.
enum GoTrueRoutes {
    /// Followed from a mail in a browser, which sends no apikey: every answer is a redirect.
    static let verifyLink = Route(.get, "/auth/v1/verify")
    static let settings = Route(.get, "/auth/v1/settings")
    static let jwks = Route(.get, "/auth/v1/.well-known/jwks.json")
    static let signup = Route(.post, "/auth/v1/signup")
    static let token = Route(.post, "/auth/v1/token")
    static let otp = Route(.post, "/auth/v1/otp")
    static let resend = Route(.post, "/auth/v1/resend")
    /// GoTrue's verb is GET; POST is served too.
    static let reauthenticate = Route(.get, "/auth/v1/reauthenticate")
    static let reauthenticatePost = Route(.post, "/auth/v1/reauthenticate")
    static let verify = Route(.post, "/auth/v1/verify")
    static let recover = Route(.post, "/auth/v1/recover")
    static let user = Route(.get, "/auth/v1/user")
    static let updateUser = Route(.put, "/auth/v1/user")
    static let logout = Route(.post, "/auth/v1/logout")
    static let enroll = Route(.post, "/auth/v1/factors")
    static let challenge = Route(.post, "/auth/v1/factors/{factor_id}/challenge")
    static let verifyFactor = Route(.post, "/auth/v1/factors/{factor_id}/verify")
    static let unenroll = Route(.delete, "/auth/v1/factors/{factor_id}")

    /// With the service role key only.
    static let adminUsers = Route(.get, "/auth/v1/admin/users")
    static let adminCreateUser = Route(.post, "/auth/v1/admin/users")
    static let adminUser = Route(.get, "/auth/v1/admin/users/{id}")
    static let adminUpdateUser = Route(.put, "/auth/v1/admin/users/{id}")
    static let adminDeleteUser = Route(.delete, "/auth/v1/admin/users/{id}")
    static let adminFactors = Route(.get, "/auth/v1/admin/users/{id}/factors")
    static let adminDeleteFactor = Route(.delete, "/auth/v1/admin/users/{id}/factors/{factor_id}")
    static let invite = Route(.post, "/auth/v1/invite")
    static let generateLink = Route(.post, "/auth/v1/admin/generate_link")
    /// The OpenID provider's clients (docs/oidc.md), in GoTrue's OAuth server's shapes.
    static let oauthClients = Route(.get, "/auth/v1/admin/oauth/clients")
    static let createOAuthClient = Route(.post, "/auth/v1/admin/oauth/clients")
    static let oauthClient = Route(.get, "/auth/v1/admin/oauth/clients/{client_id}")
    static let deleteOAuthClient = Route(.delete, "/auth/v1/admin/oauth/clients/{client_id}")
    static let updateOAuthClient = Route(.put, "/auth/v1/admin/oauth/clients/{client_id}")
    static let regenerateSecret = Route(.post, "/auth/v1/admin/oauth/clients/{client_id}/regenerate_secret")

    /// Any other path under `/auth/v1`, for any method: GoTrue's error shape, 404 `not_found`.
    /// Not operations of the API, so not in `all`.
    static let unknown = [HTTPRequest.Method.get, .post, .put, .patch, .delete].map { Route($0, "/auth/v1/**") }

    /// The routes an anon key reaches (and `verifyLink`, which needs none).
    static let anon = [
        verifyLink, settings, jwks, signup, token, otp, resend, reauthenticate, reauthenticatePost, verify, recover, user, updateUser,
        logout, enroll, challenge, verifyFactor, unenroll,
    ]
    static let admin = [
        adminUsers, adminCreateUser, adminUser, adminUpdateUser, adminDeleteUser, adminFactors, adminDeleteFactor, invite, generateLink,
        oauthClients, createOAuthClient, oauthClient, updateOAuthClient, deleteOAuthClient, regenerateSecret,
    ]
    static let all = anon + admin
}
