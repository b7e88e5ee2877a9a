import Foundation
import GatehouseWire

/// What an app turns on and how strict Gatehouse is for it: one preset per app.
///
/// Every section has defaults (the `default` preset's values), so a preset file only needs
/// what it changes; an unknown key or a value of the wrong type is refused with its key path.
public struct Preset: Sendable, Equatable, PresetCodable {
    /// The preset's name, e.g. `handz`.
    public var name: String
    public var app = AppSettings()
    public var signInMethods = SignInMethods()
    public var passwordPolicy = PasswordPolicySettings()
    public var tokens = TokenSettings()
    /// `strict` (default): login, forgot-password and magic links never reveal whether an
    /// email exists. `helpful`: forgot-password answers 404 `email_not_found`.
    public var enumerationProtection = EnumerationProtection.strict
    public var verification = VerificationSettings()
    /// Lifetimes and limits of the links and codes Gatehouse mails, and which notices it sends.
    public var email = EmailSettings()
    public var throttling = ThrottlingSettings()
    public var handles = HandleSettings()
    public var privacy = PrivacySettings()
    /// Plans, capabilities, limits, credits, trials and the gate each action answers.
    public var entitlements = EntitlementSettings()
    /// Passkey ceremonies' rules (on when `sign_in_methods.passkey` is).
    public var passkeys = PasskeySettings()
    /// Second factors (TOTP and recovery codes) and their sign-in challenges.
    public var mfa = MFASettings()
    /// Codes by SMS (on when `sign_in_methods.phone` is): regions, limits and the day's budget.
    public var sms = SMSSettings()
    /// The Stripe prices sold on the web and the plan and tier each gives (issue 44).
    public var stripe = StripeSettings()
    /// The Google Play app and the subscription products it sells, with the plan and tier each
    /// gives (issue 59).
    public var googlePlay = GooglePlaySettings()
    /// User-facing strings (error messages, banners, prompts), by key.
    public var copy: [String: String] = [:]

    public init(name: String) { self.name = name }

    static var fields: [PresetField<Self>] {
        [
            .decodedFirst("name", \.name), .key("app", \.app), .key("sign_in_methods", \.signInMethods), .key("password_policy", \.passwordPolicy),
            .key("tokens", \.tokens), .key("enumeration_protection", \.enumerationProtection), .key("verification", \.verification),
            .key("email", \.email), .key("throttling", \.throttling), .key("handles", \.handles), .key("privacy", \.privacy),
            .key("entitlements", \.entitlements), .key("passkeys", \.passkeys), .key("mfa", \.mfa),
            .key("sms", \.sms), .key("stripe", \.stripe), .key("google_play", \.googlePlay), .key("copy", \.copy),
        ]
    }

    public init(from decoder: any Decoder) throws {
        self = try decoder.section(Self.fields) { Preset(name: try $0.decode(String.self, forKey: "name")) }
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
        check(
            ["required", "preferred"].contains(passkeys.userVerification), "'passkeys.user_verification' must be 'required' or 'preferred'")
        check((60...600).contains(passkeys.challengeTTLSeconds), "'passkeys.challenge_ttl_seconds' must be between 60 and 600")
        check((60...900).contains(mfa.challengeTTLSeconds), "'mfa.challenge_ttl_seconds' must be between 60 and 900")
        check((1...10).contains(mfa.attemptsPerChallenge), "'mfa.attempts_per_challenge' must be between 1 and 10")
        check(mfa.issuer.map { !$0.isEmpty && $0.count <= 64 && !$0.contains(":") } ?? true, "'mfa.issuer' must be 1 to 64 characters without ':'")
        check(signInMethods.enabled.count > 0, "'sign_in_methods' must turn on at least one method")
        problems += entitlements.problems()
        problems += sms.problems()
        problems += stripe.problems()
        problems += googlePlay.problems()
        let tiers = Set(entitlements.tiers)
        // What each paid source sells: one rule for every source's tiers.
        for (section, sold) in [("stripe.prices", stripe.prices), ("google_play.products", googlePlay.products)] {
            for (id, product) in sold.sorted(by: { $0.key < $1.key }) {
                if let tier = product.tier, !tiers.isEmpty, !tiers.contains(tier) {
                    problems.append("'\(section).\(id).tier' must be one of 'entitlements.tiers'")
                }
            }
        }
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
public struct AppSettings: Sendable, Equatable, PresetSection {
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

    static var fields: [PresetField<Self>] {
        [
            .key("name", \.name), .key("terms_url", \.termsURL), .key("privacy_url", \.privacyURL), .key("open_app_url", \.openAppURL),
            .key("brand_color", \.brandColor), .key("home_messages", \.homeMessages),
        ]
    }
}

/// Which sign-in methods the app offers. A call to one that is off answers 403 `method_disabled`.
public struct SignInMethods: Sendable, Equatable, PresetSection {
    public var emailPassword = true
    public var magicLink = true
    public var anonymous = true
    public var apple = true
    public var google = true
    /// Passkeys (WebAuthn): off unless a preset turns them on.
    public var passkey = false
    /// A code by SMS to a phone number (the preset's `sms` says where and how often): off
    /// unless a preset turns it on.
    public var phone = false

    public init() {}

    /// The names of the methods that are on, in a stable order.
    public var enabled: [String] {
        var names: [String] = []
        if emailPassword { names.append("email_password") }
        if magicLink { names.append("magic_link") }
        if anonymous { names.append("anonymous") }
        if apple { names.append("apple") }
        if google { names.append("google") }
        if passkey { names.append("passkey") }
        if phone { names.append("phone") }
        return names
    }

    static var fields: [PresetField<Self>] {
        [
            .key("email_password", \.emailPassword), .key("magic_link", \.magicLink), .key("anonymous", \.anonymous),
            .key("apple", \.apple), .key("google", \.google), .key("passkey", \.passkey),
            .key("phone", \.phone),
        ]
    }
}

/// Password rules, enforced by the server and mirrored by the SDK.
public struct PasswordPolicySettings: Sendable, Equatable, PresetSection {
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

    static var fields: [PresetField<Self>] {
        [
            .key("min_length", \.minLength), .key("max_length", \.maxLength), .key("min_character_classes", \.minCharacterClasses),
            .key("blocklist", \.blocklist), .key("breached_check", \.breachedCheck),
        ]
    }
}

/// Token and session lifetimes.
public struct TokenSettings: Sendable, Equatable, PresetSection {
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
    /// Supabase's `role`, `email` and `app_metadata` claims in every access token, not only in
    /// those `/auth/v1` issues (issue 46): for an app whose row-level security reads them.
    public var supabaseClaims = false

    public init() {}

    static var fields: [PresetField<Self>] {
        [
            .key("access_token_ttl_seconds", \.accessTokenTTLSeconds), .key("refresh_token_ttl_seconds", \.refreshTokenTTLSeconds),
            .key("refresh_inactivity_ttl_seconds", \.refreshInactivityTTLSeconds), .key("session_absolute_ttl_seconds", \.sessionAbsoluteTTLSeconds),
            .key("refresh_reuse_interval_seconds", \.refreshReuseIntervalSeconds), .key("leeway_seconds", \.leewaySeconds),
            .key("supabase_claims", \.supabaseClaims),
        ]
    }
}

/// Email verification rules.
public struct VerificationSettings: Sendable, Equatable, PresetSection {
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

    static var fields: [PresetField<Self>] {
        [
            .key("send_on_signup", \.sendOnSignup), .key("resend_interval_seconds", \.resendIntervalSeconds),
            .key("resend_daily_limit", \.resendDailyLimit), .key("required_for", \.requiredFor),
        ]
    }
}

/// The links and codes in Gatehouse's mail, and the notices it sends.
public struct EmailSettings: Sendable, Equatable, PresetSection {
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

    static var fields: [PresetField<Self>] {
        [
            .key("reset_token_ttl_seconds", \.resetTokenTTLSeconds), .key("verification_token_ttl_seconds", \.verificationTokenTTLSeconds),
            .key("magic_link_ttl_seconds", \.magicLinkTTLSeconds), .key("magic_code_max_attempts", \.magicCodeMaxAttempts),
            .key("request_interval_seconds", \.requestIntervalSeconds), .key("requests_per_day", \.requestsPerDay),
            .key("requests_per_ip_per_hour", \.requestsPerIPPerHour), .key("notify_password_changed", \.notifyPasswordChanged),
            .key("notify_new_sign_in", \.notifyNewSignIn),
        ]
    }
}

/// Login throttling and per-IP limits.
public struct ThrottlingSettings: Sendable, Equatable, PresetSection {
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

    static var fields: [PresetField<Self>] {
        [
            .key("login_failures_before_lockout", \.loginFailuresBeforeLockout), .key("lockout_base_seconds", \.lockoutBaseSeconds),
            .key("lockout_max_seconds", \.lockoutMaxSeconds), .key("captcha_after_ip_failures", \.captchaAfterIPFailures),
            .key("login_per_ip_per_minute", \.loginPerIPPerMinute), .key("signup_per_ip_per_hour", \.signupPerIPPerHour),
            .key("anonymous_per_ip_per_hour", \.anonymousPerIPPerHour),
        ]
    }
}

/// Public handles (Handz CH07 §4).
public struct HandleSettings: Sendable, Equatable, PresetSection {
    public var enabled = true
    public var minLength = 3
    public var maxLength = 20
    /// Every account gets `<prefix>NNNNNN` until the person picks one (decision 9).
    public var temporaryPrefix = "user-"

    public init() {}

    static var fields: [PresetField<Self>] {
        [
            .key("enabled", \.enabled), .key("min_length", \.minLength), .key("max_length", \.maxLength),
            .key("temporary_prefix", \.temporaryPrefix),
        ]
    }
}

/// How much of the client IP and user agent is kept, and for how long (decision 11).
public struct PrivacySettings: Sendable, Equatable, PresetSection {
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

    static var fields: [PresetField<Self>] {
        [
            .key("client_ip", \.clientIP), .key("user_agent", \.userAgent), .key("retention_days", \.retentionDays),
            .key("anonymous_cleanup_days", \.anonymousCleanupDays),
        ]
    }
}
