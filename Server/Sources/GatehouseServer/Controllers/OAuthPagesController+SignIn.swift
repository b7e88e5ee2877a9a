import Foundation
import GatehouseCore
import GatehouseWire
import Hummingbird

// The sign-in page's steps (split from OAuthPagesController.swift): each hands the form to the
// app's own use case for that way in (the same checks as the app's sign-in), then presents.
extension OAuthPagesController {
    /// The step the sign-in form's button names.
    func signInStep(
        _ fields: [String: String], _ authorization: AuthorizationRequest, csrf cookie: String, browser: (User, Session)?, client: ClientInfo
    ) async throws -> Response {
        // The sign-in form's buttons name the step; a form sent without one (Enter in a browser
        // that names no button) is the password's.
        switch fields["step"] ?? (fields["password"] != nil ? "sign_in" : nil) {
        case "sign_in":
            let email = fields["email"] ?? ""
            do {
                switch try await passwords.login(email: email, password: fields["password"] ?? "", client: client) {
                case .signedIn(let response):
                    return try await signedIn(response.session.sessionID, authorization, csrf: cookie, client: client)
                case .mfaRequired(let challenge):
                    return challengePage(challenge, authorization, csrf: cookie)
                }
            } catch let error as GatehouseError {
                return render(signInPage(authorization, csrf: cookie, email: email, errors: [error.message]), csrf: cookie, formTarget: authorization)
            }
        case "magic_link":
            let email = fields["email"] ?? ""
            // The link comes back to this browser only: it carries a hash of the browser's CSRF
            // cookie, so a link someone else asked for cannot sign this browser in as them.
            var back = URLComponents(string: openID.issuer + OAuthRoutes.magicLink.path)
            back?.queryItems =
                authorization.parameters.map { URLQueryItem(name: $0.0, value: $0.1) } + [URLQueryItem(name: "binding", value: Self.binding(cookie))]
            do {
                try await magicLinks.request(email: email, redirectTo: nil, client: client, serverRedirect: back?.string)
            } catch let error as GatehouseError {
                return render(signInPage(authorization, csrf: cookie, email: email, errors: [error.message]), csrf: cookie, formTarget: authorization)
            }
            let sent = page(
                "magic-link-sent", text("page.sent.title", "Check your email"),
                [text("page.oauth.magic_sent.body", "We sent a sign-in link to {email}. Open it on this device to continue.", ["email": email])])
            return render(sent, csrf: cookie, formTarget: nil)
        case "passkey":
            // The page's script posts the browser's signed assertion (WebAuthn) for a ceremony it
            // opened at /v1/passkeys/authentication/options: the same use case as the app's.
            do {
                guard let text = fields["credential"], !text.isEmpty,
                    let credential = try? JSONDecoder().decode(PasskeyAssertionCredential.self, from: Data(text.utf8))
                else {
                    throw GatehouseError.invalidRequest(text("page.oauth.passkey.failed", "The passkey could not be used. Try again, or use another way."))
                }
                let assertion = PasskeyAssertionRequest(challengeID: fields["challenge_id"] ?? "", credential: credential)
                switch try await passkeys.signIn(assertion, client: client) {
                case .signedIn(let response):
                    return try await signedIn(response.session.sessionID, authorization, csrf: cookie, client: client)
                case .mfaRequired(let challenge):
                    return challengePage(challenge, authorization, csrf: cookie)
                }
            } catch let error as GatehouseError {
                return render(signInPage(authorization, csrf: cookie, email: "", errors: [error.message]), csrf: cookie, formTarget: authorization)
            }
        case "mfa":
            let (challenge, factor) = (fields["challenge_id"] ?? "", fields["factor_id"] ?? "")
            do {
                let verified = try await mfa.verify(
                    MFAVerifyRequest(challengeID: challenge, factorID: factor, code: fields["code"] ?? ""), signedIn: nil, client: client)
                return try await signedIn(verified.session.sessionID, authorization, csrf: cookie, client: client)
            } catch let error as GatehouseError where error.code == .invalidCode {
                return render(
                    mfaPage(authorization, challenge: challenge, factor: factor, csrf: cookie, errors: [error.message]), csrf: cookie,
                    formTarget: authorization)
            } catch let error as GatehouseError {
                return render(signInPage(authorization, csrf: cookie, email: "", errors: [error.message]), csrf: cookie, formTarget: authorization)
            }
        default:
            return try await proceed(fields, csrf: cookie, browser: browser, moment: .arrived, client: client)
        }
    }
}
