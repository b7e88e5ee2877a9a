import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Phone numbers (issue 43, Hannah's phase 3): a code by SMS to sign in or up with a number, and
/// a number added to a profile, proved by its own code. Every send passes the pumping defences
/// first (`SMSDefences`); every code is checked with a reserved guess (`PhoneCodes`).
struct PhoneService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any PhoneStore & UserStore & PasswordStore & IdentityStore & ProfileStore & IdempotencyStore & SessionStore
        & RefreshTokenStore & PlanLedgerStore & PasskeyStore & MFAFactorStore & RecoveryCodeStore & MFAChallengeStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let gate: SignInGate
    let codes: PhoneCodes
    let defences: SMSDefences
    let notices: PhoneNotices
    let sessions: SessionIssuer
    let lifecycle: AccountLifecycle
    let ownerProof: OwnerProof
    let credentials: Credentials
    let throttle: Throttle
    let preset: Preset
    let clock: any WallClock

    /// The `amr` method of a session opened with an SMS code.
    static let method = "sms"

    /// A number as typed, with the preset's default region: 400 `invalid_phone` in the preset's words.
    func number(_ text: String) throws -> PhoneNumber {
        do {
            return try PhoneNumber.parse(text, defaultRegion: preset.sms.defaultRegion)
        } catch {
            throw GatehouseError(
                .invalidPhone,
                preset.text("error.invalid_phone", "Enter a phone number with its area code, or with + and the country code."),
                details: ["reason": .string(Self.reason(error))])
        }
    }

    private static func reason(_ refusal: PhoneNumber.Refusal) -> String {
        switch refusal {
        case .empty: "empty"
        case .notANumber: "not_a_number"
        case .unknownRegion: "unknown_region"
        case .unknownCallingCode: "unknown_calling_code"
        case .impossibleLength: "impossible_length"
        }
    }

    // MARK: Signing in

    /// `POST /v1/auth/phone/code`: 202 whether or not the number has an account; a code goes
    /// out when the number may sign in or sign up.
    /// `existingAccountsOnly` (`/auth/v1`'s `create_user: false`): only a number with an account
    /// gets a code, whatever the preset says of sign-ups.
    func sendCode(phone: String, captchaToken: String?, client: ClientInfo, existingAccountsOnly: Bool = false) async throws {
        try gate.requireMethod(preset.signInMethods.phone)
        let number = try number(phone)
        try await defences.admit(number, client: client, captchaToken: captchaToken)
        // Without sign-ups only a number with an account gets a code; the lookup runs either way.
        let owner = try await store.user(phone: number.e164)
        guard (preset.sms.signUp && !existingAccountsOnly) || owner != nil else { return }
        try await defences.charge(number, client: client)
        try await unitOfWork.run(client: client) { work in
            try await codes.send(work.narrowed { $0 }, to: number, purpose: .signIn, userID: nil)
        }
    }

    /// `/auth/v1`'s `POST /resend` with `sms`: the newest live sign-in code's request again,
    /// as whoever made it asked (issue 58): the number's holder's own request (bound to no
    /// account) gets a new code of the same kind, and a sign-up's code (naming its account, while
    /// the number is unproved) gets that again. Nobody's other code is ended, so an unproved
    /// sign-up cannot replace the code the holder asked for with one that keeps its password.
    /// With nothing live nothing is sent and no limit is spent; the answer is the same.
    func resendSignUpCode(phone: String, captchaToken: String?, client: ClientInfo) async throws {
        try gate.requireMethod(preset.signInMethods.phone)
        let number = try number(phone)
        guard let newest = try await codes.recent(to: number.e164, purpose: .signIn, now: clock.now, in: store).first(where: { $0.isLive(at: clock.now) })
        else { return }
        if let account = newest.userID {
            guard let owner = try await store.user(phone: number.e164), owner.id == account, owner.phoneVerifiedAt == nil, !owner.isDisabled
            else { return }
        }
        try await defences.admit(number, client: client, captchaToken: captchaToken)
        try await defences.charge(number, client: client)
        try await unitOfWork.run(client: client) { work in
            try await codes.send(work.narrowed { $0 }, to: number, purpose: .signIn, userID: newest.userID)
        }
    }

    /// `/auth/v1`'s `POST /resend` with `phone_change`: the code of a change to this number
    /// again, for the account that asked for it, while that request is live and no other
    /// account's change to the number is (issue 58: two accounts' changes never meet in one
    /// SMS thread). With nothing to resend nothing is sent and no limit is spent; the answer is the same.
    func resendChangeCode(phone: String, captchaToken: String?, client: ClientInfo) async throws {
        try gate.requireMethod(preset.signInMethods.phone)
        let number = try number(phone)
        guard let userID = try await pendingChange(to: number) else { return }
        try await defences.admit(number, client: client, captchaToken: captchaToken)
        try await defences.charge(number, client: client)
        try await unitOfWork.run(client: client) { work in
            try await codes.send(work.narrowed { $0 }, to: number, purpose: .verifyPhone, userID: userID)
        }
    }

    /// The one account with a live change to `number`; nil when none has, or several have.
    private func pendingChange(to number: PhoneNumber) async throws -> UserID? {
        let live = try await codes.recent(to: number.e164, purpose: .verifyPhone, now: clock.now, in: store).filter { $0.isLive(at: clock.now) }
        let accounts = Set(live.compactMap(\.userID))
        return accounts.count == 1 ? accounts.first : nil
    }

    /// `/auth/v1`'s `POST /signup` with a number and a password (where the preset has
    /// passwords): the account is made with the number not yet proved, and a code goes to it;
    /// `POST /verify` with `type: sms` proves it and opens the first session. Until then the
    /// number is no name to sign in by, and a code the number's holder asks for proves it
    /// instead, ending the password (`verify`).
    /// A number that has an account answers the same (issue 58: no "this number has an
    /// account" oracle): every pumping defence is spent first, the password is hashed, and the
    /// answer is a new account's, but nothing is stored and nothing is sent.
    /// `userMetadata`: `/auth/v1`'s sign-up `data`, kept as the account's `user_metadata`.
    func signUpWithPassword(
        phone: String, password: String, captchaToken: String?, client: ClientInfo, userMetadata: [String: JSONValue] = [:]
    ) async throws -> User {
        try gate.requireMethod(preset.signInMethods.phone)
        try gate.requireMethod(preset.signInMethods.emailPassword)
        try await gate.requireCaptchaIfNeeded(client, token: captchaToken)
        let number = try number(phone)
        try await credentials.checkStrength(password, email: "")
        // Metadata over the limit is refused before anything is spent or queued.
        let metadata = try AccountMetadata.fresh(userMetadata, kind: .user)
        try await defences.admit(number, client: client, captchaToken: captchaToken)
        // The app's say comes before the money budgets are looked at or the job is queued, taken
        // number or free alike.
        _ = try await lifecycle.admit(NewAccount(.wayIn(.password), phone: number.e164), client: client)
        let hash = try await credentials.hash(password)
        // The same work whether the number is taken or free, so that neither the answer nor its
        // time says which (issue 58): a spent budget refuses both alike (nothing spent here),
        // and the account is made, and its code texted, by a job that looks the number up.
        try await defences.chargeNothing(number, client: client)
        let now = clock.now
        var user = User(id: .random(), passwordHash: hash, passwordChangedAt: now, createdAt: now)
        user.phone = number.e164
        user.userMetadata = metadata
        let job = SignUpJob(
            userID: user.id, phone: number.e164, passwordHash: hash, createdAt: now, ip: client.ip, userAgent: client.userAgent,
            userMetadata: metadata.isEmpty ? nil : metadata)
        try await unitOfWork.run(client: client) { work in try await work.enqueueJob(kind: .phoneSignUp, payload: job) }
        user.passwordHash = nil
        return user
    }

    /// What a phone sign-up asked for, sealed in its job (`JobKind.phoneSignUp`).
    struct SignUpJob: Codable, Sendable {
        var userID: UserID
        var phone: String
        var passwordHash: String
        var createdAt: Date
        var ip: String?
        var userAgent: String?
        /// The sign-up's `data` (absent in jobs queued before it was kept).
        var userMetadata: [String: JSONValue]? = nil
    }

    /// The job of a phone sign-up: makes the account with the id the request answered, and
    /// texts its code, when the number still has no account; otherwise does nothing (the
    /// number's holder hears nothing of it). Only this send spends the money budgets; with them
    /// spent it is dropped (the request answered before). Run twice, it makes one account.
    func finishSignUp(_ job: SignUpJob) async throws {
        let number = try number(job.phone)
        guard try await store.user(phone: number.e164) == nil else { return }
        let client = ClientInfo(ip: job.ip, userAgent: job.userAgent)
        do {
            try await defences.charge(number, client: client)
        } catch let error as GatehouseError where error.status == 429 {
            return
        }
        try await lifecycle.withTemporaryHandle { handle in
            try await unitOfWork.run(client: client) { work in
                var user = User(id: job.userID, handle: handle, passwordHash: job.passwordHash, passwordChangedAt: job.createdAt, createdAt: job.createdAt)
                user.phone = number.e164
                user.userMetadata = job.userMetadata ?? [:]
                guard try await work.tx.user(phone: number.e164) == nil, try await work.tx.user(id: job.userID) == nil else { return }
                do {
                    try await lifecycle.create(
                        work.narrowed { $0 }, user, identity: nil, provider: .phone, admitted: .askedByQueuedRequest(phone: number.e164))
                } catch let error as StoreError where error.uniqueKey == .phone {
                    return  // a sign-up for the number committed meanwhile
                }
                // The sign-up's own code names the account: proving with it keeps the password,
                // unless the holder asked for a code of their own meanwhile (`signInUser`).
                try await codes.send(work.narrowed { $0 }, to: number, purpose: .signIn, userID: user.id)
            }
        }
    }

    /// `POST /v1/auth/phone/verify`: signs in with the code, or signs up where the preset
    /// allows it (with Hannah's preset the trial starts, as with a magic link). An account with
    /// a second factor gets its challenge.
    func verify(phone: String, code: String, client: ClientInfo) async throws -> SignInAnswer<SignInResponse> {
        try gate.requireMethod(preset.signInMethods.phone)
        let number = try number(phone)
        try await limitGuesses(client)
        let candidates = try await codes.recent(to: number.e164, purpose: .signIn, now: clock.now, in: store)
        let record = try await codes.check(candidates, to: number.e164, code: code, now: clock.now, in: store, listener: .anyone)
        // The app's say before a number with no account gets one (`BEFORE_USER_CREATED`).
        let needed = preset.sms.signUp ? try await store.user(phone: number.e164) == nil : false
        // A new account's id, the same if the transaction runs twice (`BEFORE_SIGN_IN`).
        let id = UserID.random()
        let (outcome, created) = try await lifecycle.admitting(NewAccount(.wayIn(.phone), phone: number.e164), client: client, needed: needed) {
            admission in
            try await sessions.signingIn(client: client) { admitted in
                try await lifecycle.withTemporaryHandle { handle in
                    try await unitOfWork.run(client: client) { work -> (SignInOutcome, Bool) in
                        try await codes.use(record, work.narrowed { $0 })
                        let (user, created) = try await signInUser(work, number: number, handle: handle, code: record, id: id, admission: admission)
                        let outcome = try await sessions.signIn(
                            work.narrowed { $0 }, user, provider: .phone, method: Self.method, event: created ? .signup : .login, door: .phone,
                            admitted: admitted)
                        return (outcome, created)
                    }
                }
            }
        }
        try await provedByHolder(number.e164)
        return outcome.answer { SignInResponse(user: $0.user, session: $0.session, created: created) }
    }

    /// The account a code signs in to, made when there is none (unique key on the number: of
    /// sign-ups racing for one number one commits). An account whose number was never proved
    /// may have been set up by someone else with it: the number's holder gets it without
    /// anything added before this proof. Only the sign-up's own code keeps the password it set,
    /// and only while the holder has asked for no code of their own since the sign-up (issue 58:
    /// the holder who asked to sign in may type whichever SMS came last).
    private func signInUser(
        _ work: Work<Stores>, number: PhoneNumber, handle: String?, code: PhoneCode, id: UserID, admission: AccountAdmission?
    ) async throws -> (User, created: Bool) {
        let (tx, now) = (work.tx, work.now)
        if let found = try await tx.user(phone: number.e164) {
            guard !found.isDisabled else { throw GatehouseError.accountDisabled(preset) }
            // A code the holder asked for that was live when the sign-up was made counts too.
            let since = found.createdAt.addingTimeInterval(-TimeInterval(preset.sms.codeTTLSeconds))
            let holderAsked = try await tx.phoneCodes(phone: number.e164, purpose: .signIn, since: since).contains { $0.userID == nil }
            let user = try await lifecycle.proveOwnership(
                work.narrowed { $0 }, found, proved: .phone, removePassword: code.userID != found.id || holderAsked)
            if try await tx.identities(of: user.id).contains(where: { $0.provider == .phone }) == false {
                try await tx.insertIdentity(Identity(userID: user.id, provider: .phone, subject: number.e164, email: nil, createdAt: now))
            }
            return (user, false)
        }
        guard preset.sms.signUp else { throw codes.refusal(.invalid) }
        var user = User(id: id, handle: handle, createdAt: now)
        user.phone = number.e164
        user.phoneVerifiedAt = now
        do {
            try await lifecycle.create(
                work.narrowed { $0 }, user, identity: Identity(userID: user.id, provider: .phone, subject: number.e164, email: nil, createdAt: now),
                provider: .phone, admitted: admission)
        } catch let error as StoreError where error.uniqueKey == .phone || error.uniqueKey == .identity {
            throw phoneInUse()
        }
        return (user, true)
    }

    // MARK: A number on the profile

    /// `POST /v1/me/phone`: texts a code to the number to add (or change to). Needs a recent
    /// sign-in (and `aal2` once the account has a second factor), like every change to how
    /// the account is protected. Whether another account has the number is said only to
    /// whoever proves it (409 `phone_in_use` at `confirm`; issue 58): the code goes out the same.
    func add(_ signedIn: SignedIn, phone: String, captchaToken: String?, client: ClientInfo) async throws {
        try gate.requireMethod(preset.signInMethods.phone)
        let number = try number(phone)
        let user = signedIn.user
        try ownerProof.require(signedIn, changing: .phone, factors: try await store.mfaFactors(of: user.id))
        try await defences.admit(number, client: client, captchaToken: captchaToken)
        try await defences.charge(number, client: client)
        try await unitOfWork.run(client: client) { work in
            try await codes.send(work.narrowed { $0 }, to: number, purpose: .verifyPhone, userID: user.id)
        }
    }

    /// `POST /v1/me/phone/verify`: the new number's code; the number becomes the account's,
    /// verified, with its identity.
    func confirm(_ signedIn: SignedIn, code: String, client: ClientInfo) async throws -> UserResponse {
        try gate.requireMethod(preset.signInMethods.phone)
        let userID = signedIn.user.id
        let own = try await store.newestPhoneCode(phone: nil, purpose: .verifyPhone, userID: userID)
        let record = try await codes.check(own.map { [$0] } ?? [], to: own?.phone ?? "", code: code, now: clock.now, in: store, listener: .asker)
        let user = try await unitOfWork.run(client: client) { work in try await attach(work, record, to: userID, signedIn: signedIn) }
        try await provedByHolder(record.phone)
        return UserResponse(user: user.payload(identities: try await store.identities(of: userID)))
    }

    /// `/auth/v1`'s `POST /verify` with `phone_change`: the code the new number got, found by
    /// the number (GoTrue's clients send no session with it). The number becomes the account's
    /// that asked for the code, and a session opens, as GoTrue's does. The code is checked
    /// against that account's own code only, and only while no other account's change to the
    /// number is live (issue 58): by number alone nobody can tell which account's SMS was typed.
    /// With `asker` (the session that came with the code) the code is checked against that
    /// account's own change only, whoever else has one pending.
    func confirmChange(phone: String, code: String, asker: UserID? = nil, client: ClientInfo) async throws -> SignInAnswer<SignInResponse> {
        try gate.requireMethod(preset.signInMethods.phone)
        let number = try number(phone)
        try await limitGuesses(client)
        let pending: UserID?
        if let asker { pending = asker } else { pending = try await pendingChange(to: number) }
        let candidates = try await codes.recent(to: number.e164, purpose: .verifyPhone, now: clock.now, in: store).filter {
            pending != nil && $0.userID == pending
        }
        let record = try await codes.check(candidates, to: number.e164, code: code, now: clock.now, in: store, listener: .anyone)
        guard let userID = record.userID else { throw codes.refusal(.invalid) }
        let outcome = try await sessions.signingIn(client: client) { admitted in
            try await unitOfWork.run(client: client) { work -> SignInOutcome in
                let user = try await attach(work, record, to: userID, signedIn: nil)
                guard !user.isDisabled else { throw GatehouseError.accountDisabled(preset) }
                return try await sessions.signIn(
                    work.narrowed { $0 }, user, provider: .phone, method: Self.method, event: .login, door: .phone, admitted: admitted)
            }
        }
        try await provedByHolder(record.phone)
        return outcome.answer { SignInResponse(user: $0.user, session: $0.session, created: false) }
    }

    /// Makes a proved number the account's, in the caller's transaction: the code used up, the
    /// number and its identity set (409 `phone_in_use` when another account took it meanwhile),
    /// an anonymous account upgraded. With the session that asked, the owner's proof is checked
    /// again here, so it holds until this write.
    private func attach(_ work: Work<Stores>, _ record: PhoneCode, to userID: UserID, signedIn: SignedIn?) async throws -> User {
        try await work.tx.lockUser(userID)
        guard let current = try await work.tx.user(id: userID) else { throw GatehouseError.unauthorized() }
        // A factor added meanwhile asks for `aal2`.
        if let asking = signedIn {
            let factors = try await work.tx.mfaFactors(of: userID)
            try ownerProof.require(asking, changing: .phone, factors: factors)
        }
        try await codes.use(record, work.narrowed { $0 })
        try await setNumber(work, record.phone, of: userID)
        if let change = PhoneNotices.Change(old: current.phone, proved: current.phoneVerifiedAt != nil, number: record.phone) {
            try await notices.queue(work, user: current, change: change)
        }
        // An anonymous account with a proved number is one a person can come back to.
        if current.isAnonymous { try await lifecycle.upgradeAnonymous(work.narrowed { $0 }, userID, provider: .phone) }
        try await work.audit(.phoneVerified, user: userID, details: ["phone": SMSDefences.masked(e164: record.phone)])
        guard let user = try await work.tx.user(id: userID) else { throw GatehouseError.unauthorized() }
        return user
    }

    /// The number and its identity, verified now; 409 `phone_in_use` when another account has it.
    private func setNumber(_ work: Work<Stores>, _ phone: String, of userID: UserID) async throws {
        do throws(StoreError) {
            try await work.tx.setPhone(userID, phone: phone, verifiedAt: work.now, now: work.now)
            _ = try await work.tx.deleteIdentities(of: userID, provider: .phone)
            try await work.tx.insertIdentity(Identity(userID: userID, provider: .phone, subject: phone, email: nil, createdAt: work.now))
        } catch {
            if error.uniqueKey == .phone || error.uniqueKey == .identity { throw phoneInUse() }
            throw error
        }
    }

    /// `DELETE /v1/me/phone`: never the account's last way in (409 `last_identity`).
    func remove(_ signedIn: SignedIn, client: ClientInfo) async throws {
        let userID = signedIn.user.id
        try await unitOfWork.run(client: client) { work in
            let tx = work.tx
            try await tx.lockUser(userID)
            try ownerProof.require(signedIn, changing: .phone, factors: try await tx.mfaFactors(of: userID))
            guard let user = try await tx.user(id: userID), user.phone != nil else { return }
            try await lifecycle.requireAnotherWayIn(
                work.narrowed { $0 }, userID, removing: [.phone: 1],
                message: preset.text("error.phone_last_way_in", "This number is the only way to sign in to this account, so it cannot be removed."))
            try await tx.setPhone(userID, phone: nil, verifiedAt: nil, now: work.now)
            _ = try await tx.deleteIdentities(of: userID, provider: .phone)
            try await work.audit(.phoneRemoved, user: userID)
            if let old = user.phone { try await notices.queue(work, user: user, change: .removed(old: old)) }
        }
    }

    /// The number's holder typed its code: a pause on the number after failed deliveries ends
    /// (issue 58: only this proof lifts it, never a delivery that finally went through).
    private func provedByHolder(_ e164: String) async throws {
        try await throttle.store.clearThrottle(key: SMSDefences.failureKey(e164: e164))
    }

    /// Code checks per client address a minute (the login limit): 429 `too_many_attempts`.
    private func limitGuesses(_ client: ClientInfo) async throws {
        do {
            try await throttle.limitIP("phone-code", client: client, limit: preset.throttling.loginPerIPPerMinute, windowSeconds: 60)
        } catch let error as GatehouseError where error.code == .rateLimited {
            throw throttle.tooManyAttempts(error.retryAfter ?? 60)
        }
    }

    func phoneInUse() -> GatehouseError {
        GatehouseError(.phoneInUse, preset.text("error.phone_in_use", "This phone number belongs to another account."))
    }
}
