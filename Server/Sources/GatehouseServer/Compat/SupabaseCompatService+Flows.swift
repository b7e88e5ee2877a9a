import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The parts of `/auth/v1` that go through a browser or a second step: following a link
/// (`GET /verify`, implicit or PKCE), the PKCE grant, resending a confirmation, and GoTrue's
/// MFA factor routes on Gatehouse's second factors.
extension SupabaseCompatService {
    /// Where `GET /verify` sends the browser: the `redirect_to` the redirect policy allows, or the site.
    func redirectTarget(_ requested: String?) -> String {
        requested.flatMap(redirects.check) ?? siteURL
    }

    /// `GET /verify?token=&type=&redirect_to=`: the link's token (the one in Gatehouse's mail)
    /// redeemed as `POST /verify` would; the browser goes to the target with the session in the
    /// fragment (GoTrue's implicit flow), or with `?code=` when the address's request carried a
    /// PKCE challenge (the app then calls `POST /token?grant_type=pkce`). A refusal goes there
    /// too, as `#error=…&error_code=…&error_description=…`.
    func verifyLink(token: String, type: String, redirectTo: String?, client: ClientInfo) async throws -> String {
        let target = redirectTarget(redirectTo)
        // What `POST /verify` calls it, and which requests' PKCE challenges apply.
        let (verifyType, purpose): (String, EmailTokenPurpose)
        switch type {
        case "magiclink", "email", "invite": (verifyType, purpose) = ("magiclink", .magicLink)
        case "signup", "email_change": (verifyType, purpose) = (type, .magicLink)
        case "recovery": (verifyType, purpose) = ("recovery", .passwordReset)
        default: throw GatehouseError.invalidRequest("The type must be magiclink, email, invite, signup, email_change or recovery.")
        }
        let session = try await verify(type: verifyType, token: nil, tokenHash: token, email: nil, client: client)
        let normalized = EmailAddress.normalize(session.user.email)
        if !normalized.isEmpty, let pkce = try await store.takePKCERequest(normalizedEmail: normalized, purpose: purpose, now: clock.now) {
            let code = try codes.authCode(refreshToken: session.refreshToken, challenge: pkce.challenge, method: pkce.method)
            return Self.appending(query: [("code", code)], to: target)
        }
        return Self.appending(
            fragment: [
                ("access_token", session.accessToken), ("expires_at", String(session.expiresAt)), ("expires_in", String(session.expiresIn)),
                ("refresh_token", session.refreshToken), ("token_type", "bearer"), ("type", type),
            ], to: target)
    }

    /// Where a refused `GET /verify` sends the browser.
    func verifyFailure(_ error: GoTrueError, redirectTo: String?) -> String {
        Self.appending(
            fragment: [("error", error.status == 500 ? "server_error" : "access_denied"), ("error_code", error.code), ("error_description", error.message)],
            to: redirectTarget(redirectTo))
    }

    /// `POST /token?grant_type=pkce`: the auth code `GET /verify` handed out, with the verifier
    /// whose SHA-256 is its challenge, for the session the link opened (its refresh rotates
    /// here, so the code works once).
    func pkceGrant(authCode: String, verifier: String, client: ClientInfo) async throws -> GoTrueSession {
        let refresh = try codes.refreshToken(authCode: authCode, verifier: verifier)
        do {
            return try await refreshGrant(refresh, client: client)
        } catch let error as GatehouseError where error.code == .invalidRefreshToken {
            throw GoTrueCodes.flowInvalid
        }
    }

    func savePKCE(_ pkce: (challenge: String, method: String)?, email: String, purpose: EmailTokenPurpose) async throws {
        guard let pkce, EmailAddress.isValid(email) else { return }
        try await store.savePKCERequest(
            normalizedEmail: EmailAddress.normalize(email), purpose: purpose, challenge: pkce.challenge, method: pkce.method,
            expiresAt: clock.now.addingTimeInterval(3_600))
    }

    /// `POST /resend` with `type: signup`: the verification mail again, under the preset's resend
    /// limits. The answer is the same whether or not the address has an unverified account.
    func resend(type: String, email: String) async throws {
        guard type == "signup" || type == "email_change" else {
            throw GatehouseError.invalidRequest("The type must be signup, email_change, sms or phone_change.")
        }
        guard EmailAddress.isValid(email) else { throw GatehouseError(status: 400, code: .invalidEmail, message: "Unable to validate email address: invalid format") }
        guard let user = try await store.user(normalizedEmail: EmailAddress.normalize(email)), !user.emailVerified, !user.isDisabled else { return }
        do {
            try await verification.resend(user)
        } catch let error as GatehouseError where error.code == .rateLimited {
            // Said only about an existing, unverified account; under strict enumeration protection
            // that would tell it exists.
            guard preset.enumerationProtection == .helpful else { return }
            throw error
        }
    }

    /// `POST /resend` with `sms` (a phone sign-up's code) or `phone_change` (a number change's
    /// code), and `phone`: the code again, under every SMS pumping defence (docs/phone.md).
    func resendSMS(type: String, phone number: String, captchaToken: String?, client: ClientInfo) async throws {
        switch type {
        case "sms": try await phone.resendSignUpCode(phone: number, captchaToken: captchaToken, client: client)
        case "phone_change": try await phone.resendChangeCode(phone: number, captchaToken: captchaToken, client: client)
        default: throw GatehouseError.invalidRequest("With a phone number the type must be sms or phone_change.")
        }
    }

    /// `GET /reauthenticate`: a 6-digit code to the account's address (the magic-link mail, whose
    /// code is also what the native API asks before a deletion); `PUT /user` with `password` and
    /// that code as `nonce` then sets a password without the old one.
    func reauthenticate(_ signedIn: SignedIn, client: ClientInfo) async throws {
        guard let email = signedIn.user.email else {
            throw GatehouseError.invalidRequest("This account has no email address to send a code to.")
        }
        try await magicLinks.request(email: email, redirectTo: nil, client: client)
    }

    // MARK: Second factors

    /// `POST /factors`: an unverified TOTP factor (Gatehouse's enrolment: its re-sign-in window
    /// and cap apply).
    func enroll(_ signedIn: SignedIn, _ body: GoTrueEnrollRequest, client: ClientInfo) async throws -> GoTrueEnrollment {
        guard body.factorType == MFAFactor.totp else {
            throw GatehouseError.invalidRequest("The factor_type must be totp (phone and WebAuthn factors are not served here).")
        }
        return GoTrueEnrollment(try await mfa.enroll(signedIn, MFAEnrollRequest(type: MFAFactor.totp, name: body.friendlyName), client: client))
    }

    /// `POST /factors/{id}/challenge`: a challenge id bound to the factor and this session, for
    /// five minutes.
    func challenge(_ signedIn: SignedIn, factor id: String) async throws -> GoTrueChallenge {
        let factor = try await factor(id, of: signedIn.user)
        let challenge = try codes.challenge(factor: factor.id, session: signedIn.session.id)
        return GoTrueChallenge(id: challenge.id, type: factor.type, expiresAt: challenge.expiresAt.unixSeconds)
    }

    /// `POST /factors/{id}/verify`: an unverified factor is confirmed by the code (the account's
    /// first factor also makes its recovery codes, which GoTrue has no place for: they are in
    /// the native `POST /v1/mfa/recovery-codes`); a verified one steps this session up. Either
    /// way the session is now `aal2` and comes back with new tokens.
    func verifyFactor(_ signedIn: SignedIn, factor id: String, _ body: GoTrueFactorVerifyRequest, client: ClientInfo) async throws -> GoTrueSession {
        let factor = try await factor(id, of: signedIn.user)
        try codes.checkChallenge(body.challengeID, factor: factor.id, session: signedIn.session.id)
        let payload: SessionPayload
        if factor.isConfirmed {
            payload = try await mfa.verify(
                MFAVerifyRequest(challengeID: nil, factorID: id, code: body.code, recoveryCode: nil), signedIn: signedIn, client: client
            ).session
        } else {
            guard let session = try await mfa.confirm(signedIn, id: id, code: body.code, reissue: true, client: client).session else {
                throw GatehouseError.internalError(nil)
            }
            payload = session
        }
        return try await self.session(payload)
    }

    /// `DELETE /factors/{id}`: Gatehouse's removal (a session that proved a factor, when the
    /// account has a confirmed one).
    func unenroll(_ signedIn: SignedIn, factor id: String, client: ClientInfo) async throws -> [String: String] {
        let factor = try await factor(id, of: signedIn.user)
        try await mfa.delete(signedIn, id: id, client: client)
        return ["id": factor.id.uuidString.lowercased()]
    }

    private func factor(_ id: String, of user: User) async throws -> MFAFactor {
        guard let uuid = UUID(uuidString: id), let factor = try await store.mfaFactors(of: user.id).first(where: { $0.id == uuid }) else {
            throw GoTrueError(status: 404, .mfaFactorNotFound, "Factor not found")
        }
        return factor
    }

    // MARK: URLs

    static func appending(query: [(String, String)], to target: String) -> String {
        let (base, fragment) = split(target, at: "#")
        let separator = base.contains("?") ? "&" : "?"
        return base + separator + encoded(query) + (fragment.map { "#" + $0 } ?? "")
    }

    static func appending(fragment: [(String, String)], to target: String) -> String {
        split(target, at: "#").0 + "#" + encoded(fragment)
    }

    private static func split(_ text: String, at mark: Character) -> (String, String?) {
        guard let index = text.firstIndex(of: mark) else { return (text, nil) }
        return (String(text[..<index]), String(text[text.index(after: index)...]))
    }

    private static func encoded(_ pairs: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return pairs.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
    }
}
