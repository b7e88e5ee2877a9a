/// `POST /v1/auth/phone/code`: a 6-digit code by SMS to sign in (or up) with a number.
public struct PhoneCodeRequest: Codable, Sendable, Hashable {
    /// As the person typed it (`(415) 555-0100`) or E.164 (`+14155550100`).
    public var phone: String
    /// Needed once the client's address has asked for several codes, where a CAPTCHA is configured.
    public var captchaToken: String?
    public init(phone: String, captchaToken: String? = nil) {
        self.phone = phone
        self.captchaToken = captchaToken
    }
    enum CodingKeys: String, CodingKey {
        case phone
        case captchaToken = "captcha_token"
    }
}

/// `POST /v1/auth/phone/verify`: the number and the code it received.
public struct PhoneVerifyRequest: Codable, Sendable, Hashable {
    public var phone: String
    public var code: String
    public init(phone: String, code: String) {
        self.phone = phone
        self.code = code
    }
    enum CodingKeys: String, CodingKey {
        case phone, code
    }
}

/// `POST /v1/me/phone`: the number to add to the profile (or to change it to); a code goes to it.
public struct PhoneChangeRequest: Codable, Sendable, Hashable {
    public var phone: String
    /// Needed once the client's address has asked for several codes, where a CAPTCHA is configured.
    public var captchaToken: String?
    public init(phone: String, captchaToken: String? = nil) {
        self.phone = phone
        self.captchaToken = captchaToken
    }
    enum CodingKeys: String, CodingKey {
        case phone
        case captchaToken = "captcha_token"
    }
}

/// `POST /v1/me/phone/verify`: the code the new number received.
public struct PhoneCodeProof: Codable, Sendable, Hashable {
    public var code: String
    public init(code: String) { self.code = code }
    enum CodingKeys: String, CodingKey {
        case code
    }
}

/// Why an SMS is sent: the send hook's `purpose`.
public enum SMSPurpose: String, Codable, Sendable, CaseIterable {
    /// A code to sign in (or up) with the number.
    case signIn = "sign_in"
    /// A code that proves a number added to a profile.
    case verifyPhone = "verify_phone"
}

/// An SMS code in an export: where it went and when, never the code or its hash.
public struct ExportedPhoneCode: Codable, Sendable, Hashable {
    public var phone: String
    public var purpose: SMSPurpose
    public var createdAt: String
    public var expiresAt: String
    public var usedAt: String?
    public init(phone: String, purpose: SMSPurpose, createdAt: String, expiresAt: String, usedAt: String?) {
        (self.phone, self.purpose, self.createdAt, self.expiresAt, self.usedAt) = (phone, purpose, createdAt, expiresAt, usedAt)
    }
    enum CodingKeys: String, CodingKey {
        case phone, purpose
        case createdAt = "created_at"
        case expiresAt = "expires_at"
        case usedAt = "used_at"
    }
}