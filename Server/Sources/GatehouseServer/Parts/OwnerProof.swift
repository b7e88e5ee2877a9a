import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// What a change to how an account is protected needs, for every credential the catalogue marks
/// (`Credential.changeNeedsOwnerProof`: passkeys, phone numbers, second factors, recovery codes): a session
/// that proved a second factor once the account has a confirmed one (`aal2`), and a recent
/// sign-in. So a session stolen before any factor existed cannot plant one, confirm a dormant
/// one, pull the owner's, or mint recovery codes (issue 39, finding 3). Every use case that adds,
/// confirms or removes one of them asks here.
struct OwnerProof: Sendable {
    let preset: Preset
    let clock: any WallClock

    /// Throws 403 `mfa_required` (naming the confirmed factors, so the session can step up) or
    /// 403 `reauthentication_required` in the preset's words.
    func require(_ signedIn: SignedIn, changing credential: Credential, factors: [MFAFactor]) throws {
        guard credential.changeNeedsOwnerProof else { return }
        try requireSecondFactor(signedIn, factors: factors)
        // An anonymous account's session is all it has: there is no sign-in to repeat.
        guard !signedIn.user.isAnonymous, !signedIn.session.isRecentSignIn(at: clock.now) else { return }
        let (key, words): (String, String)
        switch credential {
        case .passkey: (key, words) = ("error.passkey_reauthentication_required", "To add a passkey, sign in again first.")
        case .phone: (key, words) = ("error.phone_reauthentication_required", "To change your phone number, sign in again first.")
        case .totp, .recoveryCodes:
            (key, words) = ("error.mfa_reauthentication_required", "To change two-step sign-in, sign in again first.")
        case .password, .emailLink, .apple, .google, .anonymous: return
        }
        throw GatehouseError(.reauthenticationRequired, preset.text(key, words))
    }

    /// Once the account has a confirmed factor, only a session that proved one may see or change
    /// its second factors. The refusal names the confirmed factors (`details.factors`, as a
    /// challenge does), so that a session at `aal1` can step up with one of them.
    func requireSecondFactor(_ signedIn: SignedIn, factors: [MFAFactor]) throws {
        let confirmed = factors.filter(\.isConfirmed)
        guard !confirmed.isEmpty, signedIn.session.assurance < .aal2 else { return }
        throw GatehouseError(
            .mfaRequired, preset.text("error.mfa_required", "Confirm it's you with your authenticator app to continue."),
            details: ["factors": JSONValue(encoding: confirmed.map(Self.summary)) ?? .array([])])
    }

    /// What a challenge or a refusal says of a factor: no secret, no times.
    static func summary(_ factor: MFAFactor) -> MFAFactorSummary {
        MFAFactorSummary(id: factor.id.uuidString.lowercased(), type: factor.type, name: factor.name)
    }
}
