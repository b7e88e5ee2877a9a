import Foundation
import GatehouseCore
import GatehouseWire

/// What every sign-in passes before its credentials are looked at: the preset's switch for the
/// method, and a CAPTCHA once an address has failed too often.
struct SignInGate: Sendable {
    let preset: Preset
    let throttle: Throttle
    /// Set when `GATEHOUSE_CAPTCHA_VERIFY_URL` is; the preset decides when it is asked for.
    let captcha: CaptchaVerifier?

    /// 403 `method_disabled` when the preset turns the method off.
    func requireMethod(_ enabled: Bool) throws {
        guard enabled else {
            throw GatehouseError(status: 403, code: .methodDisabled, message: "This sign-in method is not available for this app.")
        }
    }

    /// Past the preset's threshold of failed logins from the client's address this hour, a
    /// valid CAPTCHA token is required: 400 `captcha_required` without one or with one the
    /// provider rejects, 503 when the provider cannot be asked (closed, not open). The provider
    /// is told the address only as far as the preset's privacy setting keeps it.
    func requireCaptchaIfNeeded(_ client: ClientInfo, token: String?) async throws {
        guard let threshold = preset.throttling.captchaAfterIPFailures, captcha != nil, client.ip != nil else { return }
        guard try await throttle.ipFailures(client) >= threshold else { return }
        try await requireCaptcha(client, token: token)
    }

    /// Whether a CAPTCHA can be asked for at all (`GATEHOUSE_CAPTCHA_VERIFY_URL` is set).
    var asksCaptcha: Bool { captcha != nil }

    /// A valid CAPTCHA token, where one is configured: the check every threshold that asks for
    /// one ends in (failed logins, repeated SMS sends).
    func requireCaptcha(_ client: ClientInfo, token: String?) async throws {
        guard let captcha else { return }
        let ip = client.stored(under: preset.privacy).ip
        guard let token, !token.isEmpty, token.utf8.count <= 4_096 else {
            throw GatehouseError(
                status: 400, code: .captchaRequired,
                message: preset.text("error.captcha_required", "Please complete the security check to continue."))
        }
        switch await captcha.verify(token: token, ip: ip) {
        case .passed:
            return
        case .failed:
            throw GatehouseError(
                status: 400, code: .captchaRequired,
                message: preset.text("error.captcha_failed", "The security check did not pass. Please try it again."))
        case .unavailable:
            throw GatehouseError(
                status: 503, code: .serviceUnavailable, message: "The security check cannot be done right now. Please try again shortly.")
        }
    }
}
