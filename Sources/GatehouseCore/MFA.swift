import Foundation
import GatehouseWire

/// A second factor of an account: a TOTP authenticator app, counted once its first code is
/// confirmed.
public struct MFAFactor: Sendable, Equatable {
    public static let totp = "totp"
    /// At most this many factors (confirmed or not) per account.
    public static let maximumPerAccount = 10

    public var id: UUID
    public var userID: UserID
    public var type: String
    public var name: String
    /// The TOTP secret as stored: sealed with `GATEHOUSE_SECRET_KEY` when one is set.
    public var secret: [UInt8]
    /// `none` or the sealer's algorithm.
    public var encryption: String
    public var createdAt: Date
    /// nil until a first code confirmed it; only confirmed factors are asked for at sign-in.
    public var confirmedAt: Date?
    /// The TOTP step of the last code accepted: a code is taken only for a later step, so no
    /// code works twice (RFC 6238 §5.2).
    public var lastUsedStep: Int64?
    public var lastUsedAt: Date?

    public init(
        id: UUID = SecureRandom.uuid(), userID: UserID, type: String = Self.totp, name: String, secret: [UInt8], encryption: String, createdAt: Date,
        confirmedAt: Date? = nil, lastUsedStep: Int64? = nil, lastUsedAt: Date? = nil
    ) {
        self.id = id
        self.userID = userID
        self.type = type
        self.name = name
        self.secret = secret
        self.encryption = encryption
        self.createdAt = createdAt
        self.confirmedAt = confirmedAt
        self.lastUsedStep = lastUsedStep
        self.lastUsedAt = lastUsedAt
    }

    public var isConfirmed: Bool { confirmedAt != nil }

    /// Whether the factor still counts at `now`: confirmed, or enrolled within `ttl` seconds.
    public func isLive(at now: Date, unconfirmedTTL ttl: Int) -> Bool {
        isConfirmed || now.timeIntervalSince(createdAt) < TimeInterval(ttl)
    }
}

/// A sign-in that proved its first factor and waits for the second: the answer named only by
/// its id's hash, taken once by the verification that completes it.
public struct MFAChallenge: Sendable, Equatable {
    /// SHA-256 of the id the client holds.
    public var idHash: [UInt8]
    public var userID: UserID
    /// How the first factor was proved: the session's provider and `amr` method.
    public var provider: Provider
    public var method: String
    /// The audit event the session will be recorded under (`login`, `signup`).
    public var event: String
    public var createdAt: Date
    public var expiresAt: Date
    /// Verifications tried so far (each reserved before its code is checked).
    public var attempts: Int

    public init(
        idHash: [UInt8], userID: UserID, provider: Provider, method: String, event: String, createdAt: Date, expiresAt: Date,
        attempts: Int = 0
    ) {
        self.idHash = idHash
        self.userID = userID
        self.provider = provider
        self.method = method
        self.event = event
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.attempts = attempts
    }
}

/// The preset's rules for second factors.
public struct MFASettings: Sendable, Equatable, PresetSection {
    /// Whether accounts may add a second factor at all.
    public var enabled = true
    /// A passkey sign-in whose authenticator verified the user (Face ID, a PIN) is two factors
    /// in one: it opens an `aal2` session without a challenge.
    public var passkeyCountsAsTwoFactors = false
    /// How long a sign-in's challenge waits for its code.
    public var challengeTTLSeconds = 300
    /// Codes one challenge may be tried with before it dies.
    public var attemptsPerChallenge = 5
    /// How long an enrolled factor waits for its first code: an unconfirmed one older than this
    /// cannot be confirmed and is swept, so a factor planted by a stolen session cannot lie
    /// dormant until the owner's own factor gives that session a reason to use it.
    public var unconfirmedFactorTTLSeconds = 600
    /// The issuer authenticator apps show; the app's name when unset.
    public var issuer: String?

    public init() {}

    static var fields: [PresetField<Self>] {
        [
            .key("enabled", \.enabled), .key("passkey_counts_as_two_factors", \.passkeyCountsAsTwoFactors),
            .key("challenge_ttl_seconds", \.challengeTTLSeconds), .key("attempts_per_challenge", \.attemptsPerChallenge),
            .key("unconfirmed_factor_ttl_seconds", \.unconfirmedFactorTTLSeconds),
            .key("issuer", \.issuer),
        ]
    }
}

/// What a gate knows of how the caller signed in: the assurance level and the last time a
/// factor was proved (the sign-in, or a later step-up).
public struct Assurance: Sendable, Equatable {
    public var level: AssuranceLevel
    public var authenticatedAt: Date

    public init(level: AssuranceLevel, authenticatedAt: Date) {
        self.level = level
        self.authenticatedAt = authenticatedAt
    }
}

extension Assurance {
    /// What an access token's `aal` and `amr` say: the level (`aal1` when absent) and the latest
    /// factor's time; nil without an `amr`.
    public init?(aal: AssuranceLevel?, amr: [AuthenticationMethodReference]) {
        guard let latest = amr.map(\.timestamp).max() else { return nil }
        self.init(level: aal ?? .aal1, authenticatedAt: Date(timeIntervalSince1970: TimeInterval(latest)))
    }
}

/// Recovery codes: ten single-use codes of 16 base32 characters (80 bits each), shown once in
/// groups of four (`abcd-efgh-ijkl-mnop`) and stored only as keyed hashes.
public enum RecoveryCodes {
    public static let count = 10
    static let characters = 16

    /// Ten new codes from `random` (the CSPRNG's bytes).
    public static func generate(random: (Int) -> [UInt8]) -> [String] {
        (0..<count).map { _ in
            let text = Base32.encode(random(10)).lowercased()
            return stride(from: 0, to: characters, by: 4).map { start in
                let from = text.index(text.startIndex, offsetBy: start)
                return String(text[from..<text.index(from, offsetBy: 4)])
            }.joined(separator: "-")
        }
    }

    /// The code as typed reduced to its 16 characters (case, spaces and hyphens do not count),
    /// or nil when it cannot be one.
    public static func normalize(_ typed: String) -> String? {
        let kept = typed.lowercased().filter { $0 != "-" && $0 != " " }
        guard kept.count == characters, Base32.decode(kept.uppercased()) != nil else { return nil }
        return kept
    }
}
