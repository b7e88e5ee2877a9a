import GatehouseCore
import GatehouseWire

/// The account errors several use cases answer, in the preset's words.
extension GatehouseError {
    static func invalidEmail(_ preset: Preset) -> GatehouseError {
        GatehouseError(status: 400, code: .invalidEmail, message: preset.text("error.invalid_email", "Enter a valid email address."))
    }

    static func accountDisabled(_ preset: Preset) -> GatehouseError {
        GatehouseError(status: 403, code: .accountDisabled, message: preset.text("error.account_disabled", "This account has been disabled."))
    }

    static func emailInUse(_ preset: Preset) -> GatehouseError {
        GatehouseError(status: 409, code: .emailInUse, message: preset.text("error.email_in_use", "This email is already in use. Log in instead."))
    }

    static func invalidCredentials(_ preset: Preset) -> GatehouseError {
        GatehouseError(
            status: 401, code: .invalidCredentials, message: preset.text("error.invalid_credentials", "Incorrect email or password."))
    }

    static func rateLimited(_ preset: Preset, retryAfter wait: Int) -> GatehouseError {
        GatehouseError(
            status: 429, code: .rateLimited,
            message: preset.text("error.rate_limited", "Too many requests. Please wait a moment and try again."), retryAfter: wait)
    }
}
