/// Every route the server serves, each declared once (STYLE rule 15): the SDK calls through
/// these and the router registers them. `docs/openapi.yaml` documents the same operations, and
/// `OpenAPITests` holds the three to one set.
public enum Endpoints {
    // MARK: Operations

    /// `ok`, or 503 `unavailable` when the database cannot be reached.
    public static let health = Endpoint<NoBody, HealthResponse>(.get, "/health", .anyone)
    /// The public keys that verify access tokens.
    public static let jwks = Endpoint<NoBody, JSONWebKeySet>(.get, "/.well-known/jwks.json", .anyone)
    /// The preset as a device needs it (GatehouseCore's `PublicConfiguration`).
    public static let configuration = Endpoint<NoBody, OpaqueJSON>(.get, "/v1/config", .anyone)
    /// `docs/openapi.yaml`.
    public static let openAPI = Endpoint<NoBody, YAMLDocument>(.get, "/openapi.yaml", .anyone)
    /// `webcredentials` and `applinks` for the configured `GATEHOUSE_APPLE_APP_IDS`.
    public static let appleAppSiteAssociation = Endpoint<NoBody, OpaqueJSON>(.get, "/.well-known/apple-app-site-association", .anyone)
    /// W3C's well-known URL for passkey endpoints: where to enroll and manage passkeys.
    public static let passkeyEndpoints = Endpoint<NoBody, OpaqueJSON>(.get, "/.well-known/passkey-endpoints", .anyone)

    // MARK: Sign-up and sign-in

    public static let signUp = Endpoint<EmailPasswordRequest, SignInAnswer<AuthResponse>>(.post, "/v1/auth/signup", .anyone)
    public static let logIn = Endpoint<EmailPasswordRequest, SignInAnswer<AuthResponse>>(.post, "/v1/auth/login", .anyone)
    /// Takes an `Idempotency-Key` header.
    public static let signInAnonymously = Endpoint<NoBody, AnonymousResponse>(.post, "/v1/auth/anonymous", .anyone)
    public static let signInWithApple = Endpoint<ProviderSignInRequest, SignInAnswer<SignInResponse>>(.post, "/v1/auth/apple", .anyone)
    public static let signInWithGoogle = Endpoint<ProviderSignInRequest, SignInAnswer<SignInResponse>>(.post, "/v1/auth/google", .anyone)
    /// Mails a link and a 6-digit code (202).
    public static let sendMagicLink = Endpoint<MagicLinkRequest, NoContent>(.post, "/v1/auth/magic-link", .optionalSession)
    public static let verifyMagicLink = Endpoint<MagicLinkVerifyRequest, SignInAnswer<SignInResponse>>(.post, "/v1/auth/magic-link/verify", .anyone)
    public static let refresh = Endpoint<RefreshRequest, SessionResponse>(.post, "/v1/auth/refresh", .anyone)

    // MARK: Phone numbers

    /// Texts a 6-digit code to the number (202, the same whether or not it has an account).
    public static let sendPhoneCode = Endpoint<PhoneCodeRequest, NoContent>(.post, "/v1/auth/phone/code", .anyone)
    /// Signs in with the code, or signs up where the preset allows it.
    public static let verifyPhoneCode = Endpoint<PhoneVerifyRequest, SignInAnswer<SignInResponse>>(.post, "/v1/auth/phone/verify", .anyone)
    /// Texts a code to a number to add to (or change on) the profile: a sign-in in the last 5 minutes.
    public static let addPhone = Endpoint<PhoneChangeRequest, NoContent>(.post, "/v1/me/phone", .session)
    /// The new number's code: the number becomes the account's, verified.
    public static let verifyPhone = Endpoint<PhoneCodeProof, UserResponse>(.post, "/v1/me/phone/verify", .session)
    /// Never the account's last way in (409 `last_identity`).
    public static let removePhone = Endpoint<NoBody, NoContent>(.delete, "/v1/me/phone", .session)

    // MARK: Passkeys

    /// With a Bearer: a passkey for this account (a sign-in in the last 5 minutes, or an
    /// anonymous account, which it upgrades); without: a passkey sign-up.
    public static let passkeyRegistrationOptions = Endpoint<PasskeyOptionsRequest, PasskeyCreationChallenge>(
        .post, "/v1/passkeys/registration/options", .optionalSession)
    /// 200 `{passkey}` with a Bearer, 201 `{user, session}` for a sign-up.
    public static let verifyPasskeyRegistration = Endpoint<PasskeyRegistrationRequest, PasskeyRegistrationResponse>(
        .post, "/v1/passkeys/registration/verify", .optionalSession)
    /// `email` for a sign-in by address; none for a discoverable one.
    public static let passkeyAuthenticationOptions = Endpoint<PasskeyOptionsRequest, PasskeyRequestChallenge>(
        .post, "/v1/passkeys/authentication/options", .anyone)
    public static let verifyPasskeyAuthentication = Endpoint<PasskeyAssertionRequest, SignInAnswer<AuthResponse>>(
        .post, "/v1/passkeys/authentication/verify", .anyone)
    public static let passkeys = Endpoint<NoBody, PasskeysResponse>(.get, "/v1/passkeys", .session)
    public static let renamePasskey = Endpoint<PasskeyRenameRequest, PasskeyResponse>(.patch, "/v1/passkeys/{id}", .session)
    /// Never the account's last way in (409 `last_identity`).
    public static let deletePasskey = Endpoint<NoBody, NoContent>(.delete, "/v1/passkeys/{id}", .session)

    // MARK: Second factors

    /// Enrolls a TOTP factor (unverified until confirmed): a sign-in in the last 5 minutes, and
    /// `aal2` once the account has a factor.
    public static let enrollMFAFactor = Endpoint<MFAEnrollRequest, MFAEnrollment>(.post, "/v1/mfa/factors", .session)
    /// The first code; the account's first factor also answers its recovery codes.
    public static let confirmMFAFactor = Endpoint<MFACodeRequest, MFAConfirmResponse>(.post, "/v1/mfa/factors/{id}/confirm", .session)
    public static let mfaFactors = Endpoint<NoBody, MFAFactorsResponse>(.get, "/v1/mfa/factors", .session)
    public static let renameMFAFactor = Endpoint<MFARenameRequest, MFAFactorResponse>(.patch, "/v1/mfa/factors/{id}", .session)
    public static let deleteMFAFactor = Endpoint<NoBody, NoContent>(.delete, "/v1/mfa/factors/{id}", .session)
    /// Ten new recovery codes; the old ones die.
    public static let regenerateRecoveryCodes = Endpoint<NoBody, RecoveryCodesResponse>(.post, "/v1/mfa/recovery-codes", .session)
    /// Completes a sign-in's challenge, or (Bearer, no `challenge_id`) steps the session up.
    public static let verifyMFA = Endpoint<MFAVerifyRequest, MFAVerifyResponse>(.post, "/v1/auth/mfa/verify", .optionalSession)

    // MARK: Email and password

    /// Signed in: sends the verification mail again (202).
    public static let resendVerification = Endpoint<NoBody, NoContent>(.post, "/v1/auth/email/verification", .session)
    public static let verifyEmail = Endpoint<TokenRequest, UserResponse>(.post, "/v1/auth/email/verify", .anyone)
    /// 202 whether or not the address has an account.
    public static let forgotPassword = Endpoint<EmailRequest, NoContent>(.post, "/v1/auth/password/forgot", .anyone)
    public static let resetPassword = Endpoint<PasswordResetRequest, NoContent>(.post, "/v1/auth/password/reset", .anyone)
    public static let changePassword = Endpoint<PasswordChangeRequest, UserResponse>(.post, "/v1/auth/password/change", .session)

    // MARK: Sessions

    public static let logOut = Endpoint<LogoutRequest, NoContent>(.post, "/v1/auth/logout", .session)
    public static let sessions = Endpoint<NoBody, SessionsResponse>(.get, "/v1/auth/sessions", .session)
    public static let revokeSession = Endpoint<NoBody, NoContent>(.delete, "/v1/auth/sessions/{id}", .session)

    // MARK: Identities

    public static let linkEmail = Endpoint<EmailPasswordRequest, UserResponse>(.post, "/v1/auth/identities/email", .session)
    public static let linkApple = Endpoint<ProviderSignInRequest, UserResponse>(.post, "/v1/auth/identities/apple", .session)
    public static let linkGoogle = Endpoint<ProviderSignInRequest, UserResponse>(.post, "/v1/auth/identities/google", .session)
    /// Any provider. The router also registers the three literal paths below, because it does
    /// not fall back from a literal segment (`email`, taken by the POST routes) to a parameter;
    /// a caller uses this one for all of them.
    public static let unlinkIdentity = Endpoint<NoBody, NoContent>(.delete, "/v1/auth/identities/{provider}", .session)
    public static let unlinkEmail = Endpoint<NoBody, NoContent>(.delete, "/v1/auth/identities/email", .session)
    public static let unlinkApple = Endpoint<NoBody, NoContent>(.delete, "/v1/auth/identities/apple", .session)
    public static let unlinkGoogle = Endpoint<NoBody, NoContent>(.delete, "/v1/auth/identities/google", .session)
    /// Signed in to the account to keep, with the other account's `merge_token`.
    public static let merge = Endpoint<MergeRequest, UserResponse>(.post, "/v1/auth/merge", .session)

    // MARK: Account

    public static let me = Endpoint<NoBody, MeResponse>(.get, "/v1/me", .session)
    public static let updateProfile = Endpoint<ProfilePatch, UserResponse>(.patch, "/v1/me", .session)
    public static let deleteAccount = Endpoint<DeleteAccountRequest, NoContent>(.delete, "/v1/me", .session)
    public static let chooseAnonymousName = Endpoint<AnonymousNameRequest, UserResponse>(.post, "/v1/me/anonymous-name", .session)
    public static let exportData = Endpoint<NoBody, AccountExport>(.get, "/v1/me/export", .session)
    public static let handleAvailability = Endpoint<NoBody, HandleAvailability>(.get, "/v1/handles/{handle}", .anyone)

    // MARK: Entitlements, credits, analytics, usage

    /// With a token the person's snapshot, without one a guest's.
    public static let entitlements = Endpoint<NoBody, EntitlementsPayload>(.get, "/v1/entitlements", .optionalSession)
    public static let checkEntitlement = Endpoint<EntitlementCheckRequest, GateDecision>(.post, "/v1/entitlements/check", .optionalSession)
    public static let spendCredit = Endpoint<CreditSpendRequest, CreditSpendResponse>(.post, "/v1/credits/{name}/spend", .session)
    public static let startTrial = Endpoint<NoBody, EntitlementsPayload>(.post, "/v1/trial/start", .session)
    /// Client analytics, a token optional (202).
    public static let events = Endpoint<ClientEventBatch, NoContent>(.post, "/v1/events", .optionalSession)
    /// From an app's backend with the service key.
    public static let recordUsage = Endpoint<UsageRequest, UsageResponse>(.post, "/v1/usage/{meter}", .serviceKey)

    // MARK: Purchases and Apple's notifications

    /// Signed in: the snapshot with the purchase applied.
    public static let applePurchase = Endpoint<ApplePurchaseRequest, EntitlementsPayload>(.post, "/v1/purchases/apple", .optionalSession)
    /// The same route signed out (decision 21) answers whether an account owns the purchase. Not
    /// in `all`: it is `applePurchase` again.
    public static let applePurchaseRestoreHint = Endpoint<ApplePurchaseRequest, RestoreHint>(applePurchase.method, applePurchase.path, applePurchase.caller)
    public static let appStoreNotification = Endpoint<AppStoreNotificationRequest, NoContent>(.post, "/v1/webhooks/apple/app-store", .anyone)
    public static let appleAccountEvent = Endpoint<AppleEventRequest, NoContent>(.post, "/v1/webhooks/apple/sign-in", .anyone)
    /// A Stripe Checkout Session in subscription mode for the signed-in account (issue 44).
    public static let stripeCheckout = Endpoint<StripeCheckoutRequest, StripeCheckoutResponse>(.post, "/v1/purchases/stripe/checkout", .session)
    /// A Stripe Billing Portal session for the account's customer (404 before any checkout).
    public static let stripePortal = Endpoint<StripePortalRequest, StripePortalResponse>(.post, "/v1/purchases/stripe/portal", .session)
    /// Stripe's events, raw, signed with `Stripe-Signature`.
    public static let stripeWebhook = Endpoint<OpaqueJSON, NoContent>(.post, "/webhooks/stripe", .anyone)
    /// A Google Play subscription purchase for the signed-in account (issue 59): the snapshot.
    public static let googlePlayPurchase = Endpoint<GooglePlayPurchaseRequest, EntitlementsPayload>(.post, "/v1/purchases/google-play", .session)
    /// Google Play's real-time developer notifications, pushed by Cloud Pub/Sub with a
    /// Google-signed OIDC token: 204.
    public static let googlePlayWebhook = Endpoint<OpaqueJSON, NoContent>(.post, "/webhooks/google-play", .anyone)

    // MARK: The OpenID provider, seen from the app (issue 45)

    /// A one-time URL, good for 60 seconds, that opens a client's web surface signed in as the
    /// caller's account (the app's second factor counts only if its session has one).
    public static let handover = Endpoint<HandoverRequest, HandoverResponse>(.post, "/v1/oauth/handover", .session)
    /// The clients the person let in, with what each may read.
    public static let connections = Endpoint<NoBody, ConnectedClientList>(.get, "/v1/me/connections", .session)
    /// Withdraws a client's consent and ends its sessions.
    public static let revokeConnection = Endpoint<NoBody, NoContent>(.delete, "/v1/me/connections/{client}", .session)

    // MARK: Hosted pages (the links mailed)

    public static let verifyEmailPage = Endpoint<NoBody, HTMLPage>(.get, "/auth/verify-email", .anyone)
    public static let verifyEmailForm = Endpoint<FormBody, HTMLPage>(.post, "/auth/verify-email", .anyone)
    public static let resetPasswordPage = Endpoint<NoBody, HTMLPage>(.get, "/auth/reset-password", .anyone)
    public static let resetPasswordForm = Endpoint<FormBody, HTMLPage>(.post, "/auth/reset-password", .anyone)
    public static let magicLinkPage = Endpoint<NoBody, HTMLPage>(.get, "/auth/magic-link", .anyone)
    /// An expired link's "send a new one" button.
    public static let resendLinkForm = Endpoint<FormBody, HTMLPage>(.post, "/auth/resend", .anyone)

    // MARK: Development

    /// Only when `GATEHOUSE_ENV=development`: the mails sent, newest first.
    public static let devOutbox = Endpoint<NoBody, OutboxList>(.get, "/dev/outbox", .anyone)

    // MARK: Admin (the admin key)

    public static let adminUsers = Endpoint<NoBody, AdminUserList>(.get, "/admin/v1/users", .adminKey)
    public static let adminUser = Endpoint<NoBody, AdminUser>(.get, "/admin/v1/users/{id}", .adminKey)
    public static let adminDisableUser = Endpoint<DisableUserRequest, AdminUser>(.post, "/admin/v1/users/{id}/disable", .adminKey)
    public static let adminEnableUser = Endpoint<NoBody, AdminUser>(.post, "/admin/v1/users/{id}/enable", .adminKey)
    public static let adminDeleteUser = Endpoint<NoBody, NoContent>(.delete, "/admin/v1/users/{id}", .adminKey)
    public static let adminSetPlan = Endpoint<PlanOverrideRequest, AdminUser>(.put, "/admin/v1/users/{id}/plan", .adminKey)
    /// Merges `user_metadata` and `app_metadata` (top level, `null` removes a key, 4096 bytes
    /// each); audited `metadata_changed` once per object changed.
    public static let adminSetMetadata = Endpoint<AdminMetadataRequest, AdminUser>(.patch, "/admin/v1/users/{id}/metadata", .adminKey)
    /// A user's second factors, for support (no secrets).
    public static let adminMFAFactors = Endpoint<NoBody, MFAFactorsResponse>(.get, "/admin/v1/users/{id}/mfa/factors", .adminKey)
    /// Removes one factor (audited, mailed to the user): the recovery path when every factor and
    /// recovery code is lost. With no confirmed factor left, the recovery codes go too.
    public static let adminDeleteMFAFactor = Endpoint<NoBody, NoContent>(.delete, "/admin/v1/users/{id}/mfa/factors/{factor}", .adminKey)
    /// Promotional grants: make one (201), list them, revoke one.
    public static let adminCreateGrant = Endpoint<GrantRequest, GrantResponse>(.post, "/admin/v1/users/{id}/grants", .adminKey)
    public static let adminGrants = Endpoint<NoBody, GrantList>(.get, "/admin/v1/users/{id}/grants", .adminKey)
    public static let adminRevokeGrant = Endpoint<NoBody, NoContent>(.delete, "/admin/v1/users/{id}/grants/{grant}", .adminKey)
    /// The OpenID provider's clients: register (201, the secret shown once), list, rotate the
    /// secret, delete (its sessions end).
    public static let adminCreateOAuthClient = Endpoint<OAuthClientRequest, OAuthClientPayload>(.post, "/admin/v1/oauth/clients", .adminKey)
    public static let adminOAuthClients = Endpoint<NoBody, OAuthClientList>(.get, "/admin/v1/oauth/clients", .adminKey)
    public static let adminRotateOAuthClientSecret = Endpoint<NoBody, OAuthClientPayload>(
        .post, "/admin/v1/oauth/clients/{client}/secret", .adminKey)
    public static let adminDeleteOAuthClient = Endpoint<NoBody, NoContent>(.delete, "/admin/v1/oauth/clients/{client}", .adminKey)
    public static let adminEvents = Endpoint<NoBody, EventList>(.get, "/admin/v1/events", .adminKey)
    public static let adminAudit = Endpoint<NoBody, AuditList>(.get, "/admin/v1/audit", .adminKey)
    /// 202 with the queued mail's id.
    public static let adminTestMail = Endpoint<MailTestRequest, MailQueued>(.post, "/admin/v1/mail/test", .adminKey)
    public static let adminKeys = Endpoint<NoBody, JSONWebKeySet>(.get, "/admin/v1/keys", .adminKey)
    public static let adminRotateKeys = Endpoint<NoBody, JSONWebKeySet>(.post, "/admin/v1/keys/rotate", .adminKey)
    public static let adminImportFirebase = Endpoint<FirebaseImportRequest, ImportReport>(.post, "/admin/v1/imports/firebase", .adminKey)
    public static let adminImportSupabase = Endpoint<SupabaseImportRequest, ImportReport>(.post, "/admin/v1/imports/supabase", .adminKey)

    /// Every route above once, in the order declared (`applePurchaseRestoreHint` is
    /// `applePurchase`). `OpenAPITests` holds this list, the router's routes and
    /// `docs/openapi.yaml` to one set, and every declaration above to a place here.
    public static let all: [AnyEndpoint] = [
        health.erased, jwks.erased, configuration.erased, openAPI.erased, appleAppSiteAssociation.erased, passkeyEndpoints.erased,
        signUp.erased, logIn.erased, signInAnonymously.erased, signInWithApple.erased, signInWithGoogle.erased,
        sendMagicLink.erased, verifyMagicLink.erased, refresh.erased,
        sendPhoneCode.erased, verifyPhoneCode.erased, addPhone.erased, verifyPhone.erased, removePhone.erased,
        passkeyRegistrationOptions.erased, verifyPasskeyRegistration.erased, passkeyAuthenticationOptions.erased,
        verifyPasskeyAuthentication.erased, passkeys.erased, renamePasskey.erased, deletePasskey.erased,
        enrollMFAFactor.erased, confirmMFAFactor.erased, mfaFactors.erased, renameMFAFactor.erased, deleteMFAFactor.erased,
        regenerateRecoveryCodes.erased, verifyMFA.erased,
        resendVerification.erased, verifyEmail.erased, forgotPassword.erased, resetPassword.erased, changePassword.erased,
        logOut.erased, sessions.erased, revokeSession.erased,
        linkEmail.erased, linkApple.erased, linkGoogle.erased,
        unlinkIdentity.erased, unlinkEmail.erased, unlinkApple.erased, unlinkGoogle.erased, merge.erased,
        me.erased, updateProfile.erased, deleteAccount.erased, chooseAnonymousName.erased, exportData.erased, handleAvailability.erased,
        entitlements.erased, checkEntitlement.erased, spendCredit.erased, startTrial.erased, events.erased, recordUsage.erased,
        applePurchase.erased, appStoreNotification.erased, appleAccountEvent.erased, stripeCheckout.erased, stripePortal.erased,
        stripeWebhook.erased, googlePlayPurchase.erased, googlePlayWebhook.erased, handover.erased, connections.erased, revokeConnection.erased,
        verifyEmailPage.erased, verifyEmailForm.erased, resetPasswordPage.erased, resetPasswordForm.erased, magicLinkPage.erased,
        resendLinkForm.erased,
        devOutbox.erased,
        adminUsers.erased, adminUser.erased, adminDisableUser.erased, adminEnableUser.erased, adminDeleteUser.erased,
        adminSetPlan.erased, adminSetMetadata.erased, adminMFAFactors.erased, adminDeleteMFAFactor.erased, adminCreateGrant.erased,
        adminGrants.erased, adminRevokeGrant.erased,
        adminCreateOAuthClient.erased, adminOAuthClients.erased, adminRotateOAuthClientSecret.erased, adminDeleteOAuthClient.erased,
        adminEvents.erased, adminAudit.erased, adminTestMail.erased, adminKeys.erased, adminRotateKeys.erased,
        adminImportFirebase.erased, adminImportSupabase.erased,
    ]
}
