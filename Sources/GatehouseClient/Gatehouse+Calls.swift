import Foundation
import GatehouseWire

/// What every sign-in returns: email and password, anonymous, Apple, Google, a magic link.
public struct SignInResult: Sendable, Equatable {
    /// The signed-in person, as the server answered.
    public var user: UserPayload
    /// True when this sign-in created the account (always for `signUp`, never for `signIn`).
    public var created: Bool
    /// The three names an anonymous account may choose from (OKLah); empty for other sign-ins.
    public var nameSuggestions: [String]

    /// Makes a result, e.g. for previews and tests; every sign-in call answers one.
    public init(user: UserPayload, created: Bool, nameSuggestions: [String] = []) {
        self.user = user
        self.created = created
        self.nameSuggestions = nameSuggestions
    }
}

/// What a Gatehouse link opened in the app did (`handle(url:)`).
public enum LinkOutcome: Sendable, Equatable {
    /// A magic link: the person is signed in.
    case signedIn(SignInResult)
    /// An email verification link: the address is verified; the link's account as the server
    /// answers it (the state is updated when that account is the one signed in here).
    case emailVerified(UserPayload)
    /// A password reset link: show the new-password screen, then call
    /// `resetPassword(token:newPassword:)` with this token.
    case resetPassword(token: String)
}

/// Proof for deleting an account (decision 2): whichever fits the account.
public enum DeletionProof: Sendable, Equatable {
    /// A session younger than five minutes needs nothing more.
    case none
    /// The account's password.
    case password(String)
    /// A fresh Apple or Google id token of one of the account's identities, with the raw nonce
    /// whose SHA-256 was in its request (nil when there was none).
    case idToken(String, rawNonce: String?)
    /// A magic-link code mailed to the account's address (`sendMagicLink(email:)`).
    case code(String)
    /// An assertion by one of the account's passkeys, on options from `passkeySignInOptions()`.
    case passkey(PasskeySignInOptions, PasskeyAssertion)
}

extension Gatehouse {
    // MARK: Sign-up and sign-in

    /// `POST /v1/auth/signup`.
    @discardableResult
    public func signUp(email: String, password: String) async throws(GatehouseClientError) -> SignInResult {
        let answer = try await call(Endpoints.signUp, body: EmailPasswordRequest(email: email, password: password), auth: .none)
        let response = try session(of: answer, provider: .email)
        try begin(response.session, user: response.user, provider: .email)
        return SignInResult(user: response.user, created: true)
    }

    /// `POST /v1/auth/login`.
    @discardableResult
    public func signIn(email: String, password: String) async throws(GatehouseClientError) -> SignInResult {
        let answer = try await call(Endpoints.logIn, body: EmailPasswordRequest(email: email, password: password), auth: .none)
        let response = try session(of: answer, provider: .email)
        try begin(response.session, user: response.user, provider: .email)
        return SignInResult(user: response.user, created: false)
    }

    /// `POST /v1/auth/anonymous`: an account with no personal data and three `nameSuggestions`.
    /// The request carries an `Idempotency-Key` kept on the device until it succeeds: a retry
    /// after a lost answer, or after the app was killed mid-request, gets the same account
    /// instead of a second one.
    @discardableResult
    public func signInAnonymously() async throws(GatehouseClientError) -> SignInResult {
        let key: String
        if let data = storage.data(forKey: "anonymous_key"), let saved = String(data: data, encoding: .utf8) {
            key = saved
        } else {
            key = UUID().uuidString.lowercased()
            storage.set(Data(key.utf8), forKey: "anonymous_key")
        }
        let response = try await call(Endpoints.signInAnonymously, auth: .none, headers: ["Idempotency-Key": key])
        try begin(response.session, user: response.user, provider: .anonymous)
        storage.set(nil, forKey: "anonymous_key")
        return SignInResult(user: response.user, created: true, nameSuggestions: response.nameSuggestions)
    }

    /// `POST /v1/auth/apple` with the identity token from `ASAuthorizationAppleIDCredential`, the
    /// raw nonce whose SHA-256 was in the request, and the name Apple gives only the first time.
    @discardableResult
    public func signInWithApple(
        idToken: String, rawNonce: String?, fullName: PersonName? = nil, authorizationCode: String? = nil
    ) async throws(GatehouseClientError) -> SignInResult {
        let body = ProviderSignInRequest(idToken: idToken, rawNonce: rawNonce, fullName: fullName, authorizationCode: authorizationCode)
        let response = try session(of: try await call(Endpoints.signInWithApple, body: body, auth: .none), provider: .apple)
        try begin(response.session, user: response.user, provider: .apple)
        storage.set(Self.subject(ofIDToken: idToken).map { Data($0.utf8) }, forKey: "apple_user_id")
        return SignInResult(user: response.user, created: response.created)
    }

    /// `POST /v1/auth/google` with the id token from Google Sign-In.
    @discardableResult
    public func signInWithGoogle(idToken: String, rawNonce: String? = nil) async throws(GatehouseClientError) -> SignInResult {
        let answer = try await call(Endpoints.signInWithGoogle, body: ProviderSignInRequest(idToken: idToken, rawNonce: rawNonce), auth: .none)
        let response = try session(of: answer, provider: .google)
        try begin(response.session, user: response.user, provider: .google)
        return SignInResult(user: response.user, created: response.created)
    }

    /// `POST /v1/auth/magic-link`: mails a link (and a 6-digit code).
    public func sendMagicLink(email: String, redirectTo: URL? = nil) async throws(GatehouseClientError) {
        try await call(Endpoints.sendMagicLink, body: MagicLinkRequest(email: email, redirectTo: redirectTo?.absoluteString), auth: .none)
    }

    /// The 6-digit code from the mail, typed in the app.
    @discardableResult
    public func verifyMagicLink(email: String, code: String) async throws(GatehouseClientError) -> SignInResult {
        try await magicLink(MagicLinkVerifyRequest(email: email, code: code))
    }

    /// A URL the app was opened with. Gatehouse's own links are handled: a magic link signs in, a
    /// verification link verifies the address, a reset link answers the screen to show. Any other
    /// URL answers nil and nothing is sent anywhere, so the app can pass every URL it is opened
    /// with (`onOpenURL`).
    ///
    /// Gatehouse's links are the hosted pages under `ClientConfiguration.publicURL` (universal
    /// links: `/auth/magic-link`, `/auth/verify-email`, `/auth/reset-password`) and, for magic
    /// links, the app's own URLs the magic-link page opens: `ClientConfiguration.appLinks` and
    /// the preset's `open_app_url` once the configuration was loaded. Scheme, host, port and path
    /// must be equal, and the query a single `token`.
    @discardableResult
    public func handle(url: URL) async throws(GatehouseClientError) -> LinkOutcome? {
        guard let (kind, token) = GatehouseLinks(configuration: configuration, openAppURL: configurationCache?.app.openAppURL).match(url)
        else { return nil }
        switch kind {
        case .magicLink:
            return .signedIn(try await magicLink(MagicLinkVerifyRequest(token: token)))
        case .verifyEmail:
            return .emailVerified(try await verifyEmail(token: token))
        case .resetPassword:
            return .resetPassword(token: token)
        }
    }

    private func magicLink(_ body: MagicLinkVerifyRequest) async throws(GatehouseClientError) -> SignInResult {
        let response = try session(of: try await call(Endpoints.verifyMagicLink, body: body, auth: .none), provider: .magicLink)
        try begin(response.session, user: response.user, provider: .magicLink)
        return SignInResult(user: response.user, created: response.created)
    }

    // MARK: Email and password

    /// `POST /v1/auth/email/verification`: sends (or re-sends) the verification mail.
    public func resendVerification() async throws(GatehouseClientError) {
        try await call(Endpoints.resendVerification, auth: .required)
    }

    /// `POST /v1/auth/email/verify` with the token of a verification link the app opened itself
    /// (the hosted page does this otherwise).
    @discardableResult
    public func verifyEmail(token: String) async throws(GatehouseClientError) -> UserPayload {
        let response = try await call(Endpoints.verifyEmail, body: TokenRequest(token: token), auth: .none)
        updateUser(response.user)
        return response.user
    }

    /// `POST /v1/auth/password/forgot`.
    public func forgotPassword(email: String) async throws(GatehouseClientError) {
        try await call(Endpoints.forgotPassword, body: EmailRequest(email: email), auth: .none)
    }

    /// `POST /v1/auth/password/reset` with the token from the reset link.
    public func resetPassword(token: String, newPassword: String) async throws(GatehouseClientError) {
        try await call(Endpoints.resetPassword, body: PasswordResetRequest(token: token, password: newPassword), auth: .none)
    }

    /// `POST /v1/auth/password/change`.
    public func changePassword(current: String, new: String, signOutOtherSessions: Bool = false) async throws(GatehouseClientError) {
        // The answer (the user) is not read, as before the table.
        _ = try await exchange(
            Endpoints.changePassword,
            body: PasswordChangeRequest(currentPassword: current, newPassword: new, signOutOtherSessions: signOutOtherSessions), auth: .required)
    }

    // MARK: Sessions

    /// `POST /v1/auth/logout`. The default scope is `.local`: this device only (supabase-swift's
    /// `signOut()` defaults to `.global`). `local` and `global` end the session here even when the server
    /// cannot be reached (the refresh token is then forgotten; it expires on the server).
    public func signOut(scope: SignOutScope = .local) async throws(GatehouseClientError) {
        guard stored != nil else {
            end(.userSignedOut)
            return
        }
        do throws(GatehouseClientError) {
            try await call(Endpoints.logOut, body: LogoutRequest(scope: scope), auth: .required)
        } catch {
            if scope == .others { throw error }
        }
        if scope != .others { end(.userSignedOut) }
    }

    /// `GET /v1/auth/sessions`.
    public func sessions() async throws(GatehouseClientError) -> [SessionInfo] {
        let response = try await call(Endpoints.sessions, auth: .required)
        return response.sessions
    }

    /// `DELETE /v1/auth/sessions/{id}`.
    public func revokeSession(id: String) async throws(GatehouseClientError) {
        try await call(Endpoints.revokeSession, id, auth: .required)
        if id == stored?.sessionID { end(.userSignedOut) }
    }

    // MARK: Identities

    /// `POST /v1/auth/identities/email`: an anonymous account keeps its id and data. 409
    /// `identity_in_use` carries `details.merge_token` for `merge(token:)` from the other account.
    @discardableResult
    public func linkEmail(_ email: String, password: String) async throws(GatehouseClientError) -> UserPayload {
        try await linked(call(Endpoints.linkEmail, body: EmailPasswordRequest(email: email, password: password), auth: .required))
    }

    /// `POST /v1/auth/identities/apple` with the identity token, raw nonce and first-time name,
    /// as for `signInWithApple`: the signed-in account can then sign in with Apple too (an
    /// anonymous one keeps its id and data).
    ///
    /// Throws ``GatehouseClientError``: 409 `identity_in_use` when the Apple ID belongs to
    /// another account (with `details.merge_token` for `merge(token:)` when the signed-in
    /// account is anonymous); `not_signed_in` without a session; `session_revoked` or
    /// `invalid_refresh_token` when the server has ended the session (the state turns
    /// `.signedOut`).
    @discardableResult
    public func linkApple(idToken: String, rawNonce: String?, fullName: PersonName? = nil) async throws(GatehouseClientError) -> UserPayload {
        try await linked(
            call(Endpoints.linkApple, body: ProviderSignInRequest(idToken: idToken, rawNonce: rawNonce, fullName: fullName), auth: .required))
    }

    /// `POST /v1/auth/identities/google` with the id token from Google Sign-In: the signed-in
    /// account can then sign in with Google too (an anonymous one keeps its id and data).
    ///
    /// Throws ``GatehouseClientError``: 409 `identity_in_use` when the Google account belongs
    /// to another account (with `details.merge_token` for `merge(token:)` when the signed-in
    /// account is anonymous); `not_signed_in` without a session; `session_revoked` or
    /// `invalid_refresh_token` when the server has ended the session (the state turns
    /// `.signedOut`).
    @discardableResult
    public func linkGoogle(idToken: String, rawNonce: String? = nil) async throws(GatehouseClientError) -> UserPayload {
        try await linked(call(Endpoints.linkGoogle, body: ProviderSignInRequest(idToken: idToken, rawNonce: rawNonce), auth: .required))
    }

    /// `DELETE /v1/auth/identities/{provider}`.
    public func unlink(provider: SignInProvider) async throws(GatehouseClientError) {
        try await call(Endpoints.unlinkIdentity, provider.rawValue, auth: .required)
        _ = try? await refreshUser()
    }

    /// `POST /v1/auth/merge`: signed in to the account to keep.
    @discardableResult
    public func merge(token: String) async throws(GatehouseClientError) -> UserPayload {
        try await linked(call(Endpoints.merge, body: MergeRequest(mergeToken: token), auth: .required))
    }

    private func linked(_ response: UserResponse) -> UserPayload {
        updateUser(response.user)
        return response.user
    }

    // MARK: Account

    /// `GET /v1/me`: the user and the entitlement snapshot, both kept.
    @discardableResult
    public func refreshUser() async throws(GatehouseClientError) -> UserPayload {
        let me = try await call(Endpoints.me, auth: .required)
        updateUser(me.user)
        storeEntitlements(me.entitlements)
        return me.user
    }

    /// `PATCH /v1/me`.
    @discardableResult
    public func updateProfile(_ patch: ProfilePatch) async throws(GatehouseClientError) -> UserPayload {
        try await linked(call(Endpoints.updateProfile, body: patch, auth: .required))
    }

    /// `POST /v1/me/anonymous-name`: one of the suggested names.
    @discardableResult
    public func chooseName(_ name: String) async throws(GatehouseClientError) -> UserPayload {
        try await linked(call(Endpoints.chooseAnonymousName, body: AnonymousNameRequest(name: name), auth: .required))
    }

    /// `GET /v1/handles/{handle}`.
    public func handleAvailability(_ handle: String) async throws(GatehouseClientError) -> HandleAvailability {
        try await call(Endpoints.handleAvailability, handle, auth: .none)
    }

    /// `GET /v1/me/export`: everything stored about the person, as JSON.
    public func exportData() async throws(GatehouseClientError) -> Data {
        try await exchange(Endpoints.exportData, auth: .required).body
    }

    /// `DELETE /v1/me`: the account and everything in it; the session ends here.
    public func deleteAccount(proof: DeletionProof = .none) async throws(GatehouseClientError) {
        let body: DeleteAccountRequest
        switch proof {
        case .none: body = DeleteAccountRequest()
        case .password(let password): body = DeleteAccountRequest(password: password)
        case .idToken(let token, let nonce): body = DeleteAccountRequest(idToken: token, rawNonce: nonce)
        case .code(let code): body = DeleteAccountRequest(code: code)
        case .passkey(let options, let assertion): body = DeleteAccountRequest(passkey: assertion.request(options.challengeID))
        }
        try await call(Endpoints.deleteAccount, body: body, auth: .required)
        end(.accountDeleted)
    }

    // MARK: Purchases

    /// `POST /v1/purchases/apple` with `Transaction.jwsRepresentation`: the snapshot with the
    /// purchase applied. Set the purchase's `appAccountToken` to the user id.
    @discardableResult
    public func uploadPurchase(signedTransaction: String) async throws(GatehouseClientError) -> EntitlementsPayload {
        let snapshot = try await call(Endpoints.applePurchase, body: ApplePurchaseRequest(signedTransaction: signedTransaction), auth: .required)
        storeEntitlements(snapshot)
        return snapshot
    }

    /// The same call signed out (decision 21): whether an account owns the purchase, with a
    /// masked hint of how to sign in to it.
    public func restoreHint(signedTransaction: String) async throws(GatehouseClientError) -> RestoreHint {
        try await call(Endpoints.applePurchaseRestoreHint, body: ApplePurchaseRequest(signedTransaction: signedTransaction), auth: .none)
    }

    /// The `appAccountToken` to give StoreKit for a purchase: the user id.
    public var appAccountToken: UUID? { state.user.flatMap { UUID(uuidString: $0.id) } }
}

/// What `ASAuthorizationAppleIDProvider.getCredentialState(forUserID:)` answered.
public enum AppleCredentialState: Sendable, Equatable {
    /// The person still uses Sign in with Apple with this app: the session is kept.
    case authorized
    /// The person stopped using Sign in with Apple with this app: the session ends.
    case revoked
    /// Apple knows no such user for this app: the session ends.
    case notFound
    /// The app moved to another developer team: the session is kept.
    case transferred
}

extension Gatehouse {
    /// Apple's user identifier (the `sub` of the id_token) from this device's last Apple sign-in.
    public var appleUserID: String? { storage.data(forKey: "apple_user_id").map { String(decoding: $0, as: UTF8.self) } }

    /// Apple asks apps to check, at every launch, that the person still uses Sign in with Apple
    /// with them. Call this with a closure around `getCredentialState(forUserID:)`; a session
    /// signed in with Apple ends (reason `appleCredentialRevoked`) when Apple answers revoked or
    /// not found. True when it signed out.
    @discardableResult
    public func checkAppleCredential(_ credentialState: @Sendable (String) async -> AppleCredentialState) async -> Bool {
        guard state.user != nil, lastProvider == "apple", let id = appleUserID else { return false }
        switch await credentialState(id) {
        case .revoked, .notFound:
            // The server session ends too when it can be reached; the device forgets it anyway.
            try? await call(Endpoints.logOut, body: LogoutRequest(scope: .local), auth: .required)
            storage.set(nil, forKey: "apple_user_id")
            end(.appleCredentialRevoked)
            return true
        case .authorized, .transferred:
            return false
        }
    }

    /// The `sub` claim of a JWT, read without verifying it (the server verified the token).
    static func subject(ofIDToken token: String) -> String? {
        let parts = token.split(separator: ".")
        guard parts.count >= 2 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return claims["sub"] as? String
    }
}
