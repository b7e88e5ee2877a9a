import Foundation
import GatehouseWire

/// Why a passkey ceremony's answer was refused; `rawValue` is the stable reason the server
/// lists under `reasons` beside `invalid_credential`.
public enum PasskeyFailure: String, Error, Sendable, CaseIterable {
    /// A member is missing, is not base64url, or its bytes do not parse (CBOR, JSON, lengths).
    case malformed
    /// clientDataJSON's `type` is not the ceremony's (`webauthn.create` / `webauthn.get`).
    case typeMismatch = "type_mismatch"
    /// clientDataJSON's challenge is not the one issued with the options.
    case challengeMismatch = "challenge_mismatch"
    /// clientDataJSON's origin is not in the configured allowlist, or it was cross-origin.
    case originMismatch = "origin_mismatch"
    /// authenticatorData's rpIdHash is not SHA-256 of the configured rp id.
    case rpIDMismatch = "rp_id_mismatch"
    /// The authenticator did not test for user presence (UP).
    case userPresenceMissing = "user_presence_missing"
    /// The preset requires user verification (UV) and the authenticator did not do it.
    case userVerificationMissing = "user_verification_missing"
    /// BS (backed up) set without BE (backup eligible): no authenticator does that.
    case backupStateInvalid = "backup_state_invalid"
    /// BE differs from what the credential said at registration.
    case backupEligibilityChanged = "backup_eligibility_changed"
    /// A registration without attested credential data.
    case missingCredentialData = "missing_credential_data"
    /// An attestation format other than `none` and packed self-attestation (ES256).
    case unsupportedAttestation = "unsupported_attestation"
    /// A credential public key other than COSE EC2 P-256 with ES256.
    case unsupportedAlgorithm = "unsupported_algorithm"
    /// The credential id in the answer differs from the one in authenticatorData, or is too long.
    case credentialIDMismatch = "credential_id_mismatch"
    /// A signature (assertion or packed attestation) that does not verify.
    case signatureInvalid = "signature_invalid"
    /// The signature counter did not grow although one side of it is non-zero (a cloned key).
    case signCountRegressed = "sign_count_regressed"
    /// The answer's user handle is not the credential's account.
    case userHandleMismatch = "user_handle_mismatch"
}

/// The hashing and signature checks a ceremony needs, supplied by the server (on swift-crypto)
/// so that this module stays on Foundation alone.
public protocol PasskeyCrypto: Sendable {
    func sha256(_ bytes: [UInt8]) -> [UInt8]
    /// Whether `signature` (ASN.1 DER) is a valid ECDSA P-256 SHA-256 signature of `message`
    /// by the key with affine coordinates `key.x`, `key.y`.
    func isValidES256(signature: [UInt8], of message: [UInt8], by key: COSEKey) -> Bool
}

/// A credential public key in COSE form, as WebAuthn carries it: only EC2 keys on P-256 for
/// ES256 (COSE alg −7) are accepted; every platform authenticator offers them.
public struct COSEKey: Sendable, Equatable {
    public var x: [UInt8]
    public var y: [UInt8]

    /// Reads a COSE_Key map: kty 2 (EC2), alg −7 (ES256), crv 1 (P-256), 32-byte x and y.
    public init(_ item: CBOR) throws(PasskeyFailure) {
        guard case .map = item else { throw .malformed }
        guard item[int: 1]?.integer == 2, item[int: 3]?.integer == -7, item[int: -1]?.integer == 1 else {
            throw .unsupportedAlgorithm
        }
        guard let x = item[int: -2]?.byteString, let y = item[int: -3]?.byteString, x.count == 32, y.count == 32 else {
            throw .malformed
        }
        self.x = x
        self.y = y
    }

    /// Reads a stored COSE key (what registration kept).
    public init(bytes: [UInt8]) throws(PasskeyFailure) {
        do {
            try self.init(try CBORReader().decode(bytes))
        } catch let error as PasskeyFailure {
            throw error
        } catch {
            throw .malformed
        }
    }
}

/// authenticatorData (WebAuthn §6.1): the rp id hash, the flags, the signature counter and,
/// at registration, the attested credential data.
public struct AuthenticatorData: Sendable {
    public struct Flags: Sendable, Equatable {
        public var userPresent: Bool
        public var userVerified: Bool
        public var backupEligible: Bool
        public var backedUp: Bool
        public var attestedCredentialData: Bool
        public var extensionData: Bool

        init(_ byte: UInt8) {
            userPresent = byte & 0x01 != 0
            userVerified = byte & 0x04 != 0
            backupEligible = byte & 0x08 != 0
            backedUp = byte & 0x10 != 0
            attestedCredentialData = byte & 0x40 != 0
            extensionData = byte & 0x80 != 0
        }
    }

    public struct AttestedCredential: Sendable {
        public var aaguid: [UInt8]
        public var credentialID: [UInt8]
        /// The COSE key as the authenticator encoded it (stored as is).
        public var publicKeyBytes: [UInt8]
        public var publicKey: COSEKey
    }

    public let bytes: [UInt8]
    public let rpIDHash: [UInt8]
    public let flags: Flags
    public let signCount: UInt32
    public let attested: AttestedCredential?

    /// The longest credential id WebAuthn allows (§5.8.3's 1023 bytes).
    public static let maxCredentialIDLength = 1023

    public init(_ bytes: [UInt8]) throws(PasskeyFailure) {
        guard bytes.count >= 37 else { throw .malformed }
        self.bytes = bytes
        rpIDHash = Array(bytes[0..<32])
        flags = Flags(bytes[32])
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var rest = Array(bytes[37...])
        if flags.attestedCredentialData {
            guard rest.count >= 18 else { throw .malformed }
            let aaguid = Array(rest[0..<16])
            let length = Int(rest[16]) << 8 | Int(rest[17])
            guard length <= Self.maxCredentialIDLength else { throw .credentialIDMismatch }
            guard rest.count >= 18 + length else { throw .malformed }
            let credentialID = Array(rest[18..<(18 + length)])
            rest = Array(rest[(18 + length)...])
            let (item, used): (CBOR, Int)
            do {
                (item, used) = try CBORReader().decodePrefix(rest)
            } catch {
                throw .malformed
            }
            attested = AttestedCredential(
                aaguid: aaguid, credentialID: credentialID, publicKeyBytes: Array(rest[0..<used]), publicKey: try COSEKey(item))
            rest = Array(rest[used...])
        } else {
            attested = nil
        }
        if flags.extensionData {
            // Extension outputs are read only to check that they are well-formed CBOR.
            do {
                _ = try CBORReader().decode(rest)
            } catch {
                throw .malformed
            }
        } else if !rest.isEmpty {
            throw .malformed
        }
    }
}

/// What a relying party holds while a ceremony is open, and what it accepts.
public struct PasskeyExpectation: Sendable {
    public var challenge: [UInt8]
    public var rpID: String
    /// Exact origins (`https://example.com`); a native iOS app's is `https://<rp id>`.
    public var origins: Set<String>
    public var requireUserVerification: Bool

    public init(challenge: [UInt8], rpID: String, origins: Set<String>, requireUserVerification: Bool) {
        self.challenge = challenge
        self.rpID = rpID
        self.origins = origins
        self.requireUserVerification = requireUserVerification
    }
}

/// A credential a registration ceremony proved, ready to store.
public struct RegisteredCredential: Sendable {
    public var credentialID: [UInt8]
    public var publicKey: [UInt8]
    public var signCount: UInt32
    public var backupEligible: Bool
    public var backedUp: Bool
    public var aaguid: [UInt8]
}

/// What a stored credential brings to an authentication ceremony.
public struct StoredCredential: Sendable {
    public var publicKey: [UInt8]
    public var signCount: UInt32
    public var backupEligible: Bool

    public init(publicKey: [UInt8], signCount: UInt32, backupEligible: Bool) {
        self.publicKey = publicKey
        self.signCount = signCount
        self.backupEligible = backupEligible
    }
}

/// What an authentication ceremony proved: the counter and backup state to store.
public struct VerifiedAssertion: Sendable, Equatable {
    public var signCount: UInt32
    public var backedUp: Bool
    public var userVerified: Bool
}

/// The relying party's checks of WebAuthn Level 3 §7.1 (registration) and §7.2
/// (authentication), on bytes the client sent. Pure: hashing and signatures come from
/// `PasskeyCrypto`, the challenge and settings from the caller.
public struct WebAuthnCeremony: Sendable {
    public let crypto: any PasskeyCrypto

    public init(crypto: any PasskeyCrypto) {
        self.crypto = crypto
    }

    /// §7.1: verifies a registration answer. `credentialID` is the answer's `rawId`.
    public func verifyRegistration(
        credentialID: [UInt8], clientDataJSON: [UInt8], attestationObject: [UInt8], expecting expectation: PasskeyExpectation
    ) throws(PasskeyFailure) -> RegisteredCredential {
        try checkClientData(clientDataJSON, type: "webauthn.create", expectation)
        let object: CBOR
        do {
            object = try CBORReader().decode(attestationObject)
        } catch {
            throw .malformed
        }
        guard let format = object[text: "fmt"]?.textString, let statement = object[text: "attStmt"],
            let authDataBytes = object[text: "authData"]?.byteString
        else { throw .malformed }
        let authData = try AuthenticatorData(authDataBytes)
        try checkAuthenticatorData(authData, expectation)
        guard let attested = authData.attested else { throw .missingCredentialData }
        guard attested.credentialID == credentialID, !credentialID.isEmpty else { throw .credentialIDMismatch }
        let clientDataHash = crypto.sha256(clientDataJSON)
        switch format {
        case "none":
            guard statement == .map([]) else { throw .malformed }
        case "packed":
            // Self-attestation only: signed by the credential's own key, with its algorithm.
            guard statement[text: "x5c"] == nil else { throw .unsupportedAttestation }
            guard statement[text: "alg"]?.integer == -7 else { throw .unsupportedAttestation }
            guard let signature = statement[text: "sig"]?.byteString else { throw .malformed }
            guard crypto.isValidES256(signature: signature, of: authDataBytes + clientDataHash, by: attested.publicKey) else {
                throw .signatureInvalid
            }
        default:
            throw .unsupportedAttestation
        }
        return RegisteredCredential(
            credentialID: attested.credentialID, publicKey: attested.publicKeyBytes, signCount: authData.signCount,
            backupEligible: authData.flags.backupEligible, backedUp: authData.flags.backedUp, aaguid: attested.aaguid)
    }

    /// §7.2: verifies an assertion by `credential`.
    public func verifyAssertion(
        clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8], credential: StoredCredential,
        expecting expectation: PasskeyExpectation
    ) throws(PasskeyFailure) -> VerifiedAssertion {
        try checkClientData(clientDataJSON, type: "webauthn.get", expectation)
        let authData = try AuthenticatorData(authenticatorData)
        try checkAuthenticatorData(authData, expectation)
        guard authData.flags.backupEligible == credential.backupEligible else { throw .backupEligibilityChanged }
        let key = try COSEKey(bytes: credential.publicKey)
        guard crypto.isValidES256(signature: signature, of: authenticatorData + crypto.sha256(clientDataJSON), by: key) else {
            throw .signatureInvalid
        }
        // §7.2 step 21: a counter must grow once either side has one; synced passkeys send 0.
        if authData.signCount != 0 || credential.signCount != 0, authData.signCount <= credential.signCount {
            throw .signCountRegressed
        }
        return VerifiedAssertion(
            signCount: authData.signCount, backedUp: authData.flags.backedUp, userVerified: authData.flags.userVerified)
    }

    private func checkClientData(_ json: [UInt8], type: String, _ expectation: PasskeyExpectation) throws(PasskeyFailure) {
        guard json.count <= 4_096, let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any],
            let actualType = object["type"] as? String, let challenge = object["challenge"] as? String,
            let origin = object["origin"] as? String
        else { throw .malformed }
        guard actualType == type else { throw .typeMismatch }
        guard let bytes = Data(base64URLEncoded: challenge), constantTimeEquals(Array(bytes), expectation.challenge) else {
            throw .challengeMismatch
        }
        guard expectation.origins.contains(origin) else { throw .originMismatch }
        if let crossOrigin = object["crossOrigin"], (crossOrigin as? Bool) != false { throw .originMismatch }
    }

    private func checkAuthenticatorData(_ authData: AuthenticatorData, _ expectation: PasskeyExpectation) throws(PasskeyFailure) {
        guard constantTimeEquals(authData.rpIDHash, crypto.sha256(Array(expectation.rpID.utf8))) else { throw .rpIDMismatch }
        guard authData.flags.userPresent else { throw .userPresenceMissing }
        if expectation.requireUserVerification, !authData.flags.userVerified { throw .userVerificationMissing }
        if authData.flags.backedUp, !authData.flags.backupEligible { throw .backupStateInvalid }
    }
}
