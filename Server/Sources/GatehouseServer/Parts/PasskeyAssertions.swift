import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Passkey ceremonies' shared steps: issuing challenges, and checking an assertion (a
/// sign-in, or the proof before deleting an account). Every challenge is taken by one atomic
/// delete before anything is verified, so a replayed or raced answer is checked once at most.
struct PasskeyAssertions: Sendable {
    let store: any PasskeyStore & UserStore
    let ceremony: WebAuthnCeremony
    let relyingParty: RelyingParty
    let settings: PasskeySettings
    let clock: any WallClock

    /// 32 bytes from the system's CSPRNG (WebAuthn asks for at least 16).
    static func newChallenge() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// Stores a new challenge for `ceremony`; its expiry is the preset's.
    func open(_ ceremony: PasskeyChallenge.Ceremony, user: UserID?, email: String? = nil, session: SessionID? = nil) async throws
        -> PasskeyChallenge
    {
        let now = clock.now
        let challenge = PasskeyChallenge(
            ceremony: ceremony, challenge: Self.newChallenge(), userID: user, email: email, sessionID: session, createdAt: now,
            expiresAt: now.addingTimeInterval(TimeInterval(settings.challengeTTLSeconds)))
        try await store.insertPasskeyChallenge(challenge)
        return challenge
    }

    /// Takes the challenge `id` names for `ceremony`: 400 `challenge_invalid` when it is
    /// unknown, expired, used already or of the other ceremony.
    func consume(_ id: String, _ ceremony: PasskeyChallenge.Ceremony) async throws -> PasskeyChallenge {
        guard let uuid = UUID(uuidString: id), let challenge = try await store.consumePasskeyChallenge(id: uuid, now: clock.now),
            challenge.ceremony == ceremony
        else { throw Self.challengeInvalid }
        return challenge
    }

    func expectation(_ challenge: PasskeyChallenge) -> PasskeyExpectation {
        PasskeyExpectation(
            challenge: challenge.challenge, rpID: relyingParty.id, origins: relyingParty.allowedOrigins,
            requireUserVerification: settings.requiresUserVerification)
    }

    /// Verifies an assertion on challenge `request.challengeID` and returns the passkey it
    /// came from, its counter and backup state stored, and whether the authenticator verified
    /// the user (a sign-in may count that as a second factor). `owner`, when given, is the account
    /// the passkey must belong to. Failures are 401 `invalid_credential` with the reason.
    func verify(_ request: PasskeyAssertionRequest, owner: UserID? = nil) async throws -> (passkey: Passkey, userVerified: Bool) {
        let response = request.credential.response
        guard let rawID = Data(base64URLEncoded: request.credential.rawId), let clientData = Data(base64URLEncoded: response.clientDataJSON),
            let authenticatorData = Data(base64URLEncoded: response.authenticatorData),
            let signature = Data(base64URLEncoded: response.signature)
        else { throw Self.invalidCredential(.malformed, status: 401) }
        let userHandle = try response.userHandle.flatMap { text throws in
            guard let bytes = Data(base64URLEncoded: text) else { throw Self.invalidCredential(.malformed, status: 401) }
            return bytes.isEmpty ? nil : Array(bytes)
        }
        let challenge = try await consume(request.challengeID, .authentication)
        guard var passkey = try await store.passkey(credentialID: Array(rawID)),
            (owner ?? challenge.userID).map({ $0 == passkey.userID }) ?? true
        else { throw Self.unknownCredential }
        if let userHandle, userHandle != Self.userHandle(passkey.userID) {
            throw Self.invalidCredential(.userHandleMismatch, status: 401)
        }
        let verified: VerifiedAssertion
        do {
            verified = try ceremony.verifyAssertion(
                clientDataJSON: Array(clientData), authenticatorData: Array(authenticatorData), signature: Array(signature),
                credential: passkey.stored, expecting: expectation(challenge))
        } catch {
            throw Self.invalidCredential(error, status: 401)
        }
        // Compare-and-set on the counter: of two answers verified at once, one moves it.
        let now = clock.now
        guard
            try await store.recordPasskeyUse(
                passkey.id, expected: passkey.signCount, signCount: verified.signCount, backedUp: verified.backedUp, at: now)
        else { throw Self.invalidCredential(.signCountRegressed, status: 401) }
        passkey.signCount = verified.signCount
        passkey.backedUp = verified.backedUp
        passkey.lastUsedAt = now
        return (passkey, verified.userVerified)
    }

    /// The WebAuthn user handle of an account: its id's text as UTF-8 (never personal data).
    static func userHandle(_ user: UserID) -> [UInt8] {
        Array(user.description.utf8)
    }

    static let challengeInvalid = GatehouseError(
        .challengeInvalid, "This passkey request has expired or was used already. Please try again.")

    static let unknownCredential = GatehouseError(
        status: 401, code: .invalidCredential, message: "This passkey is not registered for this account.",
        reasons: ["unknown_credential"])

    /// `invalid_credential` with the failure's stable reason.
    static func invalidCredential(_ failure: PasskeyFailure, status: Int = 400) -> GatehouseError {
        GatehouseError(
            status: status, code: .invalidCredential, message: "The passkey could not be verified. Please try again.",
            reasons: [failure.rawValue])
    }
}
