import Foundation
import GatehouseCore
import GatehouseWire
import Mustache

/// The mustache templates shipped in `Resources/templates`: one layout for every mail (HTML
/// and text) and one for every hosted page. What they say comes from the preset: its app name,
/// brand colour and copy strings (`mail.<kind>.<part>`, `page.<name>.<part>`), with defaults
/// here for every string a preset leaves out.
struct Templates: Sendable {
    let library: MustacheLibrary
    let preset: Preset

    init(preset: Preset) throws {
        self.library = try Self.library(["mail.html", "mail.txt", "page.html"])
        self.preset = preset
    }

    /// The named templates of `Resources/templates` (`<name>.mustache`), parsed.
    static func library(_ names: [String]) throws -> MustacheLibrary {
        var library = MustacheLibrary()
        for name in names {
            guard let url = Bundle.module.url(forResource: name, withExtension: "mustache", subdirectory: "Resources/templates") else {
                throw TemplateError("the template \(name) is missing from this build")
            }
            let text: String
            do {
                text = try String(contentsOf: url, encoding: .utf8)
            } catch {
                throw TemplateError("cannot read template \(url.path)")
            }
            do {
                try library.register(text, named: name)
            } catch {
                throw TemplateError("template \(name) does not parse: \(error)")
            }
        }
        return library
    }

    // MARK: Copy

    /// The preset's string for `key` (or `fallback`), with `{app}` and `values` filled in.
    func text(_ key: String, _ fallback: String, _ values: [String: String] = [:]) -> String {
        var result = preset.text(key, fallback)
        for (name, value) in values.merging(["app": preset.app.name], uniquingKeysWith: { first, _ in first }) {
            result = result.replacingOccurrences(of: "{\(name)}", with: value)
        }
        return result
    }

    // MARK: Mail

    struct Mail: Sendable {
        var subject: String
        var text: String
        var html: String
        /// The link and the code inside, for a `SEND_EMAIL` hook that renders its own mail.
        var tokens = MailTokens(link: nil, code: nil)

        /// The outbox row that sends this mail (the link's host is kept for the log; the link and
        /// code only in the payload, cleared with the bodies once it is sent).
        func outbox(kind: MailKind, to recipient: String, at now: Date) -> OutboxMessage {
            var message = OutboxMessage(
                createdAt: now, kind: kind.rawValue, recipient: recipient, subject: subject, textBody: text, htmlBody: html,
                linkHost: tokens.link?.host)
            message.payload = tokens.payload
            return message
        }
    }

    /// A mail of `kind` (`verification`, `password_reset`, `magic_link`, `password_changed`,
    /// `new_sign_in`, `mfa_factor_added`, `mfa_factor_removed`, `recovery_code_used`, `phone_changed`), its copy from the preset's `mail.<kind>.*` strings.
    func mail(_ kind: MailKind, link: URL? = nil, code: String? = nil, values: [String: String] = [:]) -> Mail {
        let defaults = Self.mailDefaults[kind.rawValue] ?? [:]
        func copy(_ part: String) -> String {
            text("mail.\(kind.rawValue).\(part)", defaults[part] ?? "", values)
        }
        let body = copy("body")
        var context: [String: Any] = [
            "app_name": preset.app.name, "brand_color": preset.app.brandColor, "subject": copy("subject"),
            "heading": copy("heading"), "paragraphs": body.components(separatedBy: "\n\n").filter { !$0.isEmpty },
            "footer": copy("footer"),
            "link_hint": text("mail.link_hint", "If the button does not work, open this address:"),
        ]
        if let link { context["button"] = ["url": link.absoluteString, "label": copy("button")] }
        if let code {
            context["code"] = code
            context["code_intro"] = copy("code_intro")
        }
        return Mail(
            subject: copy("subject"),
            text: library.render(context, withTemplate: "mail.txt") ?? "",
            html: library.render(context, withTemplate: "mail.html") ?? "", tokens: MailTokens(link: link, code: code))
    }

    static let mailDefaults: [String: [String: String]] = [
        "verification": [
            "subject": "Confirm your email for {app}",
            "heading": "Confirm your email",
            "body": "Tap the button below to confirm that this is your email address for {app}.",
            "button": "Confirm email",
            "footer": "This link works for {hours} hours. If you did not create a {app} account, you can ignore this email.",
        ],
        "password_reset": [
            "subject": "Reset your {app} password",
            "heading": "Reset your password",
            "body": "Someone, hopefully you, asked to reset the password of your {app} account. Tap the button below to choose a new one.",
            "button": "Choose a new password",
            "footer": "This link works for {minutes} minutes, once. If you did not ask for it, ignore this email: your password stays as it is.",
        ],
        "magic_link": [
            "subject": "Your {app} sign-in link",
            "heading": "Sign in to {app}",
            "body": "Tap the button below on the phone where {app} is installed to sign in.",
            "button": "Sign in to {app}",
            "code_intro": "Or enter this code in the app:",
            "footer": "The link and the code work for {minutes} minutes, once. If you did not ask to sign in, ignore this email.",
        ],
        "password_changed": [
            "subject": "Your {app} password was changed",
            "heading": "Your password was changed",
            "body": "The password of your {app} account was changed on {time}.",
            "footer": "If this was not you, reset your password right away and sign out of other devices.",
        ],
        "new_sign_in": [
            "subject": "New sign-in to your {app} account",
            "heading": "New sign-in",
            "body": "Your {app} account was signed in to on {time} from a device it had not used before:\n\n{device}",
            "footer": "If this was you, there is nothing to do. If not, change your password now.",
        ],
        "mfa_factor_added": [
            "subject": "Two-step sign-in is on for your {app} account",
            "heading": "An authenticator app was added",
            "body": "The authenticator app \"{factor}\" was added to your {app} account on {time}. Signing in now asks for its code.",
            "footer": "If this was not you, reset your password and contact support right away.",
        ],
        "mfa_factor_removed": [
            "subject": "An authenticator app was removed from your {app} account",
            "heading": "An authenticator app was removed",
            "body": "The authenticator app \"{factor}\" was removed from your {app} account on {time}{by}.",
            "footer": "If you did not ask for this, reset your password and contact support right away.",
        ],
        "phone_changed": [
            "subject": "The phone number of your {app} account changed",
            "heading": "Your phone number changed",
            "body": "{change} on {time}.",
            "footer": "If this was not you, change your password and sign out of other devices right away.",
        ],
        "recovery_code_used": [
            "subject": "A recovery code was used for your {app} account",
            "heading": "A recovery code was used",
            "body": "A recovery code was used to sign in to your {app} account on {time}. {remaining} unused codes are left.",
            "footer": "If this was not you, reset your password and make new recovery codes right away.",
        ],
    ]

    // MARK: Pages

    /// A hosted page. `state` is also written as `data-state` on `<main>` (the browser tests
    /// read it).
    struct Page {
        var state: String
        var title: String
        var heading: String
        var paragraphs: [String] = []
        var errors: [String] = []
        /// `success`, `warning` or nil.
        var icon: String?
        var form: Form?
        var link: (url: String, label: String)?
        var hint: String?
        /// A form of fields and buttons (the OpenID provider's sign-in, second factor and consent).
        var fieldsForm: FieldsForm?
        /// The passkey button of the OpenID provider's sign-in page: its script asks
        /// `optionsPath` for a ceremony, has the browser sign it (WebAuthn) and posts the
        /// assertion in a form of `hidden` fields.
        var passkey: (label: String, optionsPath: String, action: String, csrf: String, hidden: [(name: String, value: String)])?

        struct FieldsForm {
            struct Field {
                var name: String
                var label: String
                var type: String
                var autocomplete: String
                var value = ""
                var numeric = false
            }
            struct Button {
                var name: String?
                var value: String?
                var label: String
                var secondary = false
                /// `formnovalidate`: the button posts without the fields the other one needs.
                var skipsValidation = false
            }
            var id: String
            var action: String
            var csrf: String
            var hidden: [(name: String, value: String)]
            var scopes: [(scope: String, text: String)] = []
            var fields: [Field] = []
            var buttons: [Button]
        }

        struct Form {
            var action: String
            var token: String
            var csrf: String
            var submit: String
            /// New password + confirm fields, with the policy's rules shown.
            var password: (rules: [String], minLength: Int, maxLength: Int)?
        }
    }

    /// `referrer` is the page's referrer policy: `no-referrer` but on the OpenID provider's
    /// pages, whose posts must name their origin.
    func render(_ page: Page, nonce: String, referrer: String = "no-referrer") -> String {
        var context: [String: Any] = [
            "referrer": referrer, "app_name": preset.app.name, "brand_color": preset.app.brandColor, "nonce": nonce, "state": page.state,
            "title": page.title, "heading": page.heading, "paragraphs": page.paragraphs, "errors": page.errors, "has_errors": !page.errors.isEmpty,
        ]
        if let icon = page.icon {
            context["icon"] = ["kind": icon, "symbol": icon == "success" ? "✓" : "!"]
        }
        if let form = page.form {
            var values: [String: Any] = [
                "action": form.action, "token": form.token, "csrf": form.csrf, "submit": form.submit,
            ]
            if let password = form.password {
                values["password"] = [
                    "password_label": text("page.reset.password_label", "New password"),
                    "confirm_label": text("page.reset.confirm_label", "Confirm new password"),
                    "rules": password.rules, "has_rules": !password.rules.isEmpty,
                    "min_length": password.minLength, "max_length": password.maxLength,
                ] as [String: Any]
            }
            context["form"] = values
        }
        if let link = page.link { context["link"] = ["url": link.url, "label": link.label] }
        if let hint = page.hint { context["hint"] = hint }
        if let form = page.fieldsForm {
            context["fields_form"] = [
                "id": form.id, "action": form.action, "csrf": form.csrf,
                "hidden": form.hidden.map { ["name": $0.name, "value": $0.value] },
                "has_scopes": !form.scopes.isEmpty, "scopes": form.scopes.map { ["scope": $0.scope, "text": $0.text] },
                "fields": form.fields.map {
                    ["name": $0.name, "label": $0.label, "type": $0.type, "autocomplete": $0.autocomplete, "value": $0.value, "numeric": $0.numeric] as [String: Any]
                },
                "buttons": form.buttons.map { button -> [String: Any] in
                    var values: [String: Any] = ["label": button.label, "secondary": button.secondary, "skips_validation": button.skipsValidation]
                    if let name = button.name { values["name"] = ["name": name, "value": button.value ?? ""] }
                    return values
                },
            ] as [String: Any]
        }
        if let passkey = page.passkey {
            context["passkey"] = [
                "label": passkey.label, "options_path": passkey.optionsPath, "action": passkey.action, "csrf": passkey.csrf,
                "hidden": passkey.hidden.map { ["name": $0.name, "value": $0.value] },
            ] as [String: Any]
        }
        return library.render(context, withTemplate: "page.html") ?? ""
    }
}

struct TemplateError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
