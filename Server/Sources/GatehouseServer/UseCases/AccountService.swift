import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The account as a whole: deleting it (App Store guideline 5.1.1(v)).
struct AccountService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdentityStore & SessionStore & PasskeyStore & MFAFactorStore & RecoveryCodeStore & PhoneStore & PlanLedgerStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let credentials: Credentials
    let lifecycle: AccountLifecycle
    let verifiers: ProviderVerifiers
    let codes: MagicCodes
    let phoneCodes: PhoneCodes
    let passkeys: PasskeyAssertions
    let stepUp: StepUpGate
    let preset: Preset
    let clock: any WallClock

    /// `DELETE /v1/me`: with proof proportionate to what exists (decision 2), removes the user
    /// and by cascade its identities, sessions, tokens and links; queues the revocation of
    /// Apple's token; keeps an audit row without personal data.
    func delete(_ signedIn: SignedIn, _ request: DeleteAccountRequest, client: ClientInfo) async throws {
        let user = signedIn.user
        try await stepUp.require(.deleteAccount, signedIn)
        try await requireProof(signedIn, request, client: client)
        try await unitOfWork.run { work in
            guard try await lifecycle.delete(work.narrowed { $0 }, user.id, reason: "user_request") else { throw GatehouseError.unauthorized() }
            try await work.audit(.accountDeleted, user: user.id, details: ["anonymous": String(user.isAnonymous)])
        }
    }

    /// A young session is proof by itself, but only when nothing else is offered: a proof that is
    /// offered is checked whatever the session's age, and each one offered must hold (issue 41:
    /// "type your password to delete" must refuse a wrong password).
    private func requireProof(_ signedIn: SignedIn, _ request: DeleteAccountRequest, client: ClientInfo) async throws {
        let user = signedIn.user
        if user.isAnonymous { return }
        let offered = request.password != nil || request.idToken != nil || request.passkey != nil || request.code != nil
            || request.smsCode != nil
        guard offered else {
            if let session = try await store.session(id: signedIn.identity.sessionID), session.isRecentSignIn(at: clock.now) {
                return
            }
            throw try await proofNeeded(user)
        }
        if let password = request.password {
            guard user.passwordHash != nil else { throw reauthenticationRequired("This account has no password.") }
            let verification = try await credentials.checkAttempt(
                password, against: user.passwordHash, account: Credentials.lockoutKey(user), userID: user.id,
                client: client, event: .deleteAccount)
            guard verification.matches else { throw reauthenticationRequired("That password is not right.") }
        }
        if let idToken = request.idToken {
            var matched = false
            for identity in try await store.identities(of: user.id) where identity.provider == .apple || identity.provider == .google {
                guard let person = try? await verifiers.verifier(identity.provider).verify(idToken, rawNonce: request.rawNonce),
                    person.subject == identity.subject
                else { continue }
                matched = true
                break
            }
            guard matched else { throw reauthenticationRequired("That sign-in does not belong to this account.") }
        }
        if let assertion = request.passkey {
            // One of this account's passkeys, on a challenge of its own (taken once).
            do {
                _ = try await passkeys.verify(assertion, owner: user.id)
            } catch let error as GatehouseError where error.code == .invalidCredential {
                throw reauthenticationRequired("That passkey could not be verified.")
            }
        }
        if let code = request.code {
            guard let email = user.email else { throw reauthenticationRequired("This account has no email address.") }
            try await codes.consume(email: email, code: code)
        }
        if let code = request.smsCode {
            // A sign-in code texted to the account's own verified number, used up here.
            guard let phone = user.phone, user.phoneVerifiedAt != nil else { throw reauthenticationRequired("This account has no phone number.") }
            let candidates = try await phoneCodes.recent(to: phone, purpose: .signIn, now: clock.now, in: store)
            let record = try await phoneCodes.check(candidates, to: phone, code: code, now: clock.now, in: store, listener: .asker)
            try await unitOfWork.run { work in try await phoneCodes.use(record, work.narrowed { $0 }) }
        }
    }

    /// The refusal of a stale session that offered nothing: it names the proofs that fit this
    /// account (`details.proofs`: `password`, `id_token`, `passkey`, `code`), and its words offer
    /// the password only to an account that has one, so an app's prompt can ask for what works.
    private func proofNeeded(_ user: User) async throws -> GatehouseError {
        let inventory = try await AccountLifecycle.inventory(of: user.id, in: store)
        var offered = Set(Credential.allCases.filter { inventory[$0] > 0 }.compactMap(\.deletionProof))
        // A code goes to the account's address whatever way in made it (Apple's relay too).
        if user.email != nil { offered.insert("code") }
        let proofs = ["password", "id_token", "passkey", "code", "sms_code"].filter(offered.contains)
        var error = reauthenticationRequired(nil, password: user.passwordHash != nil)
        error.details = ["proofs": .array(proofs.map(JSONValue.string))]
        return error
    }

    private func reauthenticationRequired(_ detail: String?, password: Bool = true) -> GatehouseError {
        let base =
            password
            ? preset.text("error.reauthentication_required", "To delete your account, confirm it's you: sign in again or enter your password.")
            : preset.text("error.reauthentication_required_sign_in", "To delete your account, confirm it's you: sign in again.")
        return GatehouseError(status: 403, code: .reauthenticationRequired, message: detail.map { "\($0) \(base)" } ?? base)
    }
}
