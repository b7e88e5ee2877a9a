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
        copy = try c.decode([String: String].self, forKey: .copy)
    }
}
