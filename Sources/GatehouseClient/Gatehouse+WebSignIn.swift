import Foundation
import GatehouseCore
import GatehouseWire

extension Gatehouse {
    // MARK: The app's account on the web (the OpenID provider)

    /// `POST /v1/oauth/handover`: a URL that opens a web surface of the app (a client of
    /// Gatehouse's OpenID provider, registered with an `initiate_login_uri`) already signed in as
    /// this account, without typing anything. Open it in Safari or `ASWebAuthenticationSession`
    /// right away: it works once, for 60 seconds, and carries no token (a one-time code bound to
    /// this session). The page it opens names the account and the client and signs the browser
    /// in when the person taps Continue, so a link someone sent cannot sign a browser in
    /// unseen; the web session is for that client only, and gets this session's second factor
    /// only if this session has one.
    ///
    /// ```swift
    /// let dashboard = try await gatehouse.webSignInURL(clientID: "gh_dashboard")
    /// // UIApplication.shared.open(dashboard)
    /// ```
    ///
    /// Throws ``GatehouseClientError``: 404 `not_found` (no such client), 400 `invalid_request`
    /// (the client has no `initiate_login_uri`, or the account is anonymous); `not_signed_in`
    /// without a session.
    public func webSignInURL(clientID: String) async throws(GatehouseClientError) -> URL {
        let response = try await call(Endpoints.handover, body: HandoverRequest(clientID: clientID), auth: .required)
        return try Self.pageURL(response.url)
    }

    /// `GET /v1/me/connections`: the web apps and partners this account let in, with what each
    /// may read, for a "Connected apps" screen.
    public func connectedClients() async throws(GatehouseClientError) -> [ConnectedClient] {
        try await call(Endpoints.connections, auth: .required).connections
    }

    /// `DELETE /v1/me/connections/{client}`: withdraws a client's consent and signs it out.
    public func disconnectClient(_ clientID: String) async throws(GatehouseClientError) {
        try await call(Endpoints.revokeConnection, clientID, auth: .required)
    }
}
