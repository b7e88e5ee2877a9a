import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The account as a whole: deleting it (App Store guideline 5.1.1(v)).
struct AccountService: Sendable {
    let store: any SessionStore & UserStore
    let unitOfWork: UnitOfWork
    let credentials: Credentials
    let lifecycle: AccountLifecycle
    let verifiers: ProviderVerifiers
    let codes: MagicCodes
    let passkeys: PasskeyAssertions
    let stepUp: StepUpGate
    let preset: Preset
    let clock: any WallClock

    /// `DELETE /v1/me`: with proof proportionate to what exists (decision 2), removes the user
    /// and by cascade its identities, sessions, tokens and links; queues the revocation of
    /// Apple's token; keeps an audit row without personal data.
    func delete(_ signedIn: SignedIn, _ request: DeleteAccountRequest, client: ClientInfo) async throws {
        let user = signedIn.user
        try await stepUp.require(StepUpGate.deleteAccount, signedIn)
        try await requireProof(signedIn, request, client: client)
        try await unitOfWork.run { work in
            guard try await lifecycle.delete(work, user.id, reason: "user_request") else { throw GatehouseError.unauthorized() }
            try await work.audit(.accountDeleted, user: user.id, details: ["anonymous": String(user.isAnonymous)])
        }
    }

    private func requireProof(_ signedIn: SignedIn, _ request: DeleteAccountRequest, client: ClientInfo) async throws {
        let user = signedIn.user
        if user.isAnonymous { return }
        if let session = try await store.session(id: signedIn.identity.sessionID), session.isRecentSignIn(at: clock.now) {
            return
        }
        if let password = request.password, user.passwordHash != nil {
            let verification = try await credentials.checkAttempt(
                password, against: user.passwordHash, account: user.normalizedEmail ?? user.id.description, userID: user.id,
                client: client, event: "delete_account")
            guard verification.matches else { throw reauthenticationRequired("That password is not right.") }
            return
        }
        if let idToken = request.idToken {
            let identities = try await store.identities(of: user.id)
            for identity in identities where identity.provider == .apple || identity.provider == .google {
                guard let person = try? await verifiers.verifier(identity.provider).verify(idToken, rawNonce: request.rawNonce),
                    person.subject == identity.subject
                else { continue }
                return
            }
            throw reauthenticationRequired("That sign-in does not belong to this account.")
        }
        if let assertion = request.passkey {
            // One of this account's passkeys, on a challenge of its own (taken once).
            do {
                _ = try await passkeys.verify(assertion, owner: user.id)
            } catch let error as GatehouseError where error.code == .invalidCredential {
                throw reauthenticationRequired("That passkey could not be verified.")
            }
            return
        }
        if let code = request.code, let email = user.email {
            try await codes.consume(email: email, code: code)
            return
        }
        throw reauthenticationRequired(nil)
    }

    private func reauthenticationRequired(_ detail: String?) -> GatehouseError {
        let base = preset.text(
            "error.reauthentication_required", "To delete your account, confirm it's you: sign in again or enter your password.")
        return GatehouseError(status: 403, code: .reauthenticationRequired, message: detail.map { "\($0) \(base)" } ?? base)
    }
}
