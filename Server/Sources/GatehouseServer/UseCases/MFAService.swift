import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Second factors: enrolling and confirming a TOTP authenticator, recovery codes, completing a
/// sign-in's challenge, and stepping a signed-in session up to `aal2`.
///
/// Every code is checked under the account's lockout (an attempt reserved before the check, the
/// preset's doubling waits) and, at sign-in, the challenge's own attempts (reserved in one
/// statement). What a code proves is then taken once inside the transaction that opens or
/// raises the session: the TOTP step by compare-and-set, the recovery code by a conditional
/// update, the challenge by a conditional update; of any number of parallel tries one wins.
struct MFAService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdentityStore & SessionStore & SessionAssuranceStore & RefreshTokenStore
        & PlanLedgerStore & MFAFactorStore & RecoveryCodeStore & MFAChallengeStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let sessions: SessionIssuer
    let throttle: Throttle
    let ownerProof: OwnerProof
    let sealer: SecretSealer
    /// Keys the recovery codes' hashes.
    let codeKey: RefreshChainKey
    let mail: AccountMail
    let removal: FactorRemoval
    let preset: Preset
    let clock: any WallClock

    // MARK: Enrolling

    /// `POST /v1/mfa/factors`: an unverified TOTP factor with its secret, key URI and QR code.
    func enroll(_ signedIn: SignedIn, _ request: MFAEnrollRequest, client: ClientInfo) async throws -> MFAEnrollment {
        try requireEnabled()
        guard request.type == MFAFactor.totp else { throw GatehouseError.invalidRequest("The only factor type is 'totp'.") }
        let user = signedIn.user
        guard !user.isAnonymous else {
            throw GatehouseError(.forbidden, preset.text("error.mfa_anonymous", "Create an account before adding two-step sign-in."))
        }
        try ownerProof.require(signedIn, changing: .totp, factors: try await liveFactors(of: user.id))
        let name = try Self.factorName(request.name)
        let secret = randomBytes(TOTP.secretLength)
        let sealed = try sealer.seal(secret)
        let factor = MFAFactor(userID: user.id, name: name, secret: sealed.bytes, encryption: sealed.encryption, createdAt: clock.now)
        try await unitOfWork.run(client: client) { work in
            // Parallel enrollments of one account take turns on its row, so the cap holds.
            try await work.tx.lockUser(user.id)
            guard try await liveFactors(of: user.id, in: work.tx).count < MFAFactor.maximumPerAccount else {
                throw GatehouseError(
                    .tooManyFactors, "This account has \(MFAFactor.maximumPerAccount) authenticator apps already. Remove one to add another.")
            }
            try await work.tx.insertMFAFactor(factor)
            try await work.audit(.mfaFactorAdded, user: user.id, details: ["factor_id": Self.id(factor)])
        }
        let issuer = preset.mfa.issuer ?? preset.app.name
        let uri = TOTP.uri(secret: secret, issuer: issuer, account: user.email ?? user.handle ?? user.id.description)
        return MFAEnrollment(
            id: Self.id(factor), type: factor.type, name: name, status: "unverified",
            totp: TOTPEnrollment(secret: Base32.encode(secret), uri: uri, qrSVG: try QRCode(encoding: uri).svg()))
    }

    /// `POST /v1/mfa/factors/{id}/confirm`: the first code makes the factor count. The account's
    /// first factor answers ten recovery codes, and this session, having just proved it, is
    /// raised to `aal2`.
    func confirm(_ signedIn: SignedIn, id: String, code: String, client: ClientInfo) async throws -> MFAConfirmResponse {
        try await confirm(signedIn, id: id, code: code, reissue: false, client: client).response
    }

    /// As `confirm`; with `reissue`, the raised session also gets a new refresh chain and its
    /// tokens (`/auth/v1/factors/{id}/verify` answers a session, as GoTrue does).
    func confirm(
        _ signedIn: SignedIn, id: String, code: String, reissue: Bool, client: ClientInfo
    ) async throws -> (response: MFAConfirmResponse, session: SessionPayload?) {
        try requireEnabled()
        let user = signedIn.user
        // A factor left unconfirmed past its time is gone (finding 3: a dormant one planted by a
        // stolen session), and confirming one is a change that needs the owner's proof.
        let factors = try await liveFactors(of: user.id)
        try ownerProof.require(signedIn, changing: .totp, factors: factors)
        guard let uuid = UUID(uuidString: id), let factor = factors.first(where: { $0.id == uuid }) else { throw Self.notFound }
        guard !factor.isConfirmed else { throw GatehouseError.invalidRequest("This authenticator app is confirmed already.") }
        let throttleKey = Self.throttleKey(user.id, after: signedIn.session.firstFactor)
        // New tokens carry the app's claims, asked before anything is reserved or written.
        let app = reissue ? try await stepUpClaims(signedIn, method: MFAFactor.totp, client: client) : nil
        let reservation = try await reserve(throttleKey, user: user.id, client: client)
        guard let step = try totp(factor).step(matching: code, at: clock.now) else {
            try await failed(reservation, user: user.id, client: client, stage: "confirm")
            throw invalidCode
        }
        let fresh = RecoveryCodes.generate(random: randomBytes)
        let (confirmed, codes, session) = try await taking(reservation, user: user.id, client: client, stage: "confirm") {
            try await unitOfWork.run(client: client) { work -> (MFAFactor, [String]?, SessionPayload?) in
                let (tx, now) = (work.tx, work.now)
                // Whether this is the account's first factor is decided under its row lock, so two
                // factors confirmed at once cannot both hand out (and replace) recovery codes.
                try await tx.lockUser(user.id)
                let first = try await !tx.mfaFactors(of: user.id).contains(where: \.isConfirmed)
                guard try await tx.confirmMFAFactor(uuid, of: user.id, step: step, at: now) else { throw invalidCode }
                let codes = first ? fresh : nil
                if let codes { try await tx.replaceRecoveryCodes(of: user.id, hashes: try codes.map(hash), at: now) }
                // The session is raised, but its recent-sign-in clock is not wound forward:
                // the factor counts from the sign-in it was added under.
                _ = try await tx.stepUpSession(
                    signedIn.session.id, factor: MFAFactor.totp, at: signedIn.session.assuranceState.authenticatedAt)
                let session = reissue ? try await reissued(work, signedIn, app: app) : nil
                try await work.audit(.mfaFactorConfirmed, user: user.id, session: signedIn.session.id, details: ["factor_id": id.lowercased()])
                try await work.record(.mfaFactorAdded, user: user.id, data: ["factor_id": id.lowercased()])
                try await mail.queueSecurityNotice(work, user: user, kind: .mfaFactorAdded, values: ["factor": factor.name])
                var confirmed = factor
                confirmed.confirmedAt = now
                confirmed.lastUsedStep = step
                return (confirmed, codes, session)
            }
        }
        try await throttle.clearAccount(throttleKey)
        return (MFAConfirmResponse(factor: Self.payload(confirmed), recoveryCodes: codes), session)
    }

    /// `CUSTOM_ACCESS_TOKEN`'s claims for the tokens a step-up gives the session.
    private func stepUpClaims(_ signedIn: SignedIn, method: String, client: ClientInfo) async throws -> [String: JSONValue]? {
        try await sessions.hooks.customClaims(for: signedIn.user, session: signedIn.session.id, occasion: .stepUp, method: method, client: client)
    }

    /// The same session with a new refresh chain, read after its step-up: tokens from before
    /// it retire.
    private func reissued(_ work: Work<Stores>, _ signedIn: SignedIn, app: [String: JSONValue]?) async throws -> SessionPayload {
        let tx = work.tx
        guard let session = try await tx.session(id: signedIn.session.id) else {
            throw GatehouseError.unauthorized("Your session has ended. Please sign in again.")
        }
        try await tx.retireRefreshTokens(of: session.id, at: work.now)
        let refresh = try await sessions.newRefreshToken(work.narrowed { $0 }, for: session.id)
        return try await sessions.payload(signedIn.user, session: session, refreshToken: refresh, in: tx, app: app)
    }

    // MARK: Managing

    func list(_ signedIn: SignedIn) async throws -> MFAFactorsResponse {
        let factors = try await liveFactors(of: signedIn.user.id)
        try ownerProof.requireSecondFactor(signedIn, factors: factors)
        return MFAFactorsResponse(factors: factors.map(Self.payload))
    }

    func rename(_ signedIn: SignedIn, id: String, name: String) async throws -> MFAFactorResponse {
        let factors = try await liveFactors(of: signedIn.user.id)
        try ownerProof.requireSecondFactor(signedIn, factors: factors)
        let name = try Self.factorName(name)
        let userID = signedIn.user.id
        guard let uuid = UUID(uuidString: id), var factor = factors.first(where: { $0.id == uuid }),
            try await unitOfWork.run({ work in try await work.tx.renameMFAFactor(uuid, of: userID, name: name) })
        else { throw Self.notFound }
        factor.name = name
        return MFAFactorResponse(factor: Self.payload(factor))
    }

    /// `DELETE /v1/mfa/factors/{id}`: with the last confirmed factor the recovery codes go too.
    func delete(_ signedIn: SignedIn, id: String, client: ClientInfo) async throws {
        try ownerProof.require(signedIn, changing: .totp, factors: try await liveFactors(of: signedIn.user.id))
        guard let uuid = UUID(uuidString: id) else { throw Self.notFound }
        try await remove(signedIn.user, factor: uuid, client: client)
    }

    /// Removes a factor (the owner's call): audited, and mailed when it was confirmed.
    func remove(_ user: User, factor id: UUID, client: ClientInfo?) async throws {
        try await unitOfWork.run(client: client) { work in
            try await removal.remove(work.narrowed { $0 }, user, factor: id, by: nil)
        }
    }

    /// `POST /v1/mfa/recovery-codes`: ten new codes; the old ones die.
    /// At most one new set a minute per account, reserved before the codes are made: of
    /// regenerations sent together one answers its codes and the rest 429, so no screen shows a
    /// set that a parallel call already replaced.
    func regenerateRecoveryCodes(_ signedIn: SignedIn, client: ClientInfo) async throws -> RecoveryCodesResponse {
        let factors = try await liveFactors(of: signedIn.user.id)
        try ownerProof.require(signedIn, changing: .recoveryCodes, factors: factors)
        guard factors.contains(where: \.isConfirmed) else {
            throw GatehouseError.invalidRequest("Recovery codes come with two-step sign-in: add an authenticator app first.")
        }
        try await throttle.limit(
            "recovery-codes:\(signedIn.user.id)", limit: Self.regenerationsPerMinute, windowSeconds: 60)
        let codes = RecoveryCodes.generate(random: randomBytes)
        let hashes = try codes.map(hash)
        try await unitOfWork.run(client: client) { work in
            try await work.tx.replaceRecoveryCodes(of: signedIn.user.id, hashes: hashes, at: work.now)
            try await work.audit(.recoveryCodesRegenerated, user: signedIn.user.id, session: signedIn.session.id)
        }
        return RecoveryCodesResponse(recoveryCodes: codes)
    }

    // MARK: Verifying

    /// `POST /v1/auth/mfa/verify`: a challenge's id completes that sign-in; without one, a
    /// Bearer's session is stepped up.
    func verify(_ request: MFAVerifyRequest, signedIn: SignedIn?, client: ClientInfo) async throws -> MFAVerifyResponse {
        if let challengeID = request.challengeID {
            return try await complete(challengeID, request, client: client)
        }
        guard let signedIn else { throw Self.challengeInvalid }
        return try await stepUp(signedIn, request, client: client)
    }

    private func complete(_ challengeID: String, _ request: MFAVerifyRequest, client: ClientInfo) async throws -> MFAVerifyResponse {
        let idHash = SessionIssuer.challengeHash(challengeID)
        let maximum = preset.mfa.attemptsPerChallenge
        guard let challenge = try await store.reserveMFAChallengeAttempt(idHash: idHash, now: clock.now, maximum: maximum) else {
            if let spent = try await store.mfaChallenge(idHash: idHash), spent.expiresAt > clock.now, spent.attempts >= maximum {
                throw challengeSpent
            }
            throw Self.challengeInvalid
        }
        // A wrong code says how many tries this sign-in has left; the last one ends it, and says
        // so, so that an app goes back to sign-in instead of asking for a code nothing can take.
        let left = max(0, maximum - challenge.attempts)
        do {
            return try await complete(challenge, idHash: idHash, request, client: client)
        } catch let error as GatehouseError where error.details?["reason"] == .string(Self.codeUsedReason) {
            // A code taken already is no guess (`check`): this sign-in keeps the try.
            try await store.releaseMFAChallengeAttempt(idHash: idHash)
            var details = error.details ?? [:]
            details["attempts_left"] = .number(Double(left + 1))
            throw GatehouseError(error.code, error.message, details: details)
        } catch let error as GatehouseError where error.code == .invalidCode {
            var details = error.details ?? [:]
            details["attempts_left"] = .number(Double(left))
            if left == 0 { details["challenge_ended"] = .bool(true) }
            throw GatehouseError(error.code, error.message, retryAfter: error.retryAfter, details: details, underlying: error.underlying)
        } catch let error as GatehouseError where error.code == .tooManyAttempts {
            // The account's lockout refused before the code was looked at: not one of this
            // sign-in's tries, which are there when the wait is over.
            try await store.releaseMFAChallengeAttempt(idHash: idHash)
            throw error
        }
    }

    private func complete(
        _ challenge: MFAChallenge, idHash: [UInt8], _ request: MFAVerifyRequest, client: ClientInfo
    ) async throws -> MFAVerifyResponse {
        // Counted apart per first factor: guesses after the password cannot lock the owner who
        // comes back through the inbox (finding 4).
        let throttleKey = Self.throttleKey(challenge.userID, after: challenge.method)
        let (proof, reservation) = try await check(request, user: challenge.userID, throttleKey: throttleKey, client: client)
        let response = try await taking(reservation, user: challenge.userID, client: client, stage: "verify") {
            try await sessions.signingIn(client: client) { admitted in
                try await unitOfWork.run(client: client) { work -> MFAVerifyResponse in
                    let tx = work.tx
                    guard try await tx.consumeMFAChallenge(idHash: idHash, at: work.now) else { throw Self.challengeInvalid }
                    guard let user = try await tx.user(id: challenge.userID) else { throw Self.challengeInvalid }
                    guard !user.isDisabled else { throw GatehouseError.accountDisabled(preset) }
                    // The sign-in's own audit name, stored with its challenge by this server.
                    guard let event = AuditEvent.Name(rawValue: challenge.event) else { throw Self.challengeInvalid }
                    try await take(proof, work, user: user)
                    let auth = try await sessions.open(
                        work.narrowed { $0 }, user, provider: challenge.provider, method: challenge.method, event: event, door: .secondFactor,
                        assurance: .aal2, secondFactor: proof.method, admitted: admitted)
                    return MFAVerifyResponse(user: auth.user, session: auth.session)
                }
            }
        }
        if reservation != nil { try await throttle.clearAccount(throttleKey) }
        return response
    }

    private func stepUp(_ signedIn: SignedIn, _ request: MFAVerifyRequest, client: ClientInfo) async throws -> MFAVerifyResponse {
        let user = signedIn.user
        let throttleKey = Self.throttleKey(user.id, after: signedIn.session.firstFactor)
        let app = try await stepUpClaims(signedIn, method: request.recoveryCode == nil ? MFAFactor.totp : "recovery_code", client: client)
        let (proof, reservation) = try await check(request, user: user.id, throttleKey: throttleKey, client: client)
        let session = try await taking(reservation, user: user.id, client: client, stage: "step_up") {
            try await unitOfWork.run(client: client) { work -> SessionPayload in
                let (tx, now) = (work.tx, work.now)
                try await take(proof, work, user: user)
                guard try await tx.stepUpSession(signedIn.session.id, factor: proof.method, at: now) else {
                    throw GatehouseError.unauthorized("Your session has ended. Please sign in again.")
                }
                let payload = try await reissued(work, signedIn, app: app)
                try await work.audit(.mfaVerify, user: user.id, session: signedIn.session.id, details: ["method": proof.method, "stage": "step_up"])
                return payload
            }
        }
        if reservation != nil { try await throttle.clearAccount(throttleKey) }
        return MFAVerifyResponse(user: nil, session: session)
    }

    /// What a code proved, still to be taken once.
    private enum Proof {
        case totp(factor: UUID, step: Int64)
        case recoveryCode(hash: [UInt8])

        var method: String {
            switch self {
            case .totp: MFAFactor.totp
            case .recoveryCode: "recovery_code"
            }
        }
    }

    /// Checks the code. A TOTP code is checked under the account's lockout for this first factor
    /// (429 while locked; a wrong one is counted, audited and answered 400 `invalid_code`). A
    /// code whose step was taken already is refused first, in its own words (`codeUsed`), and
    /// counts on no lockout: it is no guess (whoever types it saw the code, and its step can
    /// never be taken again), and the person who typed the code twice is its owner. A
    /// recovery code is never refused by that lockout (finding 4: someone with the password alone
    /// could otherwise lock the owner out of their last resort): it has 80 bits, each is taken once,
    /// and a sign-in's challenge still allows only its few attempts. A wrong one is audited.
    private func check(
        _ request: MFAVerifyRequest, user: UserID, throttleKey: String, client: ClientInfo
    ) async throws -> (Proof, AttemptReservation?) {
        if let typed = request.recoveryCode {
            if let normalized = RecoveryCodes.normalize(typed) { return (.recoveryCode(hash: try hash(normalized)), nil) }
            try await failed(nil, user: user, client: client, stage: "verify")
            throw invalidRecoveryCode
        }
        var factor: MFAFactor?
        if let factorID = request.factorID.flatMap(UUID.init(uuidString:)) {
            factor = try await store.mfaFactors(of: user).first { $0.id == factorID && $0.isConfirmed }
        }
        let step = try factor.flatMap { factor in try request.code.flatMap { try totp(factor).step(matching: $0, at: clock.now) } }
        if let step, let last = factor?.lastUsedStep, step <= last {
            try await unitOfWork.audit(.mfaVerify, .failure, user: user, client: client, details: ["reason": "code used", "stage": "verify"])
            throw codeUsed
        }
        let reservation = try await reserve(throttleKey, user: user, client: client)
        if let factor, let step { return (.totp(factor: factor.id, step: step), reservation) }
        try await failed(reservation, user: user, client: client, stage: "verify")
        throw invalidCode
    }

    /// Takes the proof once, inside the transaction that uses it: a TOTP step only later than
    /// the last one taken, a recovery code only unused (then audited and mailed). A step taken
    /// meanwhile (the same code sent twice at once) is refused as a wrong code and counted:
    /// `check` already reserved its attempt, and only a parallel request gets here.
    private func take(_ proof: Proof, _ work: Work<Stores>, user: User) async throws {
        switch proof {
        case .totp(let factor, let step):
            guard try await work.tx.useMFAStep(factor, of: user.id, step: step, at: work.now) else { throw invalidCode }
        case .recoveryCode(let hash):
            guard try await work.tx.useRecoveryCode(of: user.id, hash: hash, at: work.now) else { throw invalidRecoveryCode }
            let remaining = try await work.tx.unusedRecoveryCodes(of: user.id)
            try await work.audit(.recoveryCodeUsed, user: user.id, details: ["remaining": String(remaining)])
            try await mail.queueSecurityNotice(work, user: user, kind: .recoveryCodeUsed, values: ["remaining": String(remaining)])
        }
    }

    private func reserve(_ throttleKey: String, user: UserID, client: ClientInfo) async throws -> AttemptReservation {
        do {
            return try await throttle.reserveAttempt(throttleKey)
        } catch let error as GatehouseError where error.code == .tooManyAttempts {
            try await unitOfWork.audit(.mfaVerify, .locked, user: user, client: client, details: ["reason": "account locked"])
            throw tooManyAttempts(retryAfter: error.retryAfter)
        }
    }

    /// Runs the transaction that takes a checked code. A code the transaction finds taken
    /// already (replayed, or sent twice at once) is a failed attempt like a wrong one: it was
    /// counted when reserved, and is audited here once the transaction has rolled back.
    private func taking<T: Sendable>(
        _ reservation: AttemptReservation?, user: UserID, client: ClientInfo, stage: String, _ body: () async throws -> T
    ) async throws -> T {
        do {
            return try await body()
        } catch let error as GatehouseError where error.code == .invalidCode {
            try await failed(reservation, user: user, client: client, stage: stage)
            throw error
        }
    }

    /// A refused code: audited, and counted on the lockout when it was reserved there.
    private func failed(_ reservation: AttemptReservation?, user: UserID, client: ClientInfo, stage: String) async throws {
        var wait: Int?
        if let reservation { wait = try await throttle.failed(reservation, client: client) }
        try await unitOfWork.audit(.mfaVerify, .failure, user: user, client: client, details: ["reason": "invalid code", "stage": stage])
        if let wait {
            try await unitOfWork.audit(.lockout, .locked, user: user, client: client, details: ["retry_after": String(wait), "stage": "mfa"])
        }
    }
}
