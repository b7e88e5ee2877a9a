import Foundation
import GatehouseWire

/// A passkey of an account: a WebAuthn credential it registered.
public struct Passkey: Sendable, Equatable {
    public var id: UUID
    public var userID: UserID
    public var credentialID: [UInt8]
    /// The COSE key as the authenticator sent it.
    public var publicKey: [UInt8]
    public var signCount: UInt32
    /// BE at registration: whether the credential may be synced (it may not change later).
    public var backupEligible: Bool
    /// BS as last seen.
    public var backedUp: Bool
    public var transports: [String]
    public var aaguid: [UInt8]
    public var name: String
    public var createdAt: Date
    public var lastUsedAt: Date?

    public init(
        id: UUID = SecureRandom.uuid(), userID: UserID, credentialID: [UInt8], publicKey: [UInt8], signCount: UInt32, backupEligible: Bool,
        backedUp: Bool, transports: [String], aaguid: [UInt8], name: String, createdAt: Date, lastUsedAt: Date? = nil
    ) {
        self.id = id
        self.userID = userID
        self.credentialID = credentialID
        self.publicKey = publicKey
        self.signCount = signCount
        self.backupEligible = backupEligible
        self.backedUp = backedUp
        self.transports = transports
        self.aaguid = aaguid
        self.name = name
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }

    /// The stored credential a sign-in checks an assertion against.
    public var stored: StoredCredential {
        StoredCredential(publicKey: publicKey, signCount: signCount, backupEligible: backupEligible)
    }
}

/// An open WebAuthn ceremony: the challenge the options carried, consumed once by the verify
/// call that names its id.
public struct PasskeyChallenge: Sendable, Equatable {
    public enum Ceremony: String, Sendable {
        case registration
        case authentication
    }

    public var id: UUID
    public var ceremony: Ceremony
    public var challenge: [UInt8]
    /// Registration: the account the passkey is for (the signed-in one, or the one a sign-up
    /// will create). Authentication by email: the account asked for.
    public var userID: UserID?
    /// A passkey sign-up's address, when one was given.
    public var email: String?
    /// Registration with a Bearer: the session that asked (the verify must come from it too).
    public var sessionID: SessionID?
    public var createdAt: Date
    public var expiresAt: Date

    public init(
        id: UUID = SecureRandom.uuid(), ceremony: Ceremony, challenge: [UInt8], userID: UserID?, email: String?, sessionID: SessionID?,
        createdAt: Date, expiresAt: Date
    ) {
        self.id = id
        self.ceremony = ceremony
        self.challenge = challenge
        self.userID = userID
        self.email = email
        self.sessionID = sessionID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// A preset's passkey rules.
public struct PasskeySettings: Sendable, Equatable, PresetSection {
    /// `required`: every ceremony must report user verification (Face ID, Touch ID, the
    /// device passcode). `preferred`: asked for, not enforced.
    public var userVerification = "required"
    /// How long a ceremony's challenge stays valid.
    public var challengeTTLSeconds = 300

    public init() {}

    public var requiresUserVerification: Bool { userVerification == "required" }

    static var fields: [PresetField<Self>] {
        [.key("user_verification", \.userVerification), .key("challenge_ttl_seconds", \.challengeTTLSeconds)]
    }
}
