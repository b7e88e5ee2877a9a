import Foundation

/// What an app turns on and how strict Gatehouse is for it: one preset per app.
///
/// Every section has defaults (the `default` preset's values), so a preset file only needs
/// what it changes; an unknown key or a value of the wrong type is refused with its key path.
public struct Preset: Sendable, Equatable, Codable {
    /// The preset's name, e.g. `handz`.
    public var name: String
    public var app: AppSettings
    public var signInMethods: SignInMethods
    public var passwordPolicy: PasswordPolicySettings
    public var tokens: TokenSettings
    /// `strict` (default): login, forgot-password and magic links never reveal whether an
    /// email exists. `helpful`: forgot-password answers 404 `email_not_found`.
    public var enumerationProtection: EnumerationProtection
    public var verification: VerificationSettings
    /// Lifetimes and limits of the links and codes Gatehouse mails, and which notices it sends.
    public var email: EmailSettings
    public var throttling: ThrottlingSettings
    public var handles: HandleSettings
    public var privacy: PrivacySettings
    /// Plans, capabilities, limits, credits, trials and the gate each action answers.
    public var entitlements: EntitlementSettings
    /// User-facing strings (error messages, banners, prompts), by key.
    public var copy: [String: String]

    public init(name: String) {
        self.name = name
        app = AppSettings()
        signInMethods = SignInMethods()
        passwordPolicy = PasswordPolicySettings()
        tokens = TokenSettings()
        enumerationProtection = .strict
        verification = VerificationSettings()
        email = EmailSettings()
        throttling = ThrottlingSettings()
        handles = HandleSettings()
        privacy = PrivacySettings()
        entitlements = EntitlementSettings()
        copy = [:]
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name
        case app
        case signInMethods = "sign_in_methods"
        case passwordPolicy = "password_policy"
        case tokens
        case enumerationProtection = "enumeration_protection"
        case verification
        case email
        case throttling
        case handles
        case privacy
        case entitlements
        case copy
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try c.decode(String.self, forKey: .name))
        app = try c.value(.app, or: app)
        signInMethods = try c.value(.signInMethods, or: signInMethods)
        passwordPolicy = try c.value(.passwordPolicy, or: passwordPolicy)
        tokens = try c.value(.tokens, or: tokens)
        enumerationProtection = try c.value(.enumerationProtection, or: enumerationProtection)
        verification = try c.value(.verification, or: verification)
        email = try c.value(.email, or: email)
        throttling = try c.value(.throttling, or: throttling)
        handles = try c.value(.handles, or: handles)
        privacy = try c.value(.privacy, or: privacy)
        entitlements = try c.value(.entitlements, or: entitlements)
        copy = try c.value(.copy, or: copy)
    }

    /// The copy string for `key`, or `fallback` when the preset does not set one.
    public func text(_ key: String, _ fallback: String) -> String {
        copy[key] ?? fallback
    }

    /// Range and consistency checks that types alone cannot express; every problem at once.
    public func problems() -> [String] {
        var problems: [String] = []
        func check(_ condition: Bool, _ message: String) {
            if !condition { problems.append(message) }
        }
        check(!name.isEmpty, "'name' must not be empty")
        check(!app.name.isEmpty, "'app.name' must not be empty")
        for orphan in PluralCopy.orphans(in: copy) {
            check(false, "'copy.\(orphan)' is a plural form of a key the copy does not have (add its 'other' form)")
        }
        let p = passwordPolicy
        check(p.minLength >= 1, "'password_policy.min_length' must be at least 1")
        check(p.maxLength >= 64, "'password_policy.max_length' must be at least 64 (NIST SP 800-63B)")
        check(p.minLength <= p.maxLength, "'password_policy.min_length' must not exceed 'password_policy.max_length'")
        check((0...4).contains(p.minCharacterClasses), "'password_policy.min_character_classes' must be between 0 and 4")
        let t = tokens
        check((60...86_400).contains(t.accessTokenTTLSeconds), "'tokens.access_token_ttl_seconds' must be between 60 and 86400")
        check(t.refreshTokenTTLSeconds >= 3_600, "'tokens.refresh_token_ttl_seconds' must be at least 3600")
        check((0...300).contains(t.refreshReuseIntervalSeconds), "'tokens.refresh_reuse_interval_seconds' must be between 0 and 300")
        if let absolute = t.sessionAbsoluteTTLSeconds {
            check(absolute >= t.refreshTokenTTLSeconds, "'tokens.session_absolute_ttl_seconds' must be at least 'tokens.refresh_token_ttl_seconds'")
        }
        if let inactivity = t.refreshInactivityTTLSeconds {
            check(inactivity >= 3_600, "'tokens.refresh_inactivity_ttl_seconds' must be at least 3600")
        }
        check((0...300).contains(t.leewaySeconds), "'tokens.leeway_seconds' must be between 0 and 300")
        let th = throttling
        check(th.loginFailuresBeforeLockout >= 1, "'throttling.login_failures_before_lockout' must be at least 1")
        check(th.lockoutBaseSeconds >= 1, "'throttling.lockout_base_seconds' must be at least 1")
        check(th.lockoutMaxSeconds >= th.lockoutBaseSeconds, "'throttling.lockout_max_seconds' must be at least 'throttling.lockout_base_seconds'")
        let h = handles
        check(h.minLength >= 1 && h.minLength <= h.maxLength, "'handles.min_length' must be between 1 and 'handles.max_length'")
        check(h.maxLength <= 64, "'handles.max_length' must be at most 64")
        let e = email
        check((600...86_400).contains(e.resetTokenTTLSeconds), "'email.reset_token_ttl_seconds' must be between 600 and 86400")
        check((3_600...(30 * 86_400)).contains(e.verificationTokenTTLSeconds), "'email.verification_token_ttl_seconds' must be between 3600 and 2592000")
        check((300...3_600).contains(e.magicLinkTTLSeconds), "'email.magic_link_ttl_seconds' must be between 300 and 3600")
        check((1...10).contains(e.magicCodeMaxAttempts), "'email.magic_code_max_attempts' must be between 1 and 10")
        check(e.requestIntervalSeconds >= 0, "'email.request_interval_seconds' must not be negative")
        check(e.requestsPerDay >= 1, "'email.requests_per_day' must be at least 1")
        check(verification.resendIntervalSeconds >= 0, "'verification.resend_interval_seconds' must not be negative")
        check(verification.resendDailyLimit >= 1, "'verification.resend_daily_limit' must be at least 1")
        check(Self.isHexColor(app.brandColor), "'app.brand_color' must be a colour written #rrggbb")
        if let days = privacy.anonymousCleanupDays {
            check(days >= 1, "'privacy.anonymous_cleanup_days' must be at least 1")
        }
        check(privacy.retentionDays >= 1, "'privacy.retention_days' must be at least 1")
        check(signInMethods.enabled.count > 0, "'sign_in_methods' must turn on at least one method")
        problems += entitlements.problems()
        return problems
    }
}

extension Preset {
    /// `#rrggbb`: the only form a colour may take, since it is written into pages' CSS.
    static func isHexColor(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 7 && bytes[0] == UInt8(ascii: "#") && bytes.dropFirst().allSatisfy { $0.isHexDigit }
    }
}

extension UInt8 {
    var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}

/// How strictly sign-in flows hide whether an email has an account.
public enum EnumerationProtection: String, Sendable, Codable, Equatable {
    case strict
    case helpful
}

/// The app's name and links, used in mails, pages and `/v1/config`.
public struct AppSettings: Sendable, Equatable, Codable {
    public var name = "Gatehouse"
    public var termsURL: String?
    public var privacyURL: String?
    /// Where "Open the app" on hosted pages points (universal link or custom scheme).
    public var openAppURL: String?
    /// Accent colour for hosted pages and mails, `#rrggbb`.
    public var brandColor = "#2f5bea"
    /// Messages the app's home screen picks from at random (OKLah US-ONB-002, decision 27).
    public var homeMessages: [String] = []

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name
        case termsURL = "terms_url"
        case privacyURL = "privacy_url"
        case openAppURL = "open_app_url"
        case brandColor = "brand_color"
        case homeMessages = "home_messages"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.value(.name, or: name)
        termsURL = try c.decodeIfPresent(String.self, forKey: .termsURL)
        privacyURL = try c.decodeIfPresent(String.self, forKey: .privacyURL)
        openAppURL = try c.decodeIfPresent(String.self, forKey: .openAppURL)
        brandColor = try c.value(.brandColor, or: brandColor)
        homeMessages = try c.value(.homeMessages, or: homeMessages)
    }
}

/// Which sign-in methods the app offers. A call to one that is off answers 403 `method_disabled`.
public struct SignInMethods: Sendable, Equatable, Codable {
    public var emailPassword = true
    public var magicLink = true
    public var anonymous = true
    public var apple = true
    public var google = true

    public init() {}

    /// The names of the methods that are on, in a stable order.
    public var enabled: [String] {
        var names: [String] = []
        if emailPassword { names.append("email_password") }
        if magicLink { names.append("magic_link") }
        if anonymous { names.append("anonymous") }
        if apple { names.append("apple") }
        if google { names.append("google") }
        return names
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case emailPassword = "email_password"
        case magicLink = "magic_link"
        case anonymous
        case apple
        case google
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        emailPassword = try c.value(.emailPassword, or: emailPassword)
        magicLink = try c.value(.magicLink, or: magicLink)
        anonymous = try c.value(.anonymous, or: anonymous)
        apple = try c.value(.apple, or: apple)
        google = try c.value(.google, or: google)
    }
}

/// Password rules, enforced by the server and mirrored by the SDK.
public struct PasswordPolicySettings: Sendable, Equatable, Codable {
    /// Minimum length in Unicode code points.
    public var minLength = 8
    /// Maximum length in Unicode code points (NIST asks that at least 64 be allowed).
    public var maxLength = 256
    /// How many of the four classes (upper, lower, digit, symbol) a password needs.
    public var minCharacterClasses = 0
    /// Refuse the shipped list of common passwords and the context words.
    public var blocklist = true
    /// Ask a k-anonymity range API whether the password appears in known breaches.
    public var breachedCheck = false

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case minLength = "min_length"
        case maxLength = "max_length"
        case minCharacterClasses = "min_character_classes"
        case blocklist
        case breachedCheck = "breached_check"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        minLength = try c.value(.minLength, or: minLength)
        maxLength = try c.value(.maxLength, or: maxLength)
        minCharacterClasses = try c.value(.minCharacterClasses, or: minCharacterClasses)
        blocklist = try c.value(.blocklist, or: blocklist)
        breachedCheck = try c.value(.breachedCheck, or: breachedCheck)
    }
}

/// Token and session lifetimes.
public struct TokenSettings: Sendable, Equatable, Codable {
    public var accessTokenTTLSeconds = 900
    /// Sliding: each rotation issues a refresh token valid this long from then (decision 1).
    public var refreshTokenTTLSeconds = 30 * 86_400
    /// A session unused this long ends; `nil` means only the sliding lifetime applies.
    public var refreshInactivityTTLSeconds: Int?
    /// A session's lifetime from sign-in, whatever its use; `nil` means unlimited (decision 1).
    public var sessionAbsoluteTTLSeconds: Int?
    /// A rotated refresh token presented again within this many seconds gets the same
    /// successor back instead of revoking the session (cold-start races).
    public var refreshReuseIntervalSeconds = 10
    /// Clock leeway for `exp`, `nbf` and `iat` checks.
    public var leewaySeconds = 30

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case accessTokenTTLSeconds = "access_token_ttl_seconds"
        case refreshTokenTTLSeconds = "refresh_token_ttl_seconds"
        case refreshInactivityTTLSeconds = "refresh_inactivity_ttl_seconds"
        case sessionAbsoluteTTLSeconds = "session_absolute_ttl_seconds"
        case refreshReuseIntervalSeconds = "refresh_reuse_interval_seconds"
        case leewaySeconds = "leeway_seconds"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        accessTokenTTLSeconds = try c.value(.accessTokenTTLSeconds, or: accessTokenTTLSeconds)
        refreshTokenTTLSeconds = try c.value(.refreshTokenTTLSeconds, or: refreshTokenTTLSeconds)
        refreshInactivityTTLSeconds = try c.decodeIfPresent(Int.self, forKey: .refreshInactivityTTLSeconds)
        sessionAbsoluteTTLSeconds = try c.decodeIfPresent(Int.self, forKey: .sessionAbsoluteTTLSeconds)
        refreshReuseIntervalSeconds = try c.value(.refreshReuseIntervalSeconds, or: refreshReuseIntervalSeconds)
        leewaySeconds = try c.value(.leewaySeconds, or: leewaySeconds)
    }
}

/// Email verification rules.
public struct VerificationSettings: Sendable, Equatable, Codable {
    /// Send a verification mail when an account signs up with email and password.
    public var sendOnSignup = true
    /// Resends allowed per user: at most one per this many seconds…
    public var resendIntervalSeconds = 60
    /// …and at most this many a day.
    public var resendDailyLimit = 5
    /// Actions that answer the `verification` gate until the email is verified (Handz §6.4:
    /// sharing and export). Read by the entitlement engine and published in `/v1/config`.
    public var requiredFor: [String] = []

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case sendOnSignup = "send_on_signup"
        case resendIntervalSeconds = "resend_interval_seconds"
        case resendDailyLimit = "resend_daily_limit"
        case requiredFor = "required_for"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sendOnSignup = try c.value(.sendOnSignup, or: sendOnSignup)
        resendIntervalSeconds = try c.value(.resendIntervalSeconds, or: resendIntervalSeconds)
        resendDailyLimit = try c.value(.resendDailyLimit, or: resendDailyLimit)
        requiredFor = try c.value(.requiredFor, or: requiredFor)
    }
}

/// The links and codes in Gatehouse's mail, and the notices it sends.
public struct EmailSettings: Sendable, Equatable, Codable {
    /// A password-reset link works this long (1 hour).
    public var resetTokenTTLSeconds = 3_600
    /// A verification link works this long (24 hours).
    public var verificationTokenTTLSeconds = 86_400
    /// A magic link and its code work this long (15 minutes).
    public var magicLinkTTLSeconds = 900
    /// Wrong codes before a magic-link code is dead.
    public var magicCodeMaxAttempts = 5
    /// Forgot-password and magic-link requests per address: at most one per this many seconds…
    public var requestIntervalSeconds = 60
    /// …and this many a day.
    public var requestsPerDay = 10
    /// Forgot-password and magic-link requests from one IP address per hour.
    public var requestsPerIPPerHour = 30
    /// Mail "your password was changed" after a change or a reset.
    public var notifyPasswordChanged = true
    /// Mail "new sign-in" when an account signs in from a device it has not used before.
    public var notifyNewSignIn = true

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case resetTokenTTLSeconds = "reset_token_ttl_seconds"
        case verificationTokenTTLSeconds = "verification_token_ttl_seconds"
        case magicLinkTTLSeconds = "magic_link_ttl_seconds"
        case magicCodeMaxAttempts = "magic_code_max_attempts"
        case requestIntervalSeconds = "request_interval_seconds"
        case requestsPerDay = "requests_per_day"
        case requestsPerIPPerHour = "requests_per_ip_per_hour"
        case notifyPasswordChanged = "notify_password_changed"
        case notifyNewSignIn = "notify_new_sign_in"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        resetTokenTTLSeconds = try c.value(.resetTokenTTLSeconds, or: resetTokenTTLSeconds)
        verificationTokenTTLSeconds = try c.value(.verificationTokenTTLSeconds, or: verificationTokenTTLSeconds)
        magicLinkTTLSeconds = try c.value(.magicLinkTTLSeconds, or: magicLinkTTLSeconds)
        magicCodeMaxAttempts = try c.value(.magicCodeMaxAttempts, or: magicCodeMaxAttempts)
        requestIntervalSeconds = try c.value(.requestIntervalSeconds, or: requestIntervalSeconds)
        requestsPerDay = try c.value(.requestsPerDay, or: requestsPerDay)
        requestsPerIPPerHour = try c.value(.requestsPerIPPerHour, or: requestsPerIPPerHour)
        notifyPasswordChanged = try c.value(.notifyPasswordChanged, or: notifyPasswordChanged)
        notifyNewSignIn = try c.value(.notifyNewSignIn, or: notifyNewSignIn)
    }
}

/// Login throttling and per-IP limits.
public struct ThrottlingSettings: Sendable, Equatable, Codable {
    /// From this many consecutive failures on one account, attempts wait (AT-07-06).
    public var loginFailuresBeforeLockout = 5
    /// The first wait; it doubles with each further failure…
    public var lockoutBaseSeconds = 30
    /// …up to this.
    public var lockoutMaxSeconds = 3_600
    /// Failed logins from one IP before login and sign-up need a CAPTCHA; `nil` turns CAPTCHA off.
    public var captchaAfterIPFailures: Int?
    public var loginPerIPPerMinute = 30
    public var signupPerIPPerHour = 20
    public var anonymousPerIPPerHour = 30

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case loginFailuresBeforeLockout = "login_failures_before_lockout"
        case lockoutBaseSeconds = "lockout_base_seconds"
        case lockoutMaxSeconds = "lockout_max_seconds"
        case captchaAfterIPFailures = "captcha_after_ip_failures"
        case loginPerIPPerMinute = "login_per_ip_per_minute"
        case signupPerIPPerHour = "signup_per_ip_per_hour"
        case anonymousPerIPPerHour = "anonymous_per_ip_per_hour"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        loginFailuresBeforeLockout = try c.value(.loginFailuresBeforeLockout, or: loginFailuresBeforeLockout)
        lockoutBaseSeconds = try c.value(.lockoutBaseSeconds, or: lockoutBaseSeconds)
        lockoutMaxSeconds = try c.value(.lockoutMaxSeconds, or: lockoutMaxSeconds)
        captchaAfterIPFailures = try c.decodeIfPresent(Int.self, forKey: .captchaAfterIPFailures)
        loginPerIPPerMinute = try c.value(.loginPerIPPerMinute, or: loginPerIPPerMinute)
        signupPerIPPerHour = try c.value(.signupPerIPPerHour, or: signupPerIPPerHour)
        anonymousPerIPPerHour = try c.value(.anonymousPerIPPerHour, or: anonymousPerIPPerHour)
    }
}

/// Public handles (Handz CH07 §4).
public struct HandleSettings: Sendable, Equatable, Codable {
    public var enabled = true
    public var minLength = 3
    public var maxLength = 20
    /// Every account gets `<prefix>NNNNNN` until the person picks one (decision 9).
    public var temporaryPrefix = "user-"

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case enabled
        case minLength = "min_length"
        case maxLength = "max_length"
        case temporaryPrefix = "temporary_prefix"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        enabled = try c.value(.enabled, or: enabled)
        minLength = try c.value(.minLength, or: minLength)
        maxLength = try c.value(.maxLength, or: maxLength)
        temporaryPrefix = try c.value(.temporaryPrefix, or: temporaryPrefix)
    }
}

/// How much of the client IP and user agent is kept, and for how long (decision 11).
public struct PrivacySettings: Sendable, Equatable, Codable {
    public var clientIP: Retention = .full
    public var userAgent: Retention = .full
    /// Audit rows and session metadata older than this are deleted.
    public var retentionDays = 365
    /// Anonymous accounts not used for this many days are removed; `nil` keeps them.
    public var anonymousCleanupDays: Int?

    public enum Retention: String, Sendable, Codable, Equatable {
        case full
        /// IPv4 to its /24, IPv6 to its /48; user agents to their product token.
        case truncated
        case none
    }

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case clientIP = "client_ip"
        case userAgent = "user_agent"
        case retentionDays = "retention_days"
        case anonymousCleanupDays = "anonymous_cleanup_days"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        clientIP = try c.value(.clientIP, or: clientIP)
        userAgent = try c.value(.userAgent, or: userAgent)
        retentionDays = try c.value(.retentionDays, or: retentionDays)
        anonymousCleanupDays = try c.decodeIfPresent(Int.self, forKey: .anonymousCleanupDays)
    }
}
