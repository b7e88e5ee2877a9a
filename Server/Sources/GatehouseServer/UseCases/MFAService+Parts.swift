import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

// What the second-factor use case's steps share: the switch, the TOTP check, the recovery
// code's hash, its refusals and the factor's payload (split from MFAService.swift).
extension MFAService {
    func requireEnabled() throws {
        guard preset.mfa.enabled else {
            throw GatehouseError(.methodDisabled, "Two-step sign-in is not available for this app.")
        }
    }

    func totp(_ factor: MFAFactor) throws -> TOTP {
        let secret = try sealer.open(factor.secret, encryption: factor.encryption, what: "a second factor's secret")
        return TOTP(secret: Array(secret)) { key, message in
            Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: key)))
        }
    }

    /// HMAC-SHA256 of the code's 16 characters under a key derived from the server's secret.
    func hash(_ normalizedCode: String) throws -> [UInt8] {
        let code = RecoveryCodes.normalize(normalizedCode) ?? normalizedCode
        return Array(HMAC<SHA256>.authenticationCode(for: Data(code.utf8), using: try codeKey.derived("gatehouse recovery codes")))
    }

    var invalidCode: GatehouseError {
        GatehouseError(.invalidCode, preset.text("error.invalid_code", "That code is not right. Check your authenticator app and try again."))
    }

    /// An authenticator app's code that was taken already (issue 64: the code that just confirmed
    /// the factor, typed again at sign-in in the same 30 seconds): the same code as a wrong one,
    /// its own words (a code works once: wait for the next), and `details.reason: "code_used"`.
    var codeUsed: GatehouseError {
        GatehouseError(
            .invalidCode,
            preset.text(
                "error.totp_code_used", "That code was used already. Each code works once: wait for the next code in your authenticator app."),
            details: ["reason": .string(Self.codeUsedReason)])
    }

    static let codeUsedReason = "code_used"

    /// A recovery code that is not one of the account's, or was used already: its own words, not
    /// the authenticator app's.
    var invalidRecoveryCode: GatehouseError {
        GatehouseError(
            .invalidCode,
            preset.text("error.invalid_recovery_code", "That recovery code is not right, or it was used already. Check it and try again."))
    }

    /// A sign-in whose challenge has had all its tries: that sign-in is over, and a new one can
    /// start at once (no wait, so no `retry_after`); `details.challenge_ended` says so.
    var challengeSpent: GatehouseError {
        GatehouseError(
            .tooManyAttempts, preset.text("error.mfa_challenge_spent", "Too many wrong codes. Please sign in again."),
            details: ["challenge_ended": .bool(true)])
    }

    func tooManyAttempts(retryAfter: Int?) -> GatehouseError {
        GatehouseError(
            .tooManyAttempts,
            preset.text("error.mfa_too_many_attempts", "Too many wrong codes. Please wait, then try again."),
            retryAfter: retryAfter)
    }

    static let challengeInvalid = GatehouseError(.challengeInvalid, "This sign-in has expired or was completed already. Please sign in again.")
    static let notFound = GatehouseError.notFound("This account has no such authenticator app.")

    /// The lockout key of an account's second-factor codes: apart from its password's, and apart
    /// per first factor the code follows (`password`, `magic_link`, `apple`, …), so a lockout
    /// kept up by someone who has only the password does not hold the owner who proves the inbox.
    static func throttleKey(_ user: UserID, after firstFactor: String) -> String { "mfa:\(user):\(firstFactor)" }

    /// Recovery-code sets one account may make a minute.
    static let regenerationsPerMinute = 1

    /// The account's factors that still count: confirmed ones, and unconfirmed ones within
    /// `mfa.unconfirmed_factor_ttl_seconds` of their enrolment.
    func liveFactors(of user: UserID, in reader: (any MFAFactorStore)? = nil) async throws -> [MFAFactor] {
        try await (reader ?? store).mfaFactors(of: user).filter {
            $0.isLive(at: clock.now, unconfirmedTTL: preset.mfa.unconfirmedFactorTTLSeconds)
        }
    }

    static func id(_ factor: MFAFactor) -> String { factor.id.uuidString.lowercased() }


    static func payload(_ factor: MFAFactor) -> MFAFactorPayload {
        MFAFactorPayload(
            id: id(factor), type: factor.type, name: factor.name, status: factor.isConfirmed ? "verified" : "unverified",
            createdAt: factor.createdAt.rfc3339, lastUsedAt: factor.lastUsedAt?.rfc3339)
    }

    /// 1–64 characters without control characters; "Authenticator app" when none is given.
    static func factorName(_ name: String?) throws -> String {
        try itemName(name, fallback: "Authenticator app", what: "An authenticator app's")
    }
}
