import Foundation
import GatehouseCore
import GatehouseWire
import Hummingbird

/// `/.well-known/apple-app-site-association` (the apps that share the passkeys, and the paths
/// they open as universal links) and `/.well-known/passkey-endpoints`.
struct WellKnownController {
    let relyingParty: RelyingParty
    let preset: Preset

    func register(on router: Router<GatehouseRequestContext>) {
        router.on(Endpoints.appleAppSiteAssociation, use: appleAppSiteAssociation)
        router.on(Endpoints.passkeyEndpoints, use: passkeyEndpoints)
    }

    @Sendable func appleAppSiteAssociation(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(association, headers: [.cacheControl: "public, max-age=3600"])
    }

    @Sendable func passkeyEndpoints(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(endpoints, headers: [.cacheControl: "public, max-age=3600"])
    }

    /// `webcredentials` for passkeys; `applinks` for the mailed links' pages, which the app
    /// opens instead of the browser when it is installed.
    var association: JSONValue {
        let apps = relyingParty.appleAppIDs.map(JSONValue.string)
        let paths = [Endpoints.magicLinkPage, Endpoints.verifyEmailPage, Endpoints.resetPasswordPage].map {
            JSONValue.object(["/": .string($0.path.template)])
        }
        return .object([
            "webcredentials": .object(["apps": .array(apps)]),
            "applinks": .object(["details": .array([.object(["appIDs": .array(apps), "components": .array(paths)])])]),
        ])
    }

    /// Where a password manager sends a person to add or manage a passkey: the app, when the
    /// preset names an https link to open it.
    var endpoints: JSONValue {
        guard let link = preset.app.openAppURL, link.hasPrefix("https://") else { return .object([:]) }
        return .object(["enroll": .string(link), "manage": .string(link)])
    }
}
