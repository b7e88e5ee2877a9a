import Foundation
import GatehouseWire

/// The catalogue of every way into an account and every second factor (issue 39). Each rule
/// that concerns "all ways in" (what the owner's proof of the inbox ends, what counts as a last
/// way in, what deletion ends and export carries, what operators are shown, what changing one
/// needs) switches over it exhaustively, so a new case does not compile until each rule has
/// decided about it, and `WaysInTests` walks `allCases` through the running server.
public enum Credential: String, CaseIterable, Sendable {
    /// The email identity's password.
    case password
    /// The address itself: a magic link or its code, a reset link. It is what the owner's
    /// proof of the inbox proves, so that proof never ends it.
    case emailLink = "email_link"
    /// A Sign in with Apple identity.
    case apple
    /// A Google identity.
    case google
    /// A passkey (WebAuthn).
    case passkey
    /// An anonymous start: the device's session is its only way back in.
    case anonymous
    /// A verified phone number: a code by SMS signs in with it (issue 43).
    case phone
    /// A TOTP authenticator app, a second factor once confirmed.
    case totp
    /// The ten single-use codes that stand in for a second factor.
    case recoveryCodes = "recovery_codes"

    /// A way in opens a session by itself; a second factor only completes one.
    public enum Role: Sendable, Equatable {
        case wayIn
        case secondFactor
    }

    public var role: Role {
        switch self {
        case .password, .emailLink, .apple, .google, .passkey, .anonymous, .phone: .wayIn
        case .totp, .recoveryCodes: .secondFactor
        }
    }

    /// What the owner's first proof of an address or a number the account never verified does
    /// with this credential. Whoever set the account up may not be that person, so everything
    /// they could have added ends; only what was proved survives.
    public enum AtInboxProof: Sendable, Equatable {
        /// The proof is of this: it stays.
        case kept
        /// It ends (the password is replaced instead when the proof sets a new one).
        case ended
    }

    /// The proofs of an unverified channel: an address (`emailLink`: a magic link or its code,
    /// a reset link) or a number (`phone`: an SMS code).
    public static let ownerProofs: [Credential] = [.emailLink, .phone]

    /// What the first proof of `proved` (one of `ownerProofs`) does with this credential: what
    /// was proved is kept, everything else ends (an address only while it is unverified itself:
    /// the caller checks that).
    public func atProof(of proved: Credential) -> AtInboxProof {
        switch self {
        case .emailLink, .phone: self == proved ? .kept : .ended
        case .password, .apple, .google, .passkey, .anonymous, .totp, .recoveryCodes: .ended
        }
    }

    /// What the inbox owner's first proof of the address does with this credential.
    public var atInboxProof: AtInboxProof { atProof(of: .emailLink) }

    /// Whether adding, confirming or removing it is a change to how the account is protected,
    /// which needs a recent sign-in and, once the account has a confirmed second factor, a
    /// session that proved one (`aal2`): a stolen older session cannot plant or pull one.
    public var changeNeedsOwnerProof: Bool {
        switch self {
        // A number also proves itself with its own code (`POST /v1/me/phone/verify`).
        case .passkey, .phone, .totp, .recoveryCodes: true
        // Linking an address, a provider or a password has rules of its own (a verified
        // address, the provider's proof, the current password).
        case .password, .emailLink, .apple, .google, .anonymous: false
        }
    }

    /// The proof `DELETE /v1/me` takes from this credential (the request's field): its password,
    /// a fresh id token of the provider, an assertion of a passkey, a code mailed to the
    /// address. Nil for what proves nobody on its own.
    public var deletionProof: String? {
        switch self {
        case .password: "password"
        case .apple, .google: "id_token"
        case .passkey: "passkey"
        case .emailLink: "code"
        case .phone: "sms_code"
        case .anonymous, .totp, .recoveryCodes: nil
        }
    }

    /// The provider of an identity row that stands for this credential, if it is one.
    public var provider: Provider? {
        switch self {
        case .apple: .apple
        case .google: .google
        case .anonymous: .anonymous
        case .emailLink: .email
        case .phone: .phone
        case .password, .passkey, .totp, .recoveryCodes: nil
        }
    }

    /// The credential an identity row of `provider` stands for.
    public static func identity(_ provider: Provider) -> Credential? {
        allCases.first { $0.provider == provider }
    }

    /// The ways in, in the catalogue's order.
    public static var waysIn: [Credential] { allCases.filter { $0.role == .wayIn } }
}

/// How many of each credential an account holds (confirmed factors and unused recovery codes
/// only): the one input of the last-way-in rule and of what operators are shown.
public struct CredentialInventory: Sendable, Equatable {
    public var counts: [Credential: Int]

    public init(_ counts: [Credential: Int] = [:]) {
        self.counts = counts.filter { $0.value > 0 }
    }

    public subscript(_ credential: Credential) -> Int {
        get { counts[credential] ?? 0 }
        set { counts[credential] = newValue > 0 ? newValue : nil }
    }

    /// The counts by the catalogue's names (`password`, `email_link`, …), every case present.
    public var byName: [String: Int] {
        Dictionary(uniqueKeysWithValues: Credential.allCases.map { ($0.rawValue, self[$0]) })
    }

    /// Whether this credential lets its holder come back after every session ended. An
    /// anonymous start does not: its session is all it has.
    public static func letsBackIn(_ credential: Credential) -> Bool {
        switch credential {
        case .password, .emailLink, .apple, .google, .passkey, .phone: true
        case .anonymous, .totp, .recoveryCodes: false
        }
    }

    /// The ways back in the account has.
    public var waysBackIn: Int {
        Credential.waysIn.filter(Self.letsBackIn).reduce(0) { $0 + self[$1] }
    }

    /// Whether removing `removed` (how many of each) leaves the account without a way back in
    /// when it has one now: the rule every unlink and removal asks.
    public func leavesNoWayIn(removing removed: [Credential: Int]) -> Bool {
        var after = self
        for (credential, count) in removed { after[credential] = self[credential] - count }
        return waysBackIn > 0 && after.waysBackIn == 0
    }
}
