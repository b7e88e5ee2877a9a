// Second factors: TOTP enrollment, recovery codes, the challenge a sign-in answers for an
// account that has a factor, and its verification (or a signed-in session's step-up).

/// What a sign-in answers: the session, or, for an account with a confirmed second factor, an
/// MFA challenge (`{"mfa": {…}}`) to complete with `POST /v1/auth/mfa/verify`.
public enum SignInAnswer<Signed: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
    case signedIn(Signed)
    case mfaRequired(MFAChallengePayload)

    enum CodingKeys: String, CodingKey { case mfa }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let challenge = try container.decodeIfPresent(MFAChallengePayload.self, forKey: .mfa) {
            self = .mfaRequired(challenge)
        } else {
            self = .signedIn(try Signed(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .signedIn(let signed):
            try signed.encode(to: encoder)
        case .mfaRequired(let challenge):
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(challenge, forKey: .mfa)
        }
    }

    /// The session's answer, when the sign-in is complete.
    public var signedIn: Signed? {
        if case .signedIn(let signed) = self { return signed }
        return nil
    }

    /// The challenge, when a second factor is needed.
    public var challenge: MFAChallengePayload? {
        if case .mfaRequired(let challenge) = self { return challenge }
        return nil
    }
}

/// A sign-in's wait for its second factor.
public struct MFAChallengePayload: Codable, Sendable, Hashable {
    /// Sent back with the code; valid once, until `expires_at`.
    public var challengeID: String
    /// The account's confirmed factors to choose from.
    public var factors: [MFAFactorSummary]
    /// RFC 3339.
    public var expiresAt: String
    public init(challengeID: String, factors: [MFAFactorSummary], expiresAt: String) {
        self.challengeID = challengeID
        self.factors = factors
        self.expiresAt = expiresAt
    }
    enum CodingKeys: String, CodingKey {
        case factors
        case challengeID = "challenge_id"
        case expiresAt = "expires_at"
    }
}

/// A factor as a challenge names it.
public struct MFAFactorSummary: Codable, Sendable, Hashable {
    public var id: String
    /// `totp`.
    public var type: String
    public var name: String
    public init(id: String, type: String, name: String) {
        self.id = id
        self.type = type
        self.name = name
    }
    enum CodingKeys: String, CodingKey { case id, type, name }
}

/// `POST /v1/mfa/factors`.
public struct MFAEnrollRequest: Codable, Sendable, Hashable {
    /// `totp`.
    public var type: String
    public var name: String?
    public init(type: String = "totp", name: String? = nil) {
        self.type = type
        self.name = name
    }
    enum CodingKeys: String, CodingKey { case type, name }
}

/// What an authenticator app needs, shown once at enrollment.
public struct TOTPEnrollment: Codable, Sendable, Hashable {
    /// Base32, for typing in.
    public var secret: String
    /// `otpauth://totp/…`, for a link or a QR code.
    public var uri: String
    /// The URI as a QR code, an SVG document.
    public var qrSVG: String
    public init(secret: String, uri: String, qrSVG: String) {
        self.secret = secret
        self.uri = uri
        self.qrSVG = qrSVG
    }
    enum CodingKeys: String, CodingKey {
        case secret, uri
        case qrSVG = "qr_svg"
    }
}

/// 201 of `POST /v1/mfa/factors`: an unverified factor and its secret.
public struct MFAEnrollment: Codable, Sendable, Hashable {
    public var id: String
    public var type: String
    public var name: String
    /// `unverified` until confirmed with a first code.
    public var status: String
    public var totp: TOTPEnrollment
    public init(id: String, type: String, name: String, status: String, totp: TOTPEnrollment) {
        self.id = id
        self.type = type
        self.name = name
        self.status = status
        self.totp = totp
    }
    enum CodingKeys: String, CodingKey { case id, type, name, status, totp }
}

/// A factor of the signed-in account.
public struct MFAFactorPayload: Codable, Sendable, Hashable {
    public var id: String
    public var type: String
    public var name: String
    /// `unverified` or `verified`.
    public var status: String
    public var createdAt: String
    public var lastUsedAt: String?
    public init(id: String, type: String, name: String, status: String, createdAt: String, lastUsedAt: String?) {
        self.id = id
        self.type = type
        self.name = name
        self.status = status
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
    enum CodingKeys: String, CodingKey {
        case id, type, name, status
        case createdAt = "created_at"
        case lastUsedAt = "last_used_at"
    }
}

/// `{code}`: a factor's first code.
public struct MFACodeRequest: Codable, Sendable, Hashable {
    public var code: String
    public init(code: String) { self.code = code }
    enum CodingKeys: String, CodingKey { case code }
}

/// 200 of a confirmation: the factor, and the recovery codes when it is the account's first.
public struct MFAConfirmResponse: Codable, Sendable, Hashable {
    public var factor: MFAFactorPayload
    /// Shown once; nil when the account had a factor already.
    public var recoveryCodes: [String]?
    public init(factor: MFAFactorPayload, recoveryCodes: [String]?) {
        self.factor = factor
        self.recoveryCodes = recoveryCodes
    }
    enum CodingKeys: String, CodingKey {
        case factor
        case recoveryCodes = "recovery_codes"
    }
}

/// `{factors}`.
public struct MFAFactorsResponse: Codable, Sendable, Hashable {
    public var factors: [MFAFactorPayload]
    public init(factors: [MFAFactorPayload]) { self.factors = factors }
    enum CodingKeys: String, CodingKey { case factors }
}

/// `{factor}`.
public struct MFAFactorResponse: Codable, Sendable, Hashable {
    public var factor: MFAFactorPayload
    public init(factor: MFAFactorPayload) { self.factor = factor }
    enum CodingKeys: String, CodingKey { case factor }
}

/// `PATCH /v1/mfa/factors/{id}`.
public struct MFARenameRequest: Codable, Sendable, Hashable {
    public var name: String
    public init(name: String) { self.name = name }
    enum CodingKeys: String, CodingKey { case name }
}

/// `{recovery_codes}`: ten new codes, shown once.
public struct RecoveryCodesResponse: Codable, Sendable, Hashable {
    public var recoveryCodes: [String]
    public init(recoveryCodes: [String]) { self.recoveryCodes = recoveryCodes }
    enum CodingKeys: String, CodingKey { case recoveryCodes = "recovery_codes" }
}

/// `POST /v1/auth/mfa/verify`: a challenge's id with a factor's code or a recovery code; with a
/// Bearer and no challenge, a step-up of that session.
public struct MFAVerifyRequest: Codable, Sendable, Hashable {
    public var challengeID: String?
    public var factorID: String?
    public var code: String?
    public var recoveryCode: String?
    public init(challengeID: String? = nil, factorID: String? = nil, code: String? = nil, recoveryCode: String? = nil) {
        self.challengeID = challengeID
        self.factorID = factorID
        self.code = code
        self.recoveryCode = recoveryCode
    }
    enum CodingKeys: String, CodingKey {
        case code
        case challengeID = "challenge_id"
        case factorID = "factor_id"
        case recoveryCode = "recovery_code"
    }
}

/// 200 of `POST /v1/auth/mfa/verify`: `{user, session}` completing a sign-in, `{session}` for
/// a step-up (the same session id with new tokens).
public struct MFAVerifyResponse: Codable, Sendable, Hashable {
    public var user: UserPayload?
    public var session: SessionPayload
    public init(user: UserPayload?, session: SessionPayload) {
        self.user = user
        self.session = session
    }
    enum CodingKeys: String, CodingKey { case user, session }
}
