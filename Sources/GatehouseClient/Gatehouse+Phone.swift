import Foundation
import GatehouseCore
import GatehouseWire

extension Gatehouse {
    // MARK: Signing in with a phone number

    /// `POST /v1/auth/phone/code`: texts a 6-digit code to sign in (or up, where the preset
    /// allows it) with the number. The server answers the same whether or not the number has an
    /// account.
    ///
    /// - Parameters:
    ///   - phone: The number as the person typed it (`(415) 555-0100`, read in the preset's
    ///     default region) or in E.164 (`+14155550100`).
    ///   - captchaToken: The CAPTCHA's token, once the server asked for one (400
    ///     `captcha_required` after repeated sends from this address, where one is configured).
    ///
    /// Throws ``GatehouseClientError``: 400 `invalid_phone` (not a number, an impossible length,
    /// or a country the preset does not text; `details.reason` says which), 429 `rate_limited`
    /// with `retryAfter` (one code a minute per number, and the other sending limits), 400
    /// `captcha_required`, 403 `method_disabled`; each with the preset's words.
    public func sendPhoneCode(phone: String, captchaToken: String? = nil) async throws(GatehouseClientError) {
        try await call(Endpoints.sendPhoneCode, body: PhoneCodeRequest(phone: phone, captchaToken: captchaToken), auth: .none)
    }

    /// `POST /v1/auth/phone/verify`: the code texted by ``sendPhoneCode(phone:captchaToken:)``,
    /// typed in the app. Signs in, or signs up where the preset allows it (`created` says so).
    ///
    /// An account with a second factor answers its challenge instead: this throws
    /// `second_factor_required` and the state becomes `.secondFactorRequired`, as after any
    /// other first factor (``completeSignIn(factorID:code:)``, or a ``SecondFactorModel``).
    ///
    /// Throws ``GatehouseClientError``: 400 `invalid_code` for any wrong, used, expired or dead
    /// code, with nothing more (by number alone the server does not say whether a code is live or
    /// how many tries it has left; after a few, send a new one), 429 `too_many_attempts` with
    /// `retryAfter`, 400 `invalid_phone`.
    @discardableResult
    public func verifyPhoneCode(phone: String, code: String) async throws(GatehouseClientError) -> SignInResult {
        let answer = try await call(Endpoints.verifyPhoneCode, body: PhoneVerifyRequest(phone: phone, code: code), auth: .none)
        let response = try session(of: answer, provider: .phone)
        try begin(response.session, user: response.user, provider: .phone)
        return SignInResult(user: response.user, created: response.created)
    }

    // MARK: The account's phone number

    /// `POST /v1/me/phone`: texts a code to a number to add to the signed-in account, or to
    /// change its number to; ``verifyPhone(code:)`` then proves it. Nothing changes on the
    /// account until then.
    ///
    /// Throws ``GatehouseClientError``: 403 `reauthentication_required` when the last sign-in is
    /// older than five minutes, 403 `mfa_required` when the account has a second factor and
    /// this session has not proved it (a ``StepUpPrompt`` answers both), 400 `invalid_phone`,
    /// 429 `rate_limited` with `retryAfter`; `not_signed_in` without a session. A number another
    /// account has is texted all the same: ``verifyPhone(code:)`` says so once its code is proved.
    public func addPhone(_ phone: String, captchaToken: String? = nil) async throws(GatehouseClientError) {
        try await call(Endpoints.addPhone, body: PhoneChangeRequest(phone: phone, captchaToken: captchaToken), auth: .required)
    }

    /// `POST /v1/me/phone/verify`: the code the new number received. The number becomes the
    /// account's, verified, and a way to sign in; the updated user is kept (`userUpdated`).
    ///
    /// Throws ``GatehouseClientError``: 400 `invalid_code` (with `details.attempts_left`),
    /// 400 `code_exhausted`, 409 `phone_in_use` (the number proved is another account's), and the refusals of ``addPhone(_:captchaToken:)`` for a
    /// sign-in that is no longer recent.
    @discardableResult
    public func verifyPhone(code: String) async throws(GatehouseClientError) -> UserPayload {
        let response = try await call(Endpoints.verifyPhone, body: PhoneCodeProof(code: code), auth: .required)
        updateUser(response.user)
        return response.user
    }

    /// `DELETE /v1/me/phone`: the account's number goes, and with it the way to sign in by SMS.
    /// The user is read again afterwards.
    ///
    /// Throws ``GatehouseClientError``: 409 `last_identity` when the number is the account's only
    /// way in (the message says so in the preset's words), and the refusals of
    /// ``addPhone(_:captchaToken:)`` for a sign-in that is no longer recent.
    public func removePhone() async throws(GatehouseClientError) {
        try await call(Endpoints.removePhone, auth: .required)
        _ = try? await refreshUser()
    }

    // MARK: The preset's methods

    /// The sign-in methods the preset enables (`/v1/config`): loaded now, or else the last ones
    /// known (offline); empty when no configuration was ever loaded.
    func enabledMethods() async -> [String] {
        let configuration = (try? await loadConfiguration()) ?? configurationCache
        return configuration?.signInMethods ?? []
    }
}
