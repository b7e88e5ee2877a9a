import Foundation
import GatehouseWire

/// A registration ceremony opened by the server, in the terms
/// `ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier:)` and its
/// `createCredentialRegistrationRequest(challenge:name:userID:)` take.
public struct PasskeyRegistrationOptions: Sendable, Equatable {
    /// Hand back to `registerPasskey(_:credential:name:)`.
    public var challengeID: String
    /// The relying party, the domain the passkeys belong to, for `relyingPartyIdentifier:`; the
    /// app's associated domains list it under `webcredentials:`.
    public var relyingPartyID: String
    /// The server's one-time challenge, raw bytes, for the request's `challenge:`.
    public var challenge: Data
    /// The user handle: the account's id, never personal data.
    public var userID: Data
    /// What the passkey is listed under on the device.
    public var userName: String
    /// The account's passkeys (set `excludedCredentials` so the device makes no second one).
    public var excludedCredentialIDs: [Data]
    /// `required` or `preferred` (the request's `userVerificationPreference`).
    public var userVerification: String
    /// When the server stops accepting this ceremony (RFC 3339); ask for new options after it.
    public var expiresAt: String

    /// Makes options, e.g. for a ``PasskeyAuthenticator`` test double; the SDK makes them from
    /// the server's answer (`passkeyRegistrationOptions(email:)`).
    ///
    /// - Parameters:
    ///   - challengeID: The server's id for the ceremony.
    ///   - relyingPartyID: The domain the passkey belongs to.
    ///   - challenge: The one-time challenge, raw bytes.
    ///   - userID: The user handle, raw bytes.
    ///   - userName: What the passkey is listed under on the device.
    ///   - excludedCredentialIDs: The account's passkeys, raw credential ids.
    ///   - userVerification: `required` or `preferred`.
    ///   - expiresAt: When the ceremony ends (RFC 3339).
    public init(
        challengeID: String, relyingPartyID: String, challenge: Data, userID: Data, userName: String, excludedCredentialIDs: [Data],
        userVerification: String, expiresAt: String
    ) {
        self.challengeID = challengeID
        self.relyingPartyID = relyingPartyID
        self.challenge = challenge
        self.userID = userID
        self.userName = userName
        self.excludedCredentialIDs = excludedCredentialIDs
        self.userVerification = userVerification
        self.expiresAt = expiresAt
    }
}

/// What `ASAuthorizationPlatformPublicKeyCredentialRegistration` gives back.
public struct PasskeyRegistration: Sendable, Equatable {
    /// `credentialID`.
    public var credentialID: Data
    /// `rawClientDataJSON`.
    public var clientDataJSON: Data
    /// `rawAttestationObject`.
    public var attestationObject: Data

    /// Makes the result from the fields of
    /// `ASAuthorizationPlatformPublicKeyCredentialRegistration`, in a ``PasskeyAuthenticator``'s
    /// `register(_:)`.
    ///
    /// - Parameters:
    ///   - credentialID: Its `credentialID`.
    ///   - clientDataJSON: Its `rawClientDataJSON`.
    ///   - attestationObject: Its `rawAttestationObject`.
    public init(credentialID: Data, clientDataJSON: Data, attestationObject: Data) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
    }
}

/// A sign-in ceremony opened by the server, in the terms
/// `createCredentialAssertionRequest(challenge:)` takes.
public struct PasskeySignInOptions: Sendable, Equatable {
    /// Hand back to `signInWithPasskey(_:assertion:)`.
    public var challengeID: String
    /// The relying party, the domain the passkeys belong to, for `relyingPartyIdentifier:`; the
    /// app's associated domains list it under `webcredentials:`.
    public var relyingPartyID: String
    /// The server's one-time challenge, raw bytes, for the request's `challenge:`.
    public var challenge: Data
    /// Empty for a discoverable sign-in; otherwise set `allowedCredentials` to these.
    public var allowedCredentialIDs: [Data]
    /// `required` or `preferred` (the request's `userVerificationPreference`).
    public var userVerification: String
    /// When the server stops accepting this ceremony (RFC 3339); ask for new options after it.
    public var expiresAt: String

    /// Makes options, e.g. for a ``PasskeyAuthenticator`` test double; the SDK makes them from
    /// the server's answer (`passkeySignInOptions(email:)`).
    ///
    /// - Parameters:
    ///   - challengeID: The server's id for the ceremony.
    ///   - relyingPartyID: The domain the passkey belongs to.
    ///   - challenge: The one-time challenge, raw bytes.
    ///   - allowedCredentialIDs: The passkeys the device may use, raw credential ids; empty
    ///     for a discoverable sign-in.
    ///   - userVerification: `required` or `preferred`.
    ///   - expiresAt: When the ceremony ends (RFC 3339).
    public init(
        challengeID: String, relyingPartyID: String, challenge: Data, allowedCredentialIDs: [Data], userVerification: String,
        expiresAt: String
    ) {
        self.challengeID = challengeID
        self.relyingPartyID = relyingPartyID
        self.challenge = challenge
        self.allowedCredentialIDs = allowedCredentialIDs
        self.userVerification = userVerification
        self.expiresAt = expiresAt
    }
}

/// What `ASAuthorizationPlatformPublicKeyCredentialAssertion` gives back.
public struct PasskeyAssertion: Sendable, Equatable {
    /// `credentialID`.
    public var credentialID: Data
    /// `rawClientDataJSON`.
    public var clientDataJSON: Data
    /// `rawAuthenticatorData`.
    public var authenticatorData: Data
    /// `signature`.
    public var signature: Data
    /// `userID`.
    public var userID: Data?

    /// Makes the result from the fields of `ASAuthorizationPlatformPublicKeyCredentialAssertion`,
    /// in a ``PasskeyAuthenticator``'s `signIn(_:)`.
    ///
    /// - Parameters:
    ///   - credentialID: Its `credentialID`.
    ///   - clientDataJSON: Its `rawClientDataJSON`.
    ///   - authenticatorData: Its `rawAuthenticatorData`.
    ///   - signature: Its `signature`.
    ///   - userID: Its `userID`, the user handle; nil when the device gave none.
    public init(credentialID: Data, clientDataJSON: Data, authenticatorData: Data, signature: Data, userID: Data?) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userID = userID
    }

    /// The contract's `{challenge_id, credential}` for this assertion.
    func request(_ challengeID: String) -> PasskeyAssertionRequest {
        let id = credentialID.base64URLEncoded
        return PasskeyAssertionRequest(
            challengeID: challengeID,
            credential: PasskeyAssertionCredential(
                id: id, rawId: id,
                response: .init(
                    clientDataJSON: clientDataJSON.base64URLEncoded, authenticatorData: authenticatorData.base64URLEncoded,
                    signature: signature.base64URLEncoded, userHandle: userID?.base64URLEncoded),
                authenticatorAttachment: "platform"))
    }
}

/// What a registration did: a passkey added to the signed-in account (an anonymous one is
/// upgraded, keeping its id), or a new account signed in.
public enum PasskeyRegistrationOutcome: Sendable, Equatable {
    /// The passkey was added to the signed-in account (an anonymous one is now permanent).
    case added(PasskeyPayload)
    /// Nobody was signed in: a new account with this passkey, now signed in.
    case signedUp(SignInResult)
}

/// The device's half of a passkey ceremony. In an iOS app it presents
/// `ASAuthorizationController` with `ASAuthorizationPlatformPublicKeyCredentialProvider`
/// (docs/sdk.md shows one in full); the flow models and `signInWithPasskey(using:email:)` and
/// `addPasskey(using:email:name:)` call it between the server's options and its verification.
/// Throw `CancellationError` when the person closed the sheet (`ASAuthorizationError.canceled`);
/// any other error means the device could not do it. Both run on the main actor, where
/// `ASAuthorizationController` lives.
public protocol PasskeyAuthenticator: Sendable {
    /// Makes a passkey for these options and returns its raw fields.
    @MainActor func register(_ options: PasskeyRegistrationOptions) async throws -> PasskeyRegistration
    /// Signs these options' challenge with a passkey the person picks.
    @MainActor func signIn(_ options: PasskeySignInOptions) async throws -> PasskeyAssertion
}

extension Gatehouse {
    // MARK: Passkeys, whole ceremonies

    /// Options, the device, verification: a passkey sign-in in one call. Without `email` the
    /// device offers the passkeys it holds for this app.
    @discardableResult
    public func signInWithPasskey(using device: some PasskeyAuthenticator, email: String? = nil) async throws(GatehouseClientError)
        -> SignInResult
    {
        let options = try await passkeySignInOptions(email: email)
        let assertion: PasskeyAssertion
        do {
            assertion = try await device.signIn(options)
        } catch {
            throw deviceFailure(error)
        }
        return try await signInWithPasskey(options, assertion: assertion)
    }

    /// Options, the device, verification: a passkey for the signed-in account (an anonymous one
    /// is upgraded and keeps its id), or, signed out, a new account with a passkey only.
    @discardableResult
    public func addPasskey(using device: some PasskeyAuthenticator, email: String? = nil, name: String? = nil)
        async throws(GatehouseClientError) -> PasskeyRegistrationOutcome
    {
        try await register(using: device, email: email, name: name, auth: .optional)
    }

    /// A passkey for the signed-in account only: `not_signed_in` without a session, never a new
    /// account (an expired session must not turn "add a passkey" into a sign-up).
    func addPasskeyToAccount(using device: some PasskeyAuthenticator, name: String?) async throws(GatehouseClientError) -> PasskeyPayload {
        guard case .added(let passkey) = try await register(using: device, email: nil, name: name, auth: .required) else {
            throw Self.invalidResponse
        }
        return passkey
    }

    private func register(using device: some PasskeyAuthenticator, email: String?, name: String?, auth: Auth)
        async throws(GatehouseClientError) -> PasskeyRegistrationOutcome
    {
        let options = try await registrationOptions(email: email, auth: auth)
        let credential: PasskeyRegistration
        do {
            credential = try await device.register(options)
        } catch {
            throw deviceFailure(error)
        }
        return try await registerPasskey(options, credential: credential, name: name, auth: auth)
    }

    /// Whether the preset enables passkeys: its configuration loaded now, or else the last one
    /// known (offline); false when none was ever loaded.
    func offersPasskeys() async -> Bool {
        await enabledMethods().contains("passkey")
    }

    private func deviceFailure(_ error: any Error) -> GatehouseClientError {
        if error is CancellationError {
            return GatehouseClientError(code: .passkeyCancelled, message: text("passkey.cancelled", "Cancelled."))
        }
        return GatehouseClientError(
            code: .passkeyUnavailable, message: text("passkey.unavailable", "This device couldn't use a passkey. Try again, or sign in another way."))
    }

    // MARK: Passkeys

    /// `POST /v1/passkeys/registration/options`. Signed in: a passkey for this account (a
    /// sign-in in the last five minutes, or an anonymous account). Signed out: a passkey
    /// sign-up, with `email` if the app asks for one.
    public func passkeyRegistrationOptions(email: String? = nil) async throws(GatehouseClientError) -> PasskeyRegistrationOptions {
        try await registrationOptions(email: email, auth: .optional)
    }

    private func registrationOptions(email: String?, auth: Auth) async throws(GatehouseClientError) -> PasskeyRegistrationOptions {
        let answer = try await call(Endpoints.passkeyRegistrationOptions, body: PasskeyOptionsRequest(email: email), auth: auth)
        let options = answer.options
        return PasskeyRegistrationOptions(
            challengeID: answer.challengeID, relyingPartyID: options.rp.id, challenge: try Self.bytes(options.challenge),
            userID: try Self.bytes(options.user.id), userName: options.user.name,
            excludedCredentialIDs: try options.excludeCredentials.map { descriptor throws(GatehouseClientError) in try Self.bytes(descriptor.id) },
            userVerification: options.authenticatorSelection.userVerification, expiresAt: answer.expiresAt)
    }

    /// `POST /v1/passkeys/registration/verify` with what the device made.
    @discardableResult
    public func registerPasskey(_ options: PasskeyRegistrationOptions, credential: PasskeyRegistration, name: String? = nil)
        async throws(GatehouseClientError) -> PasskeyRegistrationOutcome
    {
        try await registerPasskey(options, credential: credential, name: name, auth: .optional)
    }

    private func registerPasskey(_ options: PasskeyRegistrationOptions, credential: PasskeyRegistration, name: String?, auth: Auth)
        async throws(GatehouseClientError) -> PasskeyRegistrationOutcome
    {
        let id = credential.credentialID.base64URLEncoded
        let body = PasskeyRegistrationRequest(
            challengeID: options.challengeID,
            credential: PasskeyRegistrationCredential(
                id: id, rawId: id,
                response: .init(
                    clientDataJSON: credential.clientDataJSON.base64URLEncoded,
                    attestationObject: credential.attestationObject.base64URLEncoded, transports: ["internal", "hybrid"]),
                authenticatorAttachment: "platform"),
            name: name)
        let answer = try await call(Endpoints.verifyPasskeyRegistration, body: body, auth: auth)
        if let user = answer.user, let session = answer.session {
            try begin(session, user: user, provider: .passkey)
            return .signedUp(SignInResult(user: user, created: true))
        }
        guard let passkey = answer.passkey else { throw Self.invalidResponse }
        // An anonymous account is permanent now: the state shows it.
        _ = try? await refreshUser()
        return .added(passkey)
    }

    /// `POST /v1/passkeys/authentication/options`: `email` lists that account's passkeys;
    /// without one the device offers those it holds (discoverable).
    public func passkeySignInOptions(email: String? = nil) async throws(GatehouseClientError) -> PasskeySignInOptions {
        let answer = try await call(Endpoints.passkeyAuthenticationOptions, body: PasskeyOptionsRequest(email: email), auth: .none)
        let options = answer.options
        return PasskeySignInOptions(
            challengeID: answer.challengeID, relyingPartyID: options.rpId, challenge: try Self.bytes(options.challenge),
            allowedCredentialIDs: try options.allowCredentials.map { descriptor throws(GatehouseClientError) in try Self.bytes(descriptor.id) },
            userVerification: options.userVerification, expiresAt: answer.expiresAt)
    }

    /// `POST /v1/passkeys/authentication/verify` with what the device signed.
    @discardableResult
    public func signInWithPasskey(_ options: PasskeySignInOptions, assertion: PasskeyAssertion) async throws(GatehouseClientError)
        -> SignInResult
    {
        let answer = try await call(Endpoints.verifyPasskeyAuthentication, body: assertion.request(options.challengeID), auth: .none)
        let response = try session(of: answer, provider: .passkey)
        try begin(response.session, user: response.user, provider: .passkey)
        return SignInResult(user: response.user, created: false)
    }

    /// `GET /v1/passkeys`.
    public func passkeys() async throws(GatehouseClientError) -> [PasskeyPayload] {
        try await call(Endpoints.passkeys, auth: .required).passkeys
    }

    /// `PATCH /v1/passkeys/{id}`.
    @discardableResult
    public func renamePasskey(id: String, name: String) async throws(GatehouseClientError) -> PasskeyPayload {
        try await call(Endpoints.renamePasskey, id, body: PasskeyRenameRequest(name: name), auth: .required).passkey
    }

    /// `DELETE /v1/passkeys/{id}`; never the account's last way in (`last_identity`).
    public func deletePasskey(id: String) async throws(GatehouseClientError) {
        try await call(Endpoints.deletePasskey, id, auth: .required)
    }

    static func bytes(_ base64URL: String) throws(GatehouseClientError) -> Data {
        guard let data = Data(base64URLEncoded: base64URL) else { throw invalidResponse }
        return data
    }
}
