import Foundation
import GatehouseCore

/// The OpenID provider's registered clients (issue 45).
public protocol OAuthClientStore: Sendable {
    /// `.uniqueViolation` when the id is taken.
    func insertOAuthClient(_ client: OAuthClient) async throws(StoreError)
    func oauthClient(id: String) async throws(StoreError) -> OAuthClient?
    /// Every client, oldest first.
    func oauthClients() async throws(StoreError) -> [OAuthClient]
    /// Replaces a confidential client's secret hash; false when there is no such client.
    func replaceOAuthClientSecret(id: String, hash: [UInt8]) async throws(StoreError) -> Bool
    /// A client's name and redirect URIs replaced; false when there is no such client.
    func updateOAuthClient(id: String, name: String, redirectURIs: [String]) async throws(StoreError) -> Bool
    /// Deletes the client (its codes and consents with it); false when there was none.
    func deleteOAuthClient(id: String) async throws(StoreError) -> Bool
}

/// What the OpenID provider grants: one-time codes, consents, browsers signed in at the
/// provider, and the clients' sessions.
public protocol OAuthGrantStore: Sendable {
    func insertOAuthCode(_ code: OAuthCode) async throws(StoreError)
    /// Uses a code of `kind` in one conditional statement: only an unused code before its expiry, marked
    /// used by the session its use opens (`issuing`). Nil when it is unknown, used or expired,
    /// so of any number of parallel uses one at most gets it.
    func useOAuthCode(hash: [UInt8], kind: OAuthCodeKind, issuing: SessionID?, at date: Date) async throws(StoreError) -> OAuthCode?
    /// The account's codes, oldest first (for its export).
    func oauthCodes(of userID: UserID) async throws(StoreError) -> [OAuthCode]
    /// A code as stored, used or not (what a second use revokes).
    func oauthCode(hash: [UInt8]) async throws(StoreError) -> OAuthCode?
    func consent(of userID: UserID, to clientID: String) async throws(StoreError) -> OAuthConsent?
    /// Keeps the consent's scopes joined with those stored (the pair is the key).
    func saveConsent(_ consent: OAuthConsent) async throws(StoreError)
    /// Withdraws the consent; false when there was none.
    func deleteConsent(of userID: UserID, to clientID: String) async throws(StoreError) -> Bool
    /// Every consent of the account, oldest first.
    func consents(of userID: UserID) async throws(StoreError) -> [OAuthConsent]
    func insertBrowserSession(tokenHash: [UInt8], sessionID: SessionID, at date: Date, expiresAt: Date) async throws(StoreError)
    /// The session a browser's cookie stands for, before its expiry.
    func browserSession(tokenHash: [UInt8], at date: Date) async throws(StoreError) -> SessionID?
    /// Revokes every live session issued to the client (of one account when `userID` is given);
    /// the ones it revoked.
    func revokeClientSessions(clientID: String, of userID: UserID?, reason: SessionRevokeReason, at date: Date) async throws(StoreError)
        -> [SessionID]
}
