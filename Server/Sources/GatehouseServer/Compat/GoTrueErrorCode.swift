import Logging
import GatehouseCore
import GatehouseWire

/// The `error_code`s `/auth/v1` answers, as GoTrue names them (its `errorcodes.go`): the ones
/// Gatehouse's own refusals map to (`GoTrueError.init(_:)`), and the adapter's own refusals
/// (a PKCE flow's, an MFA challenge's, a factor's). Closed: this adapter speaks these and no others.
enum GoTrueErrorCode: String, CaseIterable, Sendable {
    case invalidCredentials = "invalid_credentials"
    case userAlreadyExists = "user_already_exists"
    case weakPassword = "weak_password"
    case emailAddressInvalid = "email_address_invalid"
    case overRequestRateLimit = "over_request_rate_limit"
    case refreshTokenNotFound = "refresh_token_not_found"
    case sessionNotFound = "session_not_found"
    case noAuthorization = "no_authorization"
    case badJWT = "bad_jwt"
    case userBanned = "user_banned"
    case providerDisabled = "provider_disabled"
    case otpExpired = "otp_expired"
    case badOAuthCallback = "bad_oauth_callback"
    case validationFailed = "validation_failed"
    case insufficientAAL = "insufficient_aal"
    case reauthenticationNeeded = "reauthentication_needed"
    case emailExists = "email_exists"
    case phoneExists = "phone_exists"
    case captchaFailed = "captcha_failed"
    case notAdmin = "not_admin"
    case userNotFound = "user_not_found"
    case requestEntityTooLarge = "request_entity_too_large"
    case unexpectedFailure = "unexpected_failure"
    case mfaVerificationFailed = "mfa_verification_failed"
    case tooManyEnrolledMFAFactors = "too_many_enrolled_mfa_factors"
    // The adapter's own refusals, which no Gatehouse code maps to.
    case flowStateNotFound = "flow_state_not_found"
    case badCodeVerifier = "bad_code_verifier"
    case mfaChallengeExpired = "mfa_challenge_expired"
    case mfaFactorNotFound = "mfa_factor_not_found"
    case oauthClientNotFound = "oauth_client_not_found"
    /// A path `/auth/v1` does not serve (GoTrue's router answers these in plain text; here in
    /// its error shape, so a client reads it).
    case notFound = "not_found"

    /// Gatehouse's code → GoTrue's, with GoTrue's status for it (nil keeps Gatehouse's). A code
    /// not here goes out as Gatehouse's own.
    static let mapping: [ErrorCode: (code: GoTrueErrorCode, status: Int?)] = [
        .invalidCredentials: (.invalidCredentials, 400), .emailInUse: (.userAlreadyExists, 422),
        .weakPassword: (.weakPassword, 422), .invalidEmail: (.emailAddressInvalid, 400),
        .rateLimited: (.overRequestRateLimit, 429), .tooManyAttempts: (.overRequestRateLimit, 429),
        .invalidRefreshToken: (.refreshTokenNotFound, 400), .sessionRevoked: (.sessionNotFound, 403),
        .unauthorized: (.noAuthorization, 401), .tokenExpired: (.badJWT, 403), .accountDisabled: (.userBanned, 403),
        .methodDisabled: (.providerDisabled, 403), .tokenInvalid: (.otpExpired, 403), .codeExhausted: (.otpExpired, 403),
        .resetTokenExpired: (.otpExpired, 403), .invalidIDToken: (.badOAuthCallback, 400),
        .invalidRequest: (.validationFailed, 400), .mfaRequired: (.insufficientAAL, 403),
        .reauthenticationRequired: (.reauthenticationNeeded, 400), .identityInUse: (.emailExists, 422),
        .captchaRequired: (.captchaFailed, 400), .forbidden: (.notAdmin, 403), .emailNotFound: (.userNotFound, 404),
        .notFound: (.userNotFound, 404), .payloadTooLarge: (.requestEntityTooLarge, 413),
        .internalError: (.unexpectedFailure, 500), .invalidDisplayName: (.validationFailed, 422),
        .invalidHandle: (.validationFailed, 422), .invalidAvatarURL: (.validationFailed, 422),
        .invalidCode: (.mfaVerificationFailed, 422), .tooManyFactors: (.tooManyEnrolledMFAFactors, 422),
        .invalidPhone: (.validationFailed, 400), .phoneInUse: (.phoneExists, 422),
    ]
}

/// A refusal in GoTrue's terms: a Gatehouse error mapped (`GoTrueErrorCode.mapping`: GoTrue's
/// `error_code` where it has one for the same refusal, and GoTrue's status for it; Gatehouse's
/// own code otherwise), or one of the adapter's own, thrown as it is.
struct GoTrueError: Error, Sendable {
    var status: Int
    var code: String
    var message: String
    var reasons: [String]?
    var retryAfter: Int?

    /// One of the adapter's own refusals.
    init(status: Int, _ code: GoTrueErrorCode, _ message: String) {
        (self.status, self.code, self.message) = (status, code.rawValue, message)
    }

    /// The API version whose error shape this server speaks when asked.
    static let version = "2024-01-01"

    static func isVersioned(_ header: String) -> Bool {
        // Dates compare as text in this form; anything else is GoTrue's initial version.
        header.count == 10 && header.allSatisfy { $0.isNumber || $0 == "-" } && header >= version
    }

    init(_ error: GatehouseError) {
        // A link or code that expired is `token_expired` at 400 in Gatehouse (401 is an access
        // token's): GoTrue answers it as it answers an invalid link.
        let linkExpired = error.code == .tokenExpired && error.status == 400
        let mapped = GoTrueErrorCode.mapping[linkExpired ? .tokenInvalid : error.code]
        code = mapped?.code.rawValue ?? error.code.rawValue
        status = mapped?.status ?? error.status
        message = error.message
        reasons = error.reasons
        retryAfter = error.retryAfter
    }

    /// Any error as `/auth/v1` answers it: the adapter's own as thrown, anything else mapped
    /// from the Gatehouse error it is (logged as the JSON API logs it).
    init(_ error: any Error, errors: ErrorMiddleware, logger: Logger) {
        if let refusal = error as? GoTrueError {
            self = refusal
        } else {
            self.init(errors.mapAndLog(error, logger: logger))
        }
    }

    private struct Versioned: Encodable {
        var code: String
        var msg: String
        var weakPassword: Reasons?
        enum CodingKeys: String, CodingKey { case code, msg, weakPassword = "weak_password" }
    }

    private struct Legacy: Encodable {
        var code: Int
        var errorCode: String
        var msg: String
        var weakPassword: Reasons?
        enum CodingKeys: String, CodingKey { case code, msg, errorCode = "error_code", weakPassword = "weak_password" }
    }

    private struct Reasons: Encodable {
        var reasons: [String]
    }

    private var weakPassword: Reasons? { code == "weak_password" ? Reasons(reasons: reasons ?? []) : nil }

    var versionedBody: some Encodable { Versioned(code: code, msg: message, weakPassword: weakPassword) }
    var legacyBody: some Encodable { Legacy(code: status, errorCode: code, msg: message, weakPassword: weakPassword) }
}
