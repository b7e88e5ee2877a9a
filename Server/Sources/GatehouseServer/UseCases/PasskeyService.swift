import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Passkeys (WebAuthn Level 3): sign-up with a passkey only, adding one to a signed-in account
/// (which upgrades an anonymous one, keeping its id), signing in with one (discoverable or by
/// address), and listing, renaming and removing them.
struct PasskeyService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdentityStore & ProfileStore & IdempotencyStore & SessionStore & RefreshTokenStore
        & EmailTokenStore & PlanLedgerStore & PasskeyStore & MFAFactorStore & RecoveryCodeStore & MFAChallengeStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let gate: SignInGate
    let sessions: SessionIssuer
    let lifecycle: AccountLifecycle
    let assertions: PasskeyAssertions
    let credentials: Credentials
    let throttle: Throttle
    let ownerProof: OwnerProof
    let mail: AccountMail
    let preset: Preset
    let clock: any WallClock
    /// Keys the decoy credential ids of addresses without passkeys.
    let decoyKey: RefreshChainKey

    /// ES256 only: what every platform authenticator offers, and all the ceremony checks.
    private static let algorithms = [PasskeyCreationOptions.Parameters(type: "public-key", alg: -7)]
    private var relyingParty: RelyingParty { assertions.relyingParty }
    private var timeoutMilliseconds: Int { preset.passkeys.challengeTTLSeconds * 1_000 }

    // MARK: Registration

    /// `POST /v1/passkeys/registration/options`. Signed in: a passkey for this account, which
    /// needs a sign-in in the last five minutes unless the account is anonymous (its session
    /// is all it has). Signed out: a passkey sign-up, with an address if the app asks for one.
    func registrationOptions(_ signedIn: SignedIn?, email: String?, client: ClientInfo) async throws -> PasskeyCreationChallenge {
        try gate.requireMethod(preset.signInMethods.passkey)
        let challenge: PasskeyChallenge
        let userID: UserID
        let name: String
        let displayName: String
        var exclude: [PasskeyDescriptor] = []
        if let signedIn {
            let user = signedIn.user
            // A recent sign-in, and the second factor once the account has one (finding 3).
            try ownerProof.require(signedIn, changing: .passkey, factors: try await store.mfaFactors(of: user.id))
            exclude = try await store.passkeys(of: user.id).map(Self.descriptor)
            userID = user.id
            challenge = try await assertions.open(.registration, user: user.id, session: signedIn.identity.sessionID)
            name = user.email ?? user.handle ?? user.id.description
            displayName = user.displayName ?? user.email ?? preset.app.name
        } else {
            try await throttle.limitIP("signup", client: client, limit: preset.throttling.signupPerIPPerHour, windowSeconds: 3_600)
            let address = try email.map(credentials.canonicalAddress)
            if let address, try await store.user(normalizedEmail: EmailAddress.normalize(address)) != nil {
                throw GatehouseError.emailInUse(preset)
            }
            userID = UserID.random()
            challenge = try await assertions.open(.registration, user: userID, email: address)
            name = address ?? "\(preset.app.name) account"
            displayName = address ?? preset.app.name
        }
        let options = PasskeyCreationOptions(
            rp: .init(id: relyingParty.id, name: preset.app.name),
            user: .init(id: Data(PasskeyAssertions.userHandle(userID)).base64URLEncoded, name: name, displayName: displayName),
            challenge: Data(challenge.challenge).base64URLEncoded, pubKeyCredParams: Self.algorithms, timeout: timeoutMilliseconds,
            excludeCredentials: exclude,
            authenticatorSelection: .init(residentKey: "required", requireResidentKey: true, userVerification: preset.passkeys.userVerification),
            attestation: "none")
        return PasskeyCreationChallenge(challengeID: challenge.id.uuidString.lowercased(), options: options, expiresAt: challenge.expiresAt.rfc3339)
    }

    /// `POST /v1/passkeys/registration/verify`: `.added` for a signed-in account, `.signedUp`
    /// for a new one.
    func verifyRegistration(_ signedIn: SignedIn?, _ request: PasskeyRegistrationRequest, client: ClientInfo) async throws
        -> PasskeyRegistrationResponse
    {
        try gate.requireMethod(preset.signInMethods.passkey)
        let response = request.credential.response
        guard let rawID = Data(base64URLEncoded: request.credential.rawId), let clientData = Data(base64URLEncoded: response.clientDataJSON),
            let attestation = Data(base64URLEncoded: response.attestationObject)
        else { throw PasskeyAssertions.invalidCredential(.malformed) }
        let name = try Self.passkeyName(request.name)
        let challenge = try await assertions.consume(request.challengeID, .registration)
        // A sign-up's challenge cannot add to an account, nor one account's to another's.
        guard let userID = challenge.userID, challenge.sessionID == signedIn?.identity.sessionID,
            signedIn.map({ $0.user.id == userID }) ?? true
        else { throw PasskeyAssertions.challengeInvalid }
        let credential: RegisteredCredential
        do {
            credential = try assertions.ceremony.verifyRegistration(
                credentialID: Array(rawID), clientDataJSON: Array(clientData), attestationObject: Array(attestation),
                expecting: assertions.expectation(challenge))
        } catch {
            try await unitOfWork.audit(.passkeyAdded, .failure, user: signedIn?.user.id, client: client, details: ["reason": error.rawValue])
            throw PasskeyAssertions.invalidCredential(error)
        }
        let now = clock.now
        let passkey = Passkey(
            userID: userID, credentialID: credential.credentialID, publicKey: credential.publicKey, signCount: credential.signCount,
            backupEligible: credential.backupEligible, backedUp: credential.backedUp,
            transports: Self.transports(response.transports), aaguid: credential.aaguid, name: name, createdAt: now)
        do {
            if let signedIn {
                try await add(passkey, to: signedIn, client: client)
                return PasskeyRegistrationResponse(passkey: Self.payload(passkey))
            }
            let auth = try await signUp(passkey, email: challenge.email, client: client)
            return PasskeyRegistrationResponse(user: auth.user, session: auth.session)
        } catch let error as StoreError where error.uniqueKey == .passkeyCredential {
            throw GatehouseError(.credentialInUse, "This passkey is registered already.")
        } catch let error as StoreError where error.uniqueKey == .email {
            throw GatehouseError.emailInUse(preset)
        }
    }

    private func add(_ passkey: Passkey, to signedIn: SignedIn, client: ClientInfo) async throws {
        let user = signedIn.user
        try await unitOfWork.run(client: client) { work in
            // Parallel registrations and removals of one account take turns on its row, and the
            // owner's proof is asked again under it (a factor may have been confirmed meanwhile).
            try await work.tx.lockUser(user.id)
            try ownerProof.require(signedIn, changing: .passkey, factors: try await work.tx.mfaFactors(of: user.id))
            try await work.tx.insertPasskey(passkey)
            try await added(work, passkey)
            if user.isAnonymous { try await lifecycle.upgradeAnonymous(work.narrowed { $0 }, user.id, provider: .passkey) }
        }
    }

    private func signUp(_ passkey: Passkey, email: String?, client: ClientInfo) async throws -> AuthResponse {
        let admission = try await lifecycle.admit(NewAccount(.wayIn(.passkey), email: email), client: client)
        return try await sessions.signingIn(client: client) { admitted in
            try await lifecycle.withTemporaryHandle { handle in
                try await unitOfWork.run(client: client) { work in
                    let user = User(
                        id: passkey.userID, email: email, normalizedEmail: email.map(EmailAddress.normalize), handle: handle,
                        createdAt: work.now)
                    try await lifecycle.create(work.narrowed { $0 }, user, identity: nil, provider: .passkey, admitted: admission)
                    try await work.tx.insertPasskey(passkey)
                    try await added(work, passkey)
                    if email != nil, preset.verification.sendOnSignup {
                        try await mail.queueVerification(work.narrowed { $0 }, user: user)
                    }
                    return try await sessions.signIn(work.narrowed { $0 }, user, provider: .passkey, event: .signup, door: .passkey, admitted: admitted)
                        .requireSession()
                }
            }
        }
    }

    private func added(_ work: Work<Stores>, _ passkey: Passkey) async throws {
        let id = passkey.id.uuidString.lowercased()
        try await work.audit(.passkeyAdded, user: passkey.userID, details: ["passkey_id": id, "backup_eligible": String(passkey.backupEligible)])
        try await work.record(.passkeyAdded, user: passkey.userID, data: ["passkey_id": id])
    }

    // MARK: Sign-in

    /// `POST /v1/passkeys/authentication/options`: with an address, the account's passkeys
    /// are listed; without one the device offers the passkeys it holds for the rp id.
    func authenticationOptions(email: String?, client: ClientInfo) async throws -> PasskeyRequestChallenge {
        try gate.requireMethod(preset.signInMethods.passkey)
        // Each ceremony is a stored row: opened no faster than logins are tried.
        try await throttle.limitIP("login", client: client, limit: preset.throttling.loginPerIPPerMinute, windowSeconds: 60)
        var user: UserID?
        var allow: [PasskeyDescriptor] = []
        if let email {
            let normalized = EmailAddress.normalize(email)
            if let found = try await store.user(normalizedEmail: normalized), !found.isDisabled {
                user = found.id
                allow = try await store.passkeys(of: found.id).map(Self.descriptor)
            }
            // An unknown address, or an account without passkeys, is answered with one credential
            // id that no device holds: the same for the same address every time, and shaped like
            // a platform passkey's, so the answer does not tell which addresses have accounts.
            if allow.isEmpty { allow = [try await decoy(for: normalized)] }
        }
        let challenge = try await assertions.open(.authentication, user: user)
        return PasskeyRequestChallenge(
            challengeID: challenge.id.uuidString.lowercased(),
            options: PasskeyRequestOptions(
                challenge: Data(challenge.challenge).base64URLEncoded, timeout: timeoutMilliseconds, rpId: relyingParty.id,
                allowCredentials: allow, userVerification: preset.passkeys.userVerification),
            expiresAt: challenge.expiresAt.rfc3339)
    }

    /// `POST /v1/passkeys/authentication/verify`: a session like any other sign-in's, with
    /// `amr` saying `passkey`.
    func signIn(_ request: PasskeyAssertionRequest, client: ClientInfo) async throws -> SignInAnswer<AuthResponse> {
        try gate.requireMethod(preset.signInMethods.passkey)
        let (passkey, userVerified): (Passkey, Bool)
        do {
            (passkey, userVerified) = try await assertions.verify(request)
        } catch let error as GatehouseError where error.code == .invalidCredential {
            try await unitOfWork.audit(.passkeyAssertion, .failure, client: client, details: ["reason": error.reasons?.first ?? ""])
            throw error
        }
        return try await sessions.signingIn(client: client) { admitted in
            try await unitOfWork.run(client: client) { work in
                guard let user = try await work.tx.user(id: passkey.userID) else { throw PasskeyAssertions.unknownCredential }
                guard !user.isDisabled else { throw GatehouseError.accountDisabled(preset) }
                return try await sessions.signIn(
                    work.narrowed { $0 }, user, provider: .passkey, event: .login, door: .passkey, userVerified: userVerified, admitted: admitted
                ).answer
            }
        }
    }

    // MARK: Managing

    func list(_ signedIn: SignedIn) async throws -> PasskeysResponse {
        PasskeysResponse(passkeys: try await store.passkeys(of: signedIn.user.id).map(Self.payload))
    }

    func rename(_ signedIn: SignedIn, id: String, name: String) async throws -> PasskeyResponse {
        let name = try Self.passkeyName(name)
        let userID = signedIn.user.id
        guard let uuid = UUID(uuidString: id),
            try await unitOfWork.run({ work in try await work.tx.renamePasskey(uuid, of: userID, name: name) }),
            let passkey = try await store.passkeys(of: signedIn.user.id).first(where: { $0.id == uuid })
        else { throw Self.notFound }
        return PasskeyResponse(passkey: Self.payload(passkey))
    }

    /// Never the account's last way in: another passkey, a password or a provider must remain.
    func delete(_ signedIn: SignedIn, id: String, client: ClientInfo) async throws {
        guard let uuid = UUID(uuidString: id) else { throw Self.notFound }
        let user = signedIn.user
        try await unitOfWork.run(client: client) { work in
            let tx = work.tx
            try await tx.lockUser(user.id)
            let passkeys = try await tx.passkeys(of: user.id)
            guard passkeys.contains(where: { $0.id == uuid }) else { throw Self.notFound }
            try await lifecycle.requireAnotherWayIn(
                work.narrowed { $0 }, user.id, removing: [.passkey: 1], message: "This passkey is the only way to sign in to this account, so it cannot be removed.")
            _ = try await tx.deletePasskey(uuid, of: user.id)
            try await work.audit(.passkeyRemoved, user: user.id, details: ["passkey_id": id.lowercased()])
            try await work.record(.passkeyRemoved, user: user.id, data: ["passkey_id": id.lowercased()])
        }
    }

    // MARK: Shapes

    static let notFound = GatehouseError.notFound("This account has no such passkey.")

    static func payload(_ passkey: Passkey) -> PasskeyPayload {
        PasskeyPayload(
            id: passkey.id.uuidString.lowercased(), name: passkey.name, createdAt: passkey.createdAt.rfc3339,
            lastUsedAt: passkey.lastUsedAt?.rfc3339, backedUp: passkey.backedUp)
    }

    /// One id keyed by the server's secret and the address (no device holds it), as long as a
    /// registered passkey's id (32 bytes before any), so that neither the count nor the length
    /// tells a decoy from an account's passkey (finding 7).
    private func decoy(for normalizedEmail: String) async throws -> PasskeyDescriptor {
        let length = min(max(try await store.newestPasskeyCredentialIDLength() ?? 32, 16), 1_023)
        let key = try decoyKey.derived("gatehouse passkey decoy")
        var bytes: [UInt8] = []
        var block: UInt8 = 0
        while bytes.count < length {
            bytes += HMAC<SHA256>.authenticationCode(for: Data([block]) + Data(normalizedEmail.utf8), using: key)
            block &+= 1
        }
        return PasskeyDescriptor(id: Data(bytes.prefix(length)).base64URLEncoded, transports: Self.platformTransports)
    }

    /// What an iOS platform passkey reports, and so what the SDK sends at registration.
    static let platformTransports = ["internal", "hybrid"]

    static func descriptor(_ passkey: Passkey) -> PasskeyDescriptor {
        PasskeyDescriptor(id: Data(passkey.credentialID).base64URLEncoded, transports: passkey.transports.isEmpty ? nil : passkey.transports)
    }

    /// 1–64 characters without control characters; "Passkey" when none is given.
    static func passkeyName(_ name: String?) throws -> String {
        try itemName(name, fallback: "Passkey", what: "A passkey's")
    }

    /// The transports WebAuthn names, at most six, as the authenticator reported them.
    static func transports(_ reported: [String]?) -> [String] {
        let known: Set = ["ble", "hybrid", "internal", "nfc", "smart-card", "usb"]
        return Array((reported ?? []).filter(known.contains).prefix(6))
    }
}
