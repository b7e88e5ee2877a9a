import Foundation
import GatehouseCore
import GatehouseWire

/// The OpenID provider's clients (issue 45): the registered ones, the form that registers one,
/// and a new secret, shown on the one answer that made it.
extension ConsoleViews {
    /// The scopes the form offers as checkboxes; API scopes are typed.
    static let clientScopeChoices = OAuthScope.allCases.map(\.rawValue)

    /// `shown`: a client whose `client_secret` was just made (registration or rotation); the
    /// page carries it this once, and nothing else ever shows it again.
    func clients(_ list: OAuthClientList, shown: OAuthClientPayload? = nil) -> Page {
        var page = Page(
            name: "clients", title: "OAuth clients",
            values: [
                "rows": list.clients.map { client in
                    [
                        "client_id": client.clientID, "client_name": client.name, "public": client.isPublic,
                        "first_party": client.firstParty, "redirect_uris": client.redirectURIs,
                        "post_logout_uris": client.postLogoutRedirectURIs, "client_scopes": client.scopes.joined(separator: " "),
                        "client_audience": client.audience ?? "", "login_uri": client.initiateLoginURI ?? "",
                        "rate_limit": client.rateLimitPerMinute,
                        "created": Date(rfc3339: client.createdAt).map(Self.time) ?? client.createdAt,
                    ] as [String: Any]
                },
                "empty": list.clients.isEmpty,
                "scope_choices": Self.clientScopeChoices.map { ["scope": $0, "checked": $0 == OAuthScope.openid.rawValue] as [String: Any] },
            ])
        if let shown, let secret = shown.clientSecret {
            page.values["new_secret"] = ["secret_client_id": shown.clientID, "secret_client_name": shown.name, "secret": secret]
        }
        return page
    }

    /// The registration form as the service's request: URIs one a line, the scope checkboxes
    /// (`scope_<name>`) and the API scopes typed (spaces or commas between); empty fields absent.
    static func clientRequest(_ form: [String: String]) -> OAuthClientRequest {
        func lines(_ name: String) -> [String] {
            (form[name] ?? "").split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        func text(_ name: String) -> String? {
            form[name].map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        let checked = clientScopeChoices.filter { form["scope_\($0)"] != nil }
        let typed = (form["api_scopes"] ?? "").split { $0 == "," || $0.isWhitespace }.map(String.init)
        let postLogout = lines("post_logout_redirect_uris")
        return OAuthClientRequest(
            name: form["name"] ?? "", redirectURIs: lines("redirect_uris"), postLogoutRedirectURIs: postLogout.isEmpty ? nil : postLogout,
            scopes: checked + typed, isPublic: form["public"] != nil, firstParty: form["first_party"] != nil, audience: text("audience"),
            initiateLoginURI: text("initiate_login_uri"))
    }
}
