import GatehouseCore
import GatehouseWire

/// The errors of emailed links and codes, in the preset's words.
extension GatehouseError {
    static func tokenInvalid(_ preset: Preset) -> GatehouseError {
        GatehouseError(
            status: 400, code: .tokenInvalid,
            message: preset.text("error.token_invalid", "This link is not valid or has already been used. Please request a new one."))
    }

    static func tokenExpired(_ preset: Preset) -> GatehouseError {
        GatehouseError(status: 400, code: .tokenExpired, message: preset.text("error.token_expired", "This link has expired. Please request a new one."))
    }

    static func codeExhausted(_ preset: Preset) -> GatehouseError {
        GatehouseError(
            status: 400, code: .codeExhausted,
            message: preset.text("error.code_exhausted", "Too many wrong codes. Please request a new sign-in link."))
    }

    static func usedResetLink(_ preset: Preset) -> GatehouseError {
        GatehouseError(
            status: 400, code: .tokenInvalid,
            message: preset.text("error.reset_token_used", "This password reset link has already been used. Please request a new one."))
    }
}
