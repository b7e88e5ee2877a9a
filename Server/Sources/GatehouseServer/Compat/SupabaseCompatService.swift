import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// `/auth/v1`, Supabase Auth's API, on Gatehouse's own use cases: every call here ends in the
/// service the native API uses (same accounts, sessions, throttles, preset and audit), and only
/// the shapes differ. What GoTrue does that Gatehouse's policy does not is in
/// docs/supabase-compat.md.
struct SupabaseCompatService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdentityStore & SessionStore & EmailTokenStore & MFAFactorStore & PlanLedgerStore

    let store: Stores
    /// `/admin/generate_link`'s links, made in one transaction with their audit row.
    let unitOfWork: UnitOfWork<Stores>
    let authenticator: Authenticator
    /// Re-signs a session's access token with GoTrue's claims.
    let tokens: AccessTokens
    /// `/admin/oauth/clients`: the OpenID provider's clients.
    let clients: OperatorClientsService
    let links: EmailLinks
    /// Where `/admin/generate_link`'s links point (`…/auth/v1/verify`).
    let publicURL: String
    let passwords: PasswordService
    let sessions: SessionService
    let reset: PasswordResetService
    let magicLinks: MagicLinkService
    let providers: ProviderSignInService
    let profiles: ProfileService
    let users: OperatorService
    let mfa: MFAService
    let verification: EmailVerificationService
    let phone: PhoneService
    /// The 6-digit code of a magic-link mail: `/reauthenticate`'s nonce.
    let magicCodes: MagicCodes
    let codes: GoTrueCodes
    /// Where `GET /verify` may send the browser (`redirect_to`), and where it goes without one.
    let redirects: RedirectPolicy
    let siteURL: String
    let preset: Preset
    let clock: any WallClock

    // MARK: Ways in

    /// `POST /signup`: with an address and a password, an email account; with neither, an
    /// anonymous one (GoTrue's `signInAnonymously`).
    func signup(_ body: GoTrueSignup, client: ClientInfo) async throws -> GoTrueSession {
        // A profile (or metadata) that would be refused refuses the sign-up, before the account exists.
        if let patch = GoTrueMetadata.patch(from: body.data) {
            try await profiles.check(patch)
            try GoTrueMetadata.checkSize(patch.userMetadata, kind: .user)
        }
        guard let email = body.email, !email.isEmpty else {
            guard body.password == nil else { throw GatehouseError.invalidRequest("An email address is needed with a password.") }
            let answer = try await profiles.anonymous(client: client, idempotencyKey: nil)
            return try await session(answer.session, applying: body.data)
        }
        guard let password = body.password else { throw GatehouseError.invalidRequest("A password is needed to sign up.") }
        let answer = try await passwords.signup(email: email, password: password, client: client, captchaToken: body.captchaToken)
        return try await session(try signedIn(answer).session, applying: body.data, identityKeys: true)
    }

    /// `POST /signup` with a number and a password: GoTrue's user, no session until the code
    /// proves the number (`POST /verify` with `type: sms`).
    func phoneSignup(_ body: GoTrueSignup, phone number: String, client: ClientInfo) async throws -> GoTrueUser {
        guard let password = body.password else { throw GatehouseError.invalidRequest("A password is needed to sign up.") }
        let user = try await phone.signUpWithPassword(
            phone: number, password: password, captchaToken: body.captchaToken, client: client, userMetadata: body.data ?? [:])
        return try await goTrueUser(user)
    }

    /// `POST /token?grant_type=password`, by address or by verified number.
    func passwordGrant(email: String?, phone number: String?, password: String, captchaToken: String?, client: ClientInfo) async throws -> GoTrueSession {
        let name: PasswordService.LoginName
        if let email {
            name = .email(email)
        } else if let number {
            name = .phone(try phone.number(number))
        } else {
            throw GatehouseError.invalidRequest("Send an email address or a phone number with the password.")
        }
        let answer = try await passwords.login(name, password: password, client: client, captchaToken: captchaToken)
        return try await session(try signedIn(answer).session)
    }

    /// `POST /token?grant_type=refresh_token`: the native rotation, reuse detection included.
    /// A token of a session that has ended is GoTrue's `refresh_token_not_found` (GoTrue deletes
    /// a session's refresh tokens when it ends), not the access path's `session_not_found`.
    func refreshGrant(_ token: String, client: ClientInfo) async throws -> GoTrueSession {
        do {
            return try await session(try await sessions.refresh(token, client: client).session)
        } catch var error as GatehouseError where error.code == .sessionRevoked {
            error.code = .invalidRefreshToken
            throw error
        }
    }

    /// `POST /token?grant_type=id_token`: Sign in with Apple or Google with the provider's token.
    func idTokenGrant(provider name: String, idToken: String, nonce: String?, client: ClientInfo) async throws -> GoTrueSession {
        let provider: Provider
        switch name {
        case "apple": provider = .apple
        case "google": provider = .google
        default: throw GatehouseError.invalidRequest("The provider must be apple or google.")
        }
        let answer = try await providers.signIn(provider, ProviderSignInRequest(idToken: idToken, rawNonce: nonce), client: client)
        return try await session(try signedIn(answer).session)
    }

    /// `POST /otp`: a magic link and its 6-digit code, to the address; with a PKCE challenge,
    /// following the link (`GET /verify`) answers an auth code instead of tokens.
    func otp(
        email: String, createUser: Bool, redirectTo: String?, pkce: (challenge: String, method: String)?, client: ClientInfo
    ) async throws {
        try await magicLinks.request(email: email, redirectTo: redirectTo, client: client, existingAccountsOnly: !createUser)
        try await savePKCE(pkce, email: email, purpose: .magicLink)
    }

    /// `POST /otp` with `phone`: an SMS code (`phone/code`); `create_user: false` texts only a
    /// number that has an account.
    func phoneOTP(phone number: String, createUser: Bool, captchaToken: String?, client: ClientInfo) async throws {
        try await phone.sendCode(phone: number, captchaToken: captchaToken, client: client, existingAccountsOnly: !createUser)
    }

    /// `POST /verify` and `GET /verify`: a magic link's token or code (`magiclink`, `email`), a
    /// reset link (`recovery`), an SMS code (`sms`), or the code a new number got (`phone_change`),
    /// for a session.
    func verify(
        type: String, token: String?, tokenHash: String?, email: String?, phone number: String? = nil, asker: UserID? = nil,
        client: ClientInfo
    ) async throws -> GoTrueSession {
        switch type {
        case "sms", "phone_change":
            guard let number, let token else { throw GatehouseError.invalidRequest("Send the phone number and the code as token.") }
            if !preset.signInMethods.phone {
                // GoTrue with phone sign-in off: the number's E.164 shape first, then no code
                // can match (issue 63); never `provider_disabled` here.
                guard GoTrueCodes.isE164Shaped(number) else {
                    throw GatehouseError(status: 400, code: .invalidRequest, message: "Invalid phone number format (E.164 required)")
                }
                throw GatehouseError(.tokenInvalid, "Token has expired or is invalid")
            }
            do {
                let answer =
                    type == "sms"
                    ? try await phone.verify(phone: number, code: token, client: client)
                    : try await phone.confirmChange(phone: number, code: token, asker: asker, client: client)
                return try await session(try signedIn(answer).session)
            } catch var error as GatehouseError where error.code == .invalidCode {
                // A wrong SMS code is GoTrue's expired-or-invalid OTP, as a wrong mailed code is.
                error.code = .tokenInvalid
                throw error
            }
        case "magiclink", "email", "invite":
            let answer = try await magicLinks.verify(token: tokenHash, email: email, code: token, client: client)
            return try await session(try signedIn(answer).session)
        case "signup", "email_change":
            guard let link = tokenHash ?? token, !link.isEmpty else { throw GatehouseError.invalidRequest("Send the link's token as token_hash.") }
            // A sign-up's link is a verification link, or a magic link made for an address
            // without an account (`generate_link` `magiclink`).
            if type == "signup", try await store.emailToken(hash: StoredSecret.hash(link))?.purpose == .magicLink {
                return try await verify(type: "magiclink", token: nil, tokenHash: link, email: nil, client: client)
            }
            return try await session(try signedIn(try await verification.signIn(token: link, client: client)).session)
        case "recovery":
            guard let link = tokenHash ?? token, !link.isEmpty else {
                throw GatehouseError.invalidRequest("Send the reset link's token as token_hash.")
            }
            return try await session(try signedIn(try await reset.redeem(token: link, client: client)).session)
        default:
            throw GatehouseError.invalidRequest("The type must be magiclink, email, invite, signup, email_change, recovery, sms or phone_change.")
        }
    }

    /// `POST /recover`: a password reset mail, under the preset's enumeration protection.
    func recover(email: String, pkce: (challenge: String, method: String)?, client: ClientInfo) async throws {
        try await reset.forgot(email: email, client: client)
        try await savePKCE(pkce, email: email, purpose: .passwordReset)
    }

    // MARK: The signed-in user

    func user(_ signedIn: SignedIn) async throws -> GoTrueUser {
        try await goTrueUser(signedIn.user)
    }

    /// `PUT /user`: profile metadata; an address and a password for an anonymous account (its
    /// upgrade, same id); a new password with the current one, or after a reset link.
    func updateUser(_ signedIn: SignedIn, _ body: GoTrueUserUpdate, client: ClientInfo) async throws -> GoTrueUser {
        var signedIn = signedIn
        if let number = body.phone {
            // A code to the new number; `POST /verify` with `phone_change` makes it the account's.
            try await phone.add(signedIn, phone: number, captchaToken: nil, client: client)
        }
        if let email = body.email {
            guard signedIn.user.isAnonymous, let password = body.password else {
                throw GatehouseError(
                    status: 400, code: .invalidRequest,
                    message: "An address can be added to an anonymous account with a password; other address changes are not offered here.")
            }
            _ = try await providers.linkEmail(signedIn, email: email, password: password, client: client)
        } else if let password = body.password {
            if let current = body.currentPassword {
                _ = try await passwords.changePassword(signedIn, current: current, new: password, signOutOthers: false, client: client)
            } else if let nonce = body.nonce {
                // The code `/reauthenticate` mailed, used up here as proof of the inbox.
                guard let email = signedIn.user.email else { throw GatehouseError.invalidRequest("This account has no email address.") }
                try await magicCodes.consume(email: email, code: nonce)
                _ = try await passwords.setPasswordAfterLink(signedIn, new: password, proven: true, client: client)
            } else {
                do {
                    _ = try await passwords.setPasswordAfterLink(signedIn, new: password, client: client)
                } catch var error as GatehouseError where error.code == .reauthenticationRequired {
                    // Gatehouse's rule (a change needs proof), in GoTrue's own words for it.
                    error.message = GoTrueMetadata.reauthenticationMessage
                    throw error
                }
            }
        }
        if let patch = GoTrueMetadata.patch(from: body.data) {
            if let fresh = try await store.user(id: signedIn.user.id) { signedIn = signedIn.with(fresh) }
            _ = try await profiles.patch(signedIn, patch)
        }
        return try await goTrueUser(id: signedIn.user.id)
    }

    func logout(_ signedIn: SignedIn, scope: String?, client: ClientInfo) async throws {
        try await sessions.logout(signedIn.identity, scope: SignOutScope(rawValue: scope ?? "global"), client: client)
    }

    // MARK: Shapes

    static let noUser = GatehouseError(status: 404, code: .notFound, message: "User not found")

    func userID(_ text: String) throws -> UserID {
        guard let id = UserID(text) else { throw Self.noUser }
        return id
    }

    /// A sign-in's session, or, for an account with a second factor, GoTrue's refusal: Gatehouse
    /// opens no session before the factor (docs/supabase-compat.md).
    private func signedIn<Signed>(_ answer: SignInAnswer<Signed>) throws -> Signed {
        switch answer {
        case .signedIn(let signed): return signed
        case .mfaRequired:
            throw GatehouseError(
                status: 403, code: .mfaRequired,
                message: "This account has a second factor: sign in through /v1/auth/login and /v1/auth/mfa/verify.")
        }
    }

    /// The GoTrue session of a native one; the user is read again only when metadata was applied
    /// after the sign-in.
    /// The access token is signed again with GoTrue's claims (`role`, `email`, `phone`,
    /// `app_metadata`, `user_metadata`, `session_id`) for the same session: what a Supabase app's
    /// `getClaims()` and row-level security read.
    /// `identityKeys`: a sign-up by address and password, which writes GoTrue's identity keys
    /// after `data` (`GoTrueMetadata.signUpData`).
    func session(_ session: SessionPayload, applying data: [String: JSONValue]? = nil, identityKeys: Bool = false) async throws -> GoTrueSession {
        let signedIn = try await authenticator.signedIn(token: session.accessToken)
        var user = signedIn.user
        if let patch = GoTrueMetadata.patch(from: identityKeys ? GoTrueMetadata.signUpData(data, of: user) : data) {
            _ = try await profiles.patch(signedIn, patch)
            guard let fresh = try await store.user(id: user.id) else { throw Self.noUser }
            user = fresh
        }
        let shaped = try await goTrueUser(user)
        let claims = SupabaseClaims(appMetadata: shaped.appMetadata, userMetadata: shaped.userMetadata)
        // The app's claims the native token was just signed with (`CUSTOM_ACCESS_TOKEN`) stay.
        let signed = try await tokens.session(
            for: user, session: signedIn.session, refreshToken: session.refreshToken, in: store, supabase: claims,
            app: AccessTokens.appClaims(of: session.accessToken))
        return GoTrueSession(signed, user: shaped)
    }

    func goTrueUser(id: UserID) async throws -> GoTrueUser {
        guard let user = try await store.user(id: id) else { throw Self.noUser }
        return try await goTrueUser(user)
    }

    func goTrueUser(_ user: User) async throws -> GoTrueUser {
        let identities = try await store.identities(of: user.id)
        // This server's own sign-ins are its sessions; an imported account's earlier one is kept on it.
        let lastSignIn = (try await store.sessions(of: user.id).map(\.createdAt) + [user.lastSignInAt].compactMap { $0 }).max()
        var shaped = GoTrueUser(user, identities: identities, lastSignInAt: lastSignIn)
        let factors = try await store.mfaFactors(of: user.id).map(GoTrueFactor.init)
        shaped.factors = factors.isEmpty ? nil : factors
        return shaped
    }
}
