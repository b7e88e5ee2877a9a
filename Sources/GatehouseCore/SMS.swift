import Foundation
import GatehouseWire

/// The preset's `sms` section: where codes may be sent, how fast, and what a day may cost
/// (issue 43). Every limit here is one of the `SMSDefence`s.
public struct SMSSettings: Sendable, Equatable, PresetSection {
    /// The region (ISO 3166 alpha-2) of a number typed without its calling code.
    public var defaultRegion = "US"
    /// The calling codes (without `+`) codes may be sent to; empty means the default region's only.
    public var allowedCountries: [String] = []
    /// Sends per day for the whole preset; past it every send answers 429 until the day ends (UTC).
    public var dailyBudget = 1_000
    /// How long a code lives.
    public var codeTTLSeconds = 600
    /// Wrong guesses one code survives; the last one kills it.
    public var codeMaxAttempts = 5
    /// Sends to one number per minute and per day.
    public var perNumberPerMinute = 1
    public var perNumberPerDay = 5
    /// Sends asked for by one client address per hour.
    public var perClientPerHour = 10
    /// Sends to one block of numbers (the same leading digits, `PhoneNumber.rangeKey`) per hour:
    /// pumping walks through a range.
    public var perRangePerHour = 20
    /// Sends by one client address in an hour after which a CAPTCHA is asked for (where one is
    /// configured); nil never asks.
    public var captchaAfterSends: Int? = 3
    /// Deliveries to one number that fail in a row before sends to it pause for a day.
    public var pauseAfterFailures = 3
    /// Whether a code to a number without an account signs a new person up.
    public var signUp = true

    public init() {}

    /// The calling codes the preset sends to.
    public var allowedCallingCodes: Set<String> {
        allowedCountries.isEmpty ? Set([PhoneNumber.callingCode(ofRegion: defaultRegion)].compactMap { $0 }) : Set(allowedCountries)
    }

    static var fields: [PresetField<Self>] {
        [
            .key("default_region", \.defaultRegion), .key("allowed_countries", \.allowedCountries), .key("daily_budget", \.dailyBudget),
            .key("code_ttl_seconds", \.codeTTLSeconds), .key("code_max_attempts", \.codeMaxAttempts),
            .key("per_number_per_minute", \.perNumberPerMinute), .key("per_number_per_day", \.perNumberPerDay),
            .key("per_client_per_hour", \.perClientPerHour), .key("per_range_per_hour", \.perRangePerHour),
            .key("captcha_after_sends", \.captchaAfterSends), .key("pause_after_failures", \.pauseAfterFailures),
            .key("sign_up", \.signUp),
        ]
    }

    func problems() -> [String] {
        var problems: [String] = []
        func check(_ condition: Bool, _ message: String) {
            if !condition { problems.append(message) }
        }
        check(PhoneNumber.callingCode(ofRegion: defaultRegion) != nil, "'sms.default_region' must be a region code such as 'US' or 'GB'")
        for code in allowedCountries {
            check(!code.isEmpty && code.count <= 3 && code.allSatisfy(\.isASCIIDigit), "'sms.allowed_countries' holds calling codes without '+', e.g. \"1\" or \"44\"")
        }
        check(dailyBudget >= 1, "'sms.daily_budget' must be at least 1")
        check((120...3_600).contains(codeTTLSeconds), "'sms.code_ttl_seconds' must be between 120 and 3600")
        check((1...10).contains(codeMaxAttempts), "'sms.code_max_attempts' must be between 1 and 10")
        check(perNumberPerMinute >= 1 && perNumberPerDay >= perNumberPerMinute, "'sms.per_number_per_day' must be at least 'sms.per_number_per_minute' (at least 1)")
        check(perClientPerHour >= 1 && perRangePerHour >= 1, "'sms.per_client_per_hour' and 'sms.per_range_per_hour' must be at least 1")
        check(captchaAfterSends.map { $0 >= 1 } ?? true, "'sms.captcha_after_sends' must be at least 1")
        check(pauseAfterFailures >= 1, "'sms.pause_after_failures' must be at least 1")
        return problems
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

/// The defences against SMS pumping (toll fraud), each a reason a send is refused: the one
/// list the send path walks, the audit row's `reason` and the metric's label
/// (`gatehouse_sms_refused_total{reason}`). A new defence does not compile until each place
/// that names them has decided about it.
public enum SMSDefence: String, Sendable, CaseIterable {
    /// A calling code the preset does not send to (`invalid_phone`).
    case country
    /// A number whose deliveries kept failing: paused for a day.
    case paused
    /// Repeated sends from one client address where a CAPTCHA is configured (`captcha_required`).
    case captcha
    /// Sends from one client address per hour.
    case client
    /// Sends to one block of numbers per hour.
    case range
    /// Sends to one number per minute.
    case numberMinute = "number_minute"
    /// Sends to one number per day.
    case numberDay = "number_day"
    /// The preset's sends per day.
    case dailyBudget = "daily_budget"
}

/// A code sent by SMS, stored as a keyed hash: to sign in with a number or to prove one added
/// to a profile.
public struct PhoneCode: Sendable, Equatable {
    public var id: UUID
    /// The number it went to (E.164).
    public var phone: String
    public var purpose: SMSPurpose
    /// The account adding the number (`verify_phone`); nil for a sign-in.
    public var userID: UserID?
    public var codeHash: [UInt8]
    /// Guesses reserved so far.
    public var attempts: Int
    public var createdAt: Date
    public var expiresAt: Date
    public var usedAt: Date?

    public init(
        id: UUID = UUID(), phone: String, purpose: SMSPurpose, userID: UserID?, codeHash: [UInt8], attempts: Int = 0, createdAt: Date,
        expiresAt: Date, usedAt: Date? = nil
    ) {
        self.id = id
        self.phone = phone
        self.purpose = purpose
        self.userID = userID
        self.codeHash = codeHash
        self.attempts = attempts
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
    }

    /// Unused and unexpired at `now`.
    public func isLive(at now: Date) -> Bool { usedAt == nil && now < expiresAt }
}
