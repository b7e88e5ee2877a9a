/// A stable, machine-readable error code.
///
/// Codes are only ever added to, never renamed; clients must treat unknown codes as
/// generic failures, which is why this is an open struct and not a closed enum.
public struct ErrorCode: GatehouseValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

extension ErrorCode {
    // Generic request handling.
    public static let invalidRequest: ErrorCode = "invalid_request"
    public static let payloadTooLarge: ErrorCode = "payload_too_large"
    /// The request's body did not all arrive within `GATEHOUSE_HTTP_BODY_TIMEOUT_SECONDS`.
    public static let requestTimeout: ErrorCode = "request_timeout"
    public static let notFound: ErrorCode = "not_found"
    public static let methodNotAllowed: ErrorCode = "method_not_allowed"
    public static let internalError: ErrorCode = "internal_error"
    public static let serviceUnavailable: ErrorCode = "service_unavailable"
    public static let unsupportedMediaType: ErrorCode = "unsupported_media_type"
    public static let methodDisabled: ErrorCode = "method_disabled"
    public static let captchaRequired: ErrorCode = "captcha_required"
    public static let rateLimited: ErrorCode = "rate_limited"
    /// An idempotency key sent again for a different request, or for one that can no longer be
    /// repeated.
    public static let idempotencyKeyReused: ErrorCode = "idempotency_key_reused"

    // Authentication.
    public static let unauthorized: ErrorCode = "unauthorized"
    public static let forbidden: ErrorCode = "forbidden"
    public static let tokenExpired: ErrorCode = "token_expired"
    public static let invalidEmail: ErrorCode = "invalid_email"
    public static let weakPassword: ErrorCode = "weak_password"
    public static let emailInUse: ErrorCode = "email_in_use"
    public static let emailNotFound: ErrorCode = "email_not_found"
    public static let invalidCredentials: ErrorCode = "invalid_credentials"
    public static let accountDisabled: ErrorCode = "account_disabled"
    public static let tooManyAttempts: ErrorCode = "too_many_attempts"
    public static let invalidRefreshToken: ErrorCode = "invalid_refresh_token"
    public static let sessionRevoked: ErrorCode = "session_revoked"
    public static let invalidIDToken: ErrorCode = "invalid_id_token"
    public static let linkConfirmationRequired: ErrorCode = "link_confirmation_required"
    public static let providerUnavailable: ErrorCode = "provider_unavailable"
    public static let invalidRedirect: ErrorCode = "invalid_redirect"
    public static let tokenInvalid: ErrorCode = "token_invalid"
    public static let codeExhausted: ErrorCode = "code_exhausted"
    public static let alreadyVerified: ErrorCode = "already_verified"
    public static let resetTokenExpired: ErrorCode = "reset_token_expired"
    public static let identityInUse: ErrorCode = "identity_in_use"
    public static let lastIdentity: ErrorCode = "last_identity"
    public static let reauthenticationRequired: ErrorCode = "reauthentication_required"
    /// The action needs the account's email address verified first.
    public static let verificationRequired: ErrorCode = "verification_required"

    // Account.
    public static let invalidHandle: ErrorCode = "invalid_handle"
    public static let handleTaken: ErrorCode = "handle_taken"
    public static let invalidDisplayName: ErrorCode = "invalid_display_name"
    public static let invalidAvatarURL: ErrorCode = "invalid_avatar_url"
    public static let invalidChoice: ErrorCode = "invalid_choice"

    // Entitlements and purchases.
    public static let unknownAction: ErrorCode = "unknown_action"
    public static let trialAlreadyUsed: ErrorCode = "trial_already_used"
    public static let invalidSignedPayload: ErrorCode = "invalid_signed_payload"
    public static let planRequired: ErrorCode = "plan_required"
    /// A purchase another account owns (its restore hint is under `details`).
    public static let subscriptionInUse: ErrorCode = "subscription_in_use"
    /// A Google Play purchase token Google does not know, of another app or product, or of a
    /// product the preset does not sell.
    public static let invalidPurchase: ErrorCode = "invalid_purchase"

    // Passkeys.
    /// A WebAuthn answer that does not verify (its stable reasons under `reasons`).
    public static let invalidCredential: ErrorCode = "invalid_credential"
    /// A ceremony's challenge that is unknown, expired, used already or of another ceremony.
    public static let challengeInvalid: ErrorCode = "challenge_invalid"
    /// A credential id registered already.
    public static let credentialInUse: ErrorCode = "credential_in_use"

    // Second factors.
    /// A TOTP or recovery code that is wrong, expired or used already.
    public static let invalidCode: ErrorCode = "invalid_code"
    /// The account has the most factors it may have (10).
    public static let tooManyFactors: ErrorCode = "too_many_factors"
    /// The action needs a session that verified a second factor (`aal2`): a step-up.
    public static let mfaRequired: ErrorCode = "mfa_required"

    // Phone numbers.
    /// Not a phone number, or one of an impossible length for its calling code, or of a
    /// country the preset does not send to.
    public static let invalidPhone: ErrorCode = "invalid_phone"
    /// The number belongs to another account.
    public static let phoneInUse: ErrorCode = "phone_in_use"
    /// A webhook whose signature does not check (Stripe's `Stripe-Signature`: 400; a Pub/Sub
    /// push's OIDC token for Google Play: 401).
    public static let invalidSignature: ErrorCode = "invalid_signature"
    /// A Stripe price the preset does not sell.
    public static let unknownPrice: ErrorCode = "unknown_price"
    /// A checkout for an account whose web subscription still runs: it is changed in the billing portal.
    public static let alreadySubscribed: ErrorCode = "already_subscribed"
    /// The app's `BEFORE_USER_CREATED` or `BEFORE_SIGN_IN` hook said no; the message is the hook's own.
    public static let hookRejected: ErrorCode = "hook_rejected"
    /// The app's hook failed or did not answer in time (and does not fail open).
    public static let hookUnavailable: ErrorCode = "hook_unavailable"
}

extension ErrorCode {
    /// Every code of this version with the HTTP status it answers with (docs/errors.md lists
    /// the same): one meaning and one default status per code, as GoTrue's `errorcode.go` has.
    /// Three codes the contract answers two ways, so the server names that status itself:
    /// `token_expired` (401 for an access token, its default; 400 for a link or code),
    /// `invalid_credential` (400 at passkey registration, its default; 401 at sign-in) and
    /// `invalid_signature` (400 for Stripe's header, its default; 401 for Google Play's push).
    public static let defaultStatuses: [ErrorCode: Int] = [
        .invalidRequest: 400, .payloadTooLarge: 413, .requestTimeout: 408, .notFound: 404, .methodNotAllowed: 405, .internalError: 500,
        .serviceUnavailable: 503, .unsupportedMediaType: 415, .methodDisabled: 403, .captchaRequired: 400, .rateLimited: 429,
        .idempotencyKeyReused: 409,
        .unauthorized: 401, .forbidden: 403, .tokenExpired: 401, .invalidEmail: 400, .weakPassword: 422, .emailInUse: 409,
        .emailNotFound: 404, .invalidCredentials: 401, .accountDisabled: 403, .tooManyAttempts: 429, .invalidRefreshToken: 401,
        .sessionRevoked: 401, .invalidIDToken: 401, .linkConfirmationRequired: 409, .providerUnavailable: 503, .invalidRedirect: 400,
        .tokenInvalid: 400, .codeExhausted: 400, .alreadyVerified: 409, .resetTokenExpired: 400, .identityInUse: 409,
        .lastIdentity: 409, .reauthenticationRequired: 403, .verificationRequired: 403,
        .invalidHandle: 422, .handleTaken: 409, .invalidDisplayName: 422, .invalidAvatarURL: 422, .invalidChoice: 422,
        .unknownAction: 400, .trialAlreadyUsed: 409, .invalidSignedPayload: 400, .planRequired: 403, .subscriptionInUse: 409,
        .invalidPurchase: 400,
        .invalidCredential: 400, .challengeInvalid: 400, .credentialInUse: 409,
        .invalidCode: 400, .tooManyFactors: 409, .mfaRequired: 403,
        .invalidPhone: 400, .phoneInUse: 409, .invalidSignature: 400, .unknownPrice: 400,
        .alreadySubscribed: 409, .hookRejected: 403, .hookUnavailable: 503,
    ]

    /// The status this code answers with unless the server names another (only
    /// `token_expired` for a link or code, and `invalid_credential` at passkey sign-in). A code this version does not list (an SDK-local
    /// one, or one a newer server sent) is 500: the server raises only listed codes.
    public var defaultStatus: Int { Self.defaultStatuses[self] ?? 500 }
}
