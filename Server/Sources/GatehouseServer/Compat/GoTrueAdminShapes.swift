import Foundation
import GatehouseCore
import GatehouseWire

// The bodies of `/auth/v1`'s OAuth client routes in GoTrue's own shape (its OAuth 2.1 server's
// admin API), made from the OpenID provider's clients (docs/oidc.md).

/// A client as GoTrue's admin API shows it.
struct GoTrueOAuthClient: Encodable, Sendable {
    var clientID: String
    /// In the answers to a registration and a new secret only.
    var clientSecret: String?
    var clientName: String
    var clientType: String
    var tokenEndpointAuthMethod: String
    var registrationType: String
    var redirectURIs: [String]
    var grantTypes: [String]
    var responseTypes: [String]
    var scope: String
    var createdAt: String
    var updatedAt: String

    enum CodingKeys: String, CodingKey {
        case scope
        case clientID = "client_id", clientSecret = "client_secret", clientName = "client_name", clientType = "client_type"
        case tokenEndpointAuthMethod = "token_endpoint_auth_method", registrationType = "registration_type"
        case redirectURIs = "redirect_uris", grantTypes = "grant_types", responseTypes = "response_types"
        case createdAt = "created_at", updatedAt = "updated_at"
    }

    init(_ client: OAuthClientPayload) {
        clientID = client.clientID
        clientSecret = client.clientSecret
        clientName = client.name
        clientType = client.isPublic ? "public" : "confidential"
        // Gatehouse takes client_secret_post too; GoTrue's field names the one it registers.
        tokenEndpointAuthMethod = client.isPublic ? "none" : "client_secret_basic"
        registrationType = "manual"
        redirectURIs = client.redirectURIs
        let signsPeopleIn = client.scopes.contains { OAuthScope(rawValue: $0) != nil }
        grantTypes =
            (signsPeopleIn ? ["authorization_code", "refresh_token"] : [])
            + (client.scopes.contains(where: OAuthScope.isAPIScope) ? ["client_credentials"] : [])
        responseTypes = signsPeopleIn ? ["code"] : []
        scope = client.scopes.joined(separator: " ")
        createdAt = client.createdAt
        updatedAt = client.createdAt
    }
}

/// `GET /admin/oauth/clients`.
struct GoTrueOAuthClientList: Encodable, Sendable {
    var clients: [GoTrueOAuthClient]
    var aud: String
}

/// `POST /admin/oauth/clients`.
struct GoTrueOAuthClientRequest: Decodable, Sendable {
    var clientName: String?
    var redirectURIs: [String]?
    var scope: String?
    var clientType: String?
    var tokenEndpointAuthMethod: String?

    enum CodingKeys: String, CodingKey {
        case scope
        case clientName = "client_name", redirectURIs = "redirect_uris", clientType = "client_type"
        case tokenEndpointAuthMethod = "token_endpoint_auth_method"
    }
}

/// `POST /admin/generate_link`.
struct GoTrueGenerateLink: Decodable, Sendable {
    var type: String
    var email: String
    var password: String?
    var newEmail: String?
    var data: [String: JSONValue]?
    enum CodingKeys: String, CodingKey {
        case type, email, password, data
        case newEmail = "new_email"
    }
}

/// Its answer: GoTrue's user with the link's properties beside its fields.
struct GoTrueGeneratedLink: Encodable, Sendable {
    var user: GoTrueUser
    var actionLink: String
    var emailOTP: String
    var hashedToken: String
    var verificationType: String
    var redirectTo: String

    enum CodingKeys: String, CodingKey {
        case actionLink = "action_link", emailOTP = "email_otp", hashedToken = "hashed_token"
        case verificationType = "verification_type", redirectTo = "redirect_to"
    }

    func encode(to encoder: any Encoder) throws {
        try user.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(actionLink, forKey: .actionLink)
        try container.encode(emailOTP, forKey: .emailOTP)
        try container.encode(hashedToken, forKey: .hashedToken)
        try container.encode(verificationType, forKey: .verificationType)
        try container.encode(redirectTo, forKey: .redirectTo)
    }
}
