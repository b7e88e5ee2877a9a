import Foundation
import GatehouseCore
import GatehouseWire
import Hummingbird

// The OpenID provider's pages as `Templates.Page`s (split from OAuthPagesController.swift): the
// sign-in with the preset's ways in, the second factor, the consent.
extension OAuthPagesController {
    // MARK: Pages

    func hidden(_ authorization: AuthorizationRequest, step: String?) -> [(name: String, value: String)] {
        authorization.parameters.map { (name: $0.0, value: $0.1) } + (step.map { [(name: "step", value: $0)] } ?? [])
    }

    /// The preset's browser-capable ways in, in one form: the password (`step=sign_in`), and a
    /// magic link that returns here (`step=magic_link`, `/oauth/magic-link`).
    func signInPage(_ authorization: AuthorizationRequest, csrf: String, email: String, errors: [String]) -> Templates.Page {
        var result = page("sign-in", text("page.oauth.sign_in.title", "Sign in to {app}"), [text("page.oauth.sign_in.body", "Use your {app} account.")])
        result.errors = errors
        let methods = preset.signInMethods
        var fields: [Templates.Page.FieldsForm.Field] = [
            .init(name: "email", label: text("page.oauth.email", "Email"), type: "email", autocomplete: "username", value: email)
        ]
        var buttons: [Templates.Page.FieldsForm.Button] = []
        if methods.emailPassword {
            fields.append(.init(name: "password", label: text("page.oauth.password", "Password"), type: "password", autocomplete: "current-password"))
            buttons.append(.init(name: "step", value: "sign_in", label: text("page.oauth.sign_in.button", "Sign in")))
        }
        if methods.magicLink {
            buttons.append(
                .init(
                    name: "step", value: "magic_link", label: text("page.oauth.magic_link.button", "Email me a sign-in link"),
                    secondary: methods.emailPassword, skipsValidation: true))
        }
        if methods.passkey {
            result.passkey = (
                label: text("page.oauth.passkey.button", "Sign in with a passkey"), optionsPath: Endpoints.passkeyAuthenticationOptions.path.template,
                action: OAuthRoutes.authorizeForm.path, csrf: csrf, hidden: hidden(authorization, step: nil)
            )
        }
        guard !buttons.isEmpty || methods.passkey else {
            // A preset without a way in from a browser (anonymous accounts only).
            result.paragraphs = [text("page.oauth.no_web_sign_in", "{app} has no sign-in on the web. Open {app} on your phone.")]
            return result
        }
        // The email field names the account whose passkeys the browser is offered.
        result.fieldsForm = .init(
            id: "sign-in", action: OAuthRoutes.authorizeForm.path, csrf: csrf, hidden: hidden(authorization, step: nil), fields: fields,
            buttons: buttons)
        return result
    }

    /// The second factor's page for a sign-in that met a challenge (its TOTP factor).
    func challengePage(_ challenge: MFAChallengePayload, _ authorization: AuthorizationRequest, csrf: String) -> Response {
        let factor = challenge.factors.first { $0.type == "totp" }?.id ?? ""
        return render(
            mfaPage(authorization, challenge: challenge.challengeID, factor: factor, csrf: csrf, errors: []), csrf: csrf, formTarget: authorization)
    }

    func mfaPage(_ authorization: AuthorizationRequest, challenge: String, factor: String, csrf: String, errors: [String]) -> Templates.Page {
        var result = page("mfa", text("page.oauth.mfa.title", "Enter your code"), [text("page.oauth.mfa.body", "Open your authenticator app and enter the 6-digit code for {app}.")])
        result.errors = errors
        result.fieldsForm = .init(
            id: "mfa", action: OAuthRoutes.authorizeForm.path, csrf: csrf,
            hidden: hidden(authorization, step: "mfa") + [(name: "challenge_id", value: challenge), (name: "factor_id", value: factor)],
            fields: [.init(name: "code", label: text("page.oauth.mfa.code", "Code"), type: "text", autocomplete: "one-time-code", numeric: true)],
            buttons: [.init(name: nil, value: nil, label: text("page.oauth.mfa.button", "Continue"))])
        return result
    }

    /// How the page names an account: its address, else its name, else its handle.
    func accountName(_ user: User) -> String {
        user.email ?? user.displayName ?? user.handle ?? text("page.oauth.your_account", "your account")
    }

    /// RFC 8252 §8.6: a public client's request is shown to the person before a code goes to a
    /// redirect URI any local process could hold. One tap, naming the account and the client.
    func continuePage(_ authorization: AuthorizationRequest, client: OAuthClient, user: User, csrf: String) -> Templates.Page {
        var result = page(
            "continue", text("page.oauth.continue.title", "Continue to {client}?", ["client": client.name]),
            [text("page.oauth.continue.body", "You are signed in to {app} as {account}.", ["account": accountName(user)])])
        result.fieldsForm = .init(
            id: "continue", action: OAuthRoutes.authorizeForm.path, csrf: csrf, hidden: hidden(authorization, step: "consent"),
            buttons: [
                .init(name: "decision", value: "allow", label: text("page.oauth.continue.allow", "Continue as {account}", ["account": accountName(user)])),
                .init(name: "decision", value: "deny", label: text("page.oauth.consent.deny", "Cancel"), secondary: true),
            ])
        return result
    }

    /// The app's hand-over, opened in a browser: nothing is signed in until the person
    /// confirms, on this page, the account and the client it names (R124).
    func handoverPage(code: String, account: User, client: OAuthClient, csrf: String) -> Templates.Page {
        var result = page(
            "handover", text("page.oauth.handover.title", "Continue as {account} on {client}?", ["account": accountName(account), "client": client.name]),
            [text("page.oauth.handover.body", "{app} opened this page to sign you in to {client} as {account}. Continue only if you opened it from {app} yourself.", ["account": accountName(account), "client": client.name])])
        result.fieldsForm = .init(
            id: "handover", action: OAuthRoutes.handoverForm.path, csrf: csrf, hidden: [(name: "code", value: code)],
            buttons: [
                .init(name: "decision", value: "continue", label: text("page.oauth.handover.continue", "Continue")),
                .init(name: "decision", value: "cancel", label: text("page.oauth.consent.deny", "Cancel"), secondary: true),
            ])
        return result
    }

    /// `/oauth/logout` for another account than this browser's: its own person decides.
    func logoutConfirmPage(_ user: User, csrf: String) -> Templates.Page {
        var result = page(
            "logout-confirm", text("page.oauth.logout_confirm.title", "Sign out of {app}?"),
            [text("page.oauth.logout_confirm.body", "This browser is signed in to {app} as {account}. Sign out here?", ["account": accountName(user)])])
        result.fieldsForm = .init(
            id: "logout", action: OAuthRoutes.logoutForm.path, csrf: csrf, hidden: [],
            buttons: [
                .init(name: "decision", value: "sign_out", label: text("page.oauth.logout_confirm.sign_out", "Sign out")),
                .init(name: "decision", value: "stay", label: text("page.oauth.logout_confirm.stay", "Stay signed in"), secondary: true),
            ])
        return result
    }

    func consentPage(_ authorization: AuthorizationRequest, client: OAuthClient, user: User?, csrf: String) -> Templates.Page {
        var result = page(
            "consent", text("page.oauth.consent.title", "{client} wants to use your {app} account", ["client": client.name]),
            [text("page.oauth.consent.body", "Signed in as {account}. {client} will be able to:", ["client": client.name, "account": user.map(accountName) ?? "you"])])
        let scopes = authorization.scopes.map { scope in
            (scope: scope, text: text("page.oauth.scope.\(scope)", Self.scopeDefaults[scope] ?? scope))
        }
        result.fieldsForm = .init(
            id: "consent", action: OAuthRoutes.authorizeForm.path, csrf: csrf, hidden: hidden(authorization, step: "consent"), scopes: scopes,
            buttons: [
                .init(name: "decision", value: "allow", label: text("page.oauth.consent.allow", "Allow")),
                .init(name: "decision", value: "deny", label: text("page.oauth.consent.deny", "Cancel"), secondary: true),
            ])
        return result
    }

    static let scopeDefaults = [
        "openid": "Know who you are on {app}", "email": "See your email address", "profile": "See your name",
        "offline_access": "Stay signed in when you are away",
    ]

    func page(_ state: String, _ heading: String, _ paragraphs: [String], status icon: String? = nil) -> Templates.Page {
        Templates.Page(state: state, title: heading, heading: heading, paragraphs: paragraphs, icon: icon)
    }

    func text(_ key: String, _ fallback: String, _ values: [String: String] = [:]) -> String {
        templates.text(key, fallback, values)
    }
}
