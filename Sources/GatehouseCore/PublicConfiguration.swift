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
        case copy
    }
}
