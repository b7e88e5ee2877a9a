import Foundation
import GatehouseCore
import GatehouseWire

// The request bodies of `/auth/v1`, in GoTrue's own field names.

/// `POST /signup`.
struct GoTrueSignup: Decodable, Sendable {
    var email: String?
    var phone: String?
    var password: String?
    var data: [String: JSONValue]?
    var security: GoTrueSecurity?
    var captchaToken: String? { security?.captchaToken }

    enum CodingKeys: String, CodingKey {
        case email, phone, password, data
        case security = "gotrue_meta_security"
    }
}

/// GoTrue's CAPTCHA carrier.
struct GoTrueSecurity: Decodable, Sendable {
    var captchaToken: String?
    enum CodingKeys: String, CodingKey { case captchaToken = "captcha_token" }
}

/// `POST /token`'s body for each grant.
struct GoTrueTokenRequest: Decodable, Sendable {
    var email: String?
    var phone: String?
    var password: String?
    var refreshToken: String?
    var provider: String?
    var idToken: String?
    var nonce: String?
    var authCode: String?
    var codeVerifier: String?
    var security: GoTrueSecurity?

    enum CodingKeys: String, CodingKey {
        case email, phone, password, provider, nonce
        case refreshToken = "refresh_token", idToken = "id_token", security = "gotrue_meta_security"
        case authCode = "auth_code", codeVerifier = "code_verifier"
    }
}

/// `PUT /user`.
struct GoTrueUserUpdate: Decodable, Sendable {
    var email: String?
    var phone: String?
    var password: String?
    var currentPassword: String?
    var nonce: String?
    var data: [String: JSONValue]?

    enum CodingKeys: String, CodingKey {
        case email, phone, password, data, nonce
        case currentPassword = "current_password"
    }
}

/// `POST /otp`, `POST /recover`, `POST /resend`.
struct GoTrueEmailRequest: Decodable, Sendable {
    var email: String?
    /// `/otp`: a number for an SMS code instead of an address.
    var phone: String?
    /// `/otp` with `phone`: `sms` (GoTrue's `whatsapp` is not offered).
    var channel: String?
    var type: String?
    var security: GoTrueSecurity?
    var codeChallenge: String?
    var codeChallengeMethod: String?
    /// `/otp`: false (supabase-swift's `shouldCreateUser: false`) mails only an address that
    /// has an account.
    var createUser: Bool?
    enum CodingKeys: String, CodingKey {
        case email, phone, channel, type
        case security = "gotrue_meta_security", codeChallenge = "code_challenge", codeChallengeMethod = "code_challenge_method"
        case createUser = "create_user"
    }

    /// The PKCE challenge sent, checked; nil when none was.
    func pkce() throws -> (challenge: String, method: String)? {
        guard let codeChallenge else { return nil }
        guard GoTrueCodes.isPKCEValue(codeChallenge) else {
            throw GatehouseError.invalidRequest("code_challenge must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_', '~'.")
        }
        return (codeChallenge, try GoTrueCodes.method(codeChallengeMethod))
    }
}

/// `POST /factors`.
struct GoTrueEnrollRequest: Decodable, Sendable {
    var factorType: String
    var friendlyName: String?
    enum CodingKeys: String, CodingKey {
        case factorType = "factor_type", friendlyName = "friendly_name"
    }
}

/// `POST /factors/{id}/verify`.
struct GoTrueFactorVerifyRequest: Decodable, Sendable {
    var challengeID: String
    var code: String
    enum CodingKeys: String, CodingKey {
        case challengeID = "challenge_id", code
    }
}

/// `POST /verify`.
struct GoTrueVerifyRequest: Decodable, Sendable {
    var type: String
    var token: String?
    var tokenHash: String?
    var email: String?
    var phone: String?
    enum CodingKeys: String, CodingKey {
        case type, token, email, phone
        case tokenHash = "token_hash"
    }
}

/// `POST` and `PUT /admin/users…`.
struct GoTrueAdminUser: Decodable, Sendable {
    var email: String?
    var password: String?
    var passwordHash: String?
    var emailConfirm: Bool?
    var userMetadata: [String: JSONValue]?
    var appMetadata: [String: JSONValue]?
    var banDuration: String?

    enum CodingKeys: String, CodingKey {
        case email, password
        case passwordHash = "password_hash", emailConfirm = "email_confirm", userMetadata = "user_metadata", banDuration = "ban_duration"
        case appMetadata = "app_metadata"
    }
}

/// `POST /invite`.
struct GoTrueInvite: Decodable, Sendable {
    var email: String
    var data: [String: JSONValue]?
}
