import GatehouseWire
/// What `GET /v1/config` tells an app about its preset: enough to render sign-in screens,
/// validate forms like the server does, and show the preset's copy, with no secrets.
public struct PublicConfiguration: Sendable, Equatable, Codable {
    public var preset: String
    public var app: AppSettings
    /// The enabled methods: `email_password`, `magic_link`, `anonymous`, `apple`, `google`.
    public var signInMethods: [String]
    public var passwordPolicy: PasswordPolicySettings
    public var handles: HandleSettings
    public var accessTokenTTLSeconds: Int
    public var refreshTokenTTLSeconds: Int
    public var enumerationProtection: EnumerationProtection
    /// Actions that need a verified email (the `verification` gate), e.g. Handz's sharing and export.
    public var verificationRequiredFor: [String]
    /// The entitlement rules, so the SDK decides gates the same way offline.
    public var entitlements: EntitlementSettings?
    /// The Stripe prices sold on the web and the plan and tier of each (empty: none), for
    /// `Gatehouse.stripeCheckoutURL(price:)`.
    public var stripe: StripeSettings
    /// How SMS codes are paced, for the SDK's resend countdown (issue 58).
    public var phoneCodes: PhoneCodeTiming
    public var copy: [String: String]

    public init(preset: Preset) {
        self.preset = preset.name
        app = preset.app
        signInMethods = preset.signInMethods.enabled
        passwordPolicy = preset.passwordPolicy
        handles = preset.handles
        accessTokenTTLSeconds = preset.tokens.accessTokenTTLSeconds
        refreshTokenTTLSeconds = preset.tokens.refreshTokenTTLSeconds
        enumerationProtection = preset.enumerationProtection
        verificationRequiredFor = preset.verification.requiredFor
        entitlements = preset.entitlements
        stripe = preset.stripe
        phoneCodes = PhoneCodeTiming(sms: preset.sms)
        copy = preset.copy
    }

    enum CodingKeys: String, CodingKey {
        case preset
        case app
        case signInMethods = "sign_in_methods"
        case passwordPolicy = "password_policy"
        case handles
        case accessTokenTTLSeconds = "access_token_ttl_seconds"
        case refreshTokenTTLSeconds = "refresh_token_ttl_seconds"
        case enumerationProtection = "enumeration_protection"
        case verificationRequiredFor = "verification_required_for"
        case entitlements
        case stripe
        case phoneCodes = "phone_codes"
        case copy
    }

    /// Tolerates a server that does not send the newer fields (the SDK caches this document).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        preset = try c.decode(String.self, forKey: .preset)
        app = try c.decode(AppSettings.self, forKey: .app)
        signInMethods = try c.decode([String].self, forKey: .signInMethods)
        passwordPolicy = try c.decode(PasswordPolicySettings.self, forKey: .passwordPolicy)
        handles = try c.decode(HandleSettings.self, forKey: .handles)
        accessTokenTTLSeconds = try c.decode(Int.self, forKey: .accessTokenTTLSeconds)
        refreshTokenTTLSeconds = try c.decode(Int.self, forKey: .refreshTokenTTLSeconds)
        enumerationProtection = try c.decode(EnumerationProtection.self, forKey: .enumerationProtection)
        verificationRequiredFor = try c.decodeIfPresent([String].self, forKey: .verificationRequiredFor) ?? []
        entitlements = try? c.decodeIfPresent(EntitlementSettings.self, forKey: .entitlements)
        stripe = (try? c.decodeIfPresent(StripeSettings.self, forKey: .stripe)) ?? StripeSettings()
        phoneCodes = (try? c.decodeIfPresent(PhoneCodeTiming.self, forKey: .phoneCodes)) ?? PhoneCodeTiming()
        copy = try c.decode([String: String].self, forKey: .copy)
    }
}

/// How SMS codes are paced (issue 58): what an app's resend countdown reads instead of a
/// constant of its own. A server that does not say (an older one) leaves the countdown to its
/// `retry_after` answers.
public struct PhoneCodeTiming: Sendable, Equatable, Codable {
    /// Seconds after a code before the same number may get another: a minute shared by the
    /// preset's `sms.per_number_per_minute` sends. Nil when the server did not say.
    public var resendAfterSeconds: Int?
    /// How long a code works (`sms.code_ttl_seconds`). Nil when the server did not say.
    public var codeTTLSeconds: Int?

    /// The pacing of a preset's `sms` section.
    public init(sms: SMSSettings) {
        resendAfterSeconds = (60 + max(1, sms.perNumberPerMinute) - 1) / max(1, sms.perNumberPerMinute)
        codeTTLSeconds = sms.codeTTLSeconds
    }

    /// Pacing as given; both nil when unknown.
    public init(resendAfterSeconds: Int? = nil, codeTTLSeconds: Int? = nil) {
        self.resendAfterSeconds = resendAfterSeconds
        self.codeTTLSeconds = codeTTLSeconds
    }

    enum CodingKeys: String, CodingKey {
        case resendAfterSeconds = "resend_after_seconds"
        case codeTTLSeconds = "code_ttl_seconds"
    }
}
