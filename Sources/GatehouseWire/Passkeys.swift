// Passkeys: the calls' bodies and answers. What sits under `options` and `credential` is
// WebAuthn Level 3's JSON forms (camelCase keys, binary members base64url without padding),
// so a browser's `PublicKeyCredential.parseCreationOptionsFromJSON` and `toJSON()` fit them
// as they are; the SDK turns them into what `ASAuthorization…` takes and gives.

/// `PublicKeyCredentialCreationOptionsJSON` (WebAuthn §5.4).
public struct PasskeyCreationOptions: Codable, Sendable, Hashable {
    public struct RelyingParty: Codable, Sendable, Hashable {
        public var id: String
        public var name: String
        public init(id: String, name: String) {
            self.id = id
            self.name = name
        }
        enum CodingKeys: String, CodingKey { case id, name }
    }

    public struct User: Codable, Sendable, Hashable {
        /// The user handle, base64url: Gatehouse's user id as UTF-8, never personal data.
        public var id: String
        public var name: String
        public var displayName: String
        public init(id: String, name: String, displayName: String) {
            self.id = id
            self.name = name
            self.displayName = displayName
        }
        enum CodingKeys: String, CodingKey { case id, name, displayName }
    }

    public struct Parameters: Codable, Sendable, Hashable {
        public var type: String
        public var alg: Int
        public init(type: String, alg: Int) {
            self.type = type
            self.alg = alg
        }
        enum CodingKeys: String, CodingKey { case type, alg }
    }

    public struct Selection: Codable, Sendable, Hashable {
        public var residentKey: String
        public var requireResidentKey: Bool
        public var userVerification: String
        public init(residentKey: String, requireResidentKey: Bool, userVerification: String) {
            self.residentKey = residentKey
            self.requireResidentKey = requireResidentKey
            self.userVerification = userVerification
        }
        enum CodingKeys: String, CodingKey { case residentKey, requireResidentKey, userVerification }
    }

    public var rp: RelyingParty
    public var user: User
    /// base64url.
    public var challenge: String
    public var pubKeyCredParams: [Parameters]
    /// Milliseconds.
    public var timeout: Int
    /// The account's passkeys, so the device does not make a second one.
    public var excludeCredentials: [PasskeyDescriptor]
    public var authenticatorSelection: Selection
    public var attestation: String

    public init(
        rp: RelyingParty, user: User, challenge: String, pubKeyCredParams: [Parameters], timeout: Int,
        excludeCredentials: [PasskeyDescriptor], authenticatorSelection: Selection, attestation: String
    ) {
        self.rp = rp
        self.user = user
        self.challenge = challenge
        self.pubKeyCredParams = pubKeyCredParams
        self.timeout = timeout
        self.excludeCredentials = excludeCredentials
        self.authenticatorSelection = authenticatorSelection
        self.attestation = attestation
    }
    enum CodingKeys: String, CodingKey {
        case rp, user, challenge, pubKeyCredParams, timeout, excludeCredentials, authenticatorSelection, attestation
    }
}

/// `PublicKeyCredentialRequestOptionsJSON` (WebAuthn §5.5).
public struct PasskeyRequestOptions: Codable, Sendable, Hashable {
    /// base64url.
    public var challenge: String
    /// Milliseconds.
    public var timeout: Int
    public var rpId: String
    /// Empty for a discoverable sign-in: the device offers the passkeys it has for the rp id.
    public var allowCredentials: [PasskeyDescriptor]
    public var userVerification: String
    public init(challenge: String, timeout: Int, rpId: String, allowCredentials: [PasskeyDescriptor], userVerification: String) {
        self.challenge = challenge
        self.timeout = timeout
        self.rpId = rpId
        self.allowCredentials = allowCredentials
        self.userVerification = userVerification
    }
    enum CodingKeys: String, CodingKey { case challenge, timeout, rpId, allowCredentials, userVerification }
}

/// `PublicKeyCredentialDescriptorJSON`.
public struct PasskeyDescriptor: Codable, Sendable, Hashable {
    public var type: String
    /// The credential id, base64url.
    public var id: String
    public var transports: [String]?
    public init(type: String = "public-key", id: String, transports: [String]? = nil) {
        self.type = type
        self.id = id
        self.transports = transports
    }
    enum CodingKeys: String, CodingKey { case type, id, transports }
}

/// `RegistrationResponseJSON` and `AuthenticationResponseJSON` (WebAuthn §5.1): what the
/// device made or signed, as `toJSON()` gives it.
public struct PasskeyCredential<Response: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
    /// The credential id, base64url (the same as `rawId`).
    public var id: String
    public var rawId: String
    public var type: String
    public var response: Response
    public var authenticatorAttachment: String?
    public init(id: String, rawId: String, type: String = "public-key", response: Response, authenticatorAttachment: String? = nil) {
        self.id = id
        self.rawId = rawId
        self.type = type
        self.response = response
        self.authenticatorAttachment = authenticatorAttachment
    }
    enum CodingKeys: String, CodingKey { case id, rawId, type, response, authenticatorAttachment }
}

public typealias PasskeyRegistrationCredential = PasskeyCredential<PasskeyAttestationResponse>
public typealias PasskeyAssertionCredential = PasskeyCredential<PasskeyAssertionResponse>

/// `AuthenticatorAttestationResponseJSON`.
public struct PasskeyAttestationResponse: Codable, Sendable, Hashable {
    public var clientDataJSON: String
    public var attestationObject: String
    public var transports: [String]?
    public init(clientDataJSON: String, attestationObject: String, transports: [String]? = nil) {
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
    }
    enum CodingKeys: String, CodingKey { case clientDataJSON, attestationObject, transports }
}

/// `AuthenticatorAssertionResponseJSON`.
public struct PasskeyAssertionResponse: Codable, Sendable, Hashable {
    public var clientDataJSON: String
    public var authenticatorData: String
    public var signature: String
    public var userHandle: String?
    public init(clientDataJSON: String, authenticatorData: String, signature: String, userHandle: String? = nil) {
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
    }
    enum CodingKeys: String, CodingKey { case clientDataJSON, authenticatorData, signature, userHandle }
}

/// `POST /v1/passkeys/registration/options` and `/authentication/options`: an address for a
/// passkey sign-up (optional) or a sign-in by email (none: discoverable).
public struct PasskeyOptionsRequest: Codable, Sendable, Hashable {
    public var email: String?
    public init(email: String? = nil) { self.email = email }
    enum CodingKeys: String, CodingKey { case email }
}

/// `{challenge_id, options, expires_at}`: an open ceremony (its options are WebAuthn's).
public struct PasskeyCeremony<Options: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
    public var challengeID: String
    public var options: Options
    /// RFC 3339.
    public var expiresAt: String
    public init(challengeID: String, options: Options, expiresAt: String) {
        self.challengeID = challengeID
        self.options = options
        self.expiresAt = expiresAt
    }
    enum CodingKeys: String, CodingKey {
        case challengeID = "challenge_id"
        case options
        case expiresAt = "expires_at"
    }
}

/// A registration's ceremony.
public typealias PasskeyCreationChallenge = PasskeyCeremony<PasskeyCreationOptions>
/// A sign-in's ceremony.
public typealias PasskeyRequestChallenge = PasskeyCeremony<PasskeyRequestOptions>

/// `POST /v1/passkeys/registration/verify`.
public struct PasskeyRegistrationRequest: Codable, Sendable, Hashable {
    public var challengeID: String
    public var credential: PasskeyRegistrationCredential
    /// What the person calls it ("iPhone"); the server names it when absent.
    public var name: String?
    public init(challengeID: String, credential: PasskeyRegistrationCredential, name: String? = nil) {
        self.challengeID = challengeID
        self.credential = credential
        self.name = name
    }
    enum CodingKeys: String, CodingKey {
        case challengeID = "challenge_id"
        case credential, name
    }
}

/// `POST /v1/passkeys/authentication/verify`, and the passkey proof of `DELETE /v1/me`.
public struct PasskeyAssertionRequest: Codable, Sendable, Hashable {
    public var challengeID: String
    public var credential: PasskeyAssertionCredential
    public init(challengeID: String, credential: PasskeyAssertionCredential) {
        self.challengeID = challengeID
        self.credential = credential
    }
    enum CodingKeys: String, CodingKey {
        case challengeID = "challenge_id"
        case credential
    }
}

/// A passkey as the account's owner sees it. `last_used_at` is `null` until its first sign-in.
public struct PasskeyPayload: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    public var createdAt: String
    public var lastUsedAt: String?
    /// Whether the passkey is synced (iCloud Keychain, a password manager): BS as last seen.
    public var backedUp: Bool
    public init(id: String, name: String, createdAt: String, lastUsedAt: String?, backedUp: Bool) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.backedUp = backedUp
    }
    enum CodingKeys: String, CodingKey {
        case id, name
        case createdAt = "created_at"
        case lastUsedAt = "last_used_at"
        case backedUp = "backed_up"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(lastUsedAt, forKey: .lastUsedAt)
        try container.encode(backedUp, forKey: .backedUp)
    }
}

/// The answer of a registration: `{passkey}` (200) when a signed-in account added it,
/// `{user, session}` (201) when it made a new account.
public struct PasskeyRegistrationResponse: Codable, Sendable, Hashable {
    public var passkey: PasskeyPayload?
    public var user: UserPayload?
    public var session: SessionPayload?
    public init(passkey: PasskeyPayload? = nil, user: UserPayload? = nil, session: SessionPayload? = nil) {
        self.passkey = passkey
        self.user = user
        self.session = session
    }
    enum CodingKeys: String, CodingKey { case passkey, user, session }
}

/// `{passkey}`.
public struct PasskeyResponse: Codable, Sendable, Hashable {
    public var passkey: PasskeyPayload
    public init(passkey: PasskeyPayload) { self.passkey = passkey }
    enum CodingKeys: String, CodingKey { case passkey }
}

/// `GET /v1/passkeys`.
public struct PasskeysResponse: Codable, Sendable, Hashable {
    public var passkeys: [PasskeyPayload]
    public init(passkeys: [PasskeyPayload]) { self.passkeys = passkeys }
    enum CodingKeys: String, CodingKey { case passkeys }
}

/// `PATCH /v1/passkeys/{id}`.
public struct PasskeyRenameRequest: Codable, Sendable, Hashable {
    public var name: String
    public init(name: String) { self.name = name }
    enum CodingKeys: String, CodingKey { case name }
}
