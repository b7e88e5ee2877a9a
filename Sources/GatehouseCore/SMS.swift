import Foundation
import GatehouseWire

/// The preset's `sms` section: where codes may be sent, how fast, and what a day may cost
/// (issue 43). Every limit here is one of the `SMSDefence`s.
public struct SMSSettings: Sendable, Equatable, PresetSection {
    /// The region (ISO 3166 alpha-2) of a number typed without its calling code.
    public var defaultRegion = "US"
    /// Where codes may be sent: regions (`"US"`, `"CA"`) and calling codes without `+` (`"44"`);
    /// empty means the default region's only. A calling code means one region (decision 31): the
    /// default region when it has that code ("1" with `US`: the United States, not the
    /// Caribbean), else the code's main region; list regions to send to more.
    public var allowedCountries: [String] = []
    /// Sends per day for the whole preset; past it every send answers 429 until the day ends (UTC).
    /// Only sends that text someone spend it (issue 58).
    public var dailyBudget = 1_000
    /// The share of `dailyBudget` after which every send needs a CAPTCHA, where one is configured
    /// (issue 58): near the budget's end the feature asks people to prove they are people instead
    /// of going dark for everyone. 1 never asks.
    public var budgetCaptchaShare = 0.8
    /// Sends per day to one region's numbers (ISO 3166 alpha-2 → sends), beside `dailyBudget`;
    /// a region not listed is held by `dailyBudget` alone.
    public var regionDailyBudgets: [String: Int] = [:]
    /// Sends asked for from one client network per hour (IPv4 /24, IPv6 /64): many addresses of
    /// one network count as one.
    public var perNetworkPerHour = 30
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
    /// pumping walks through a range. Past it a send needs a CAPTCHA where one is configured (and
    /// a solved one passes), so strangers' sends in a block cannot keep its people out.
    public var perRangePerHour = 20
    /// Sends by one client address in an hour after which a CAPTCHA is asked for (where one is
    /// configured); nil never asks.
    public var captchaAfterSends: Int? = 3
    /// Deliveries to one number that fail in a row before sends to it pause for a day.
    public var pauseAfterFailures = 3
    /// Whether a code to a number without an account signs a new person up.
    public var signUp = true

    public init() {}

    /// The regions the preset sends to (`allowed_countries` read as its doc says).
    public var allowedRegions: Set<String> {
        guard !allowedCountries.isEmpty else { return [defaultRegion.uppercased()] }
        return Set(allowedCountries.compactMap { entry in
            guard entry.allSatisfy(\.isASCIIDigit) else { return entry.uppercased() }
            if PhoneNumber.callingCode(ofRegion: defaultRegion) == entry { return defaultRegion.uppercased() }
            return PhoneNumber.mainRegion(ofCallingCode: entry)
        })
    }

    static var fields: [PresetField<Self>] {
        [
            .key("default_region", \.defaultRegion), .key("allowed_countries", \.allowedCountries), .key("daily_budget", \.dailyBudget),
            .key("code_ttl_seconds", \.codeTTLSeconds), .key("code_max_attempts", \.codeMaxAttempts),
            .key("per_number_per_minute", \.perNumberPerMinute), .key("per_number_per_day", \.perNumberPerDay),
            .key("per_client_per_hour", \.perClientPerHour), .key("per_range_per_hour", \.perRangePerHour),
            .key("captcha_after_sends", \.captchaAfterSends), .key("pause_after_failures", \.pauseAfterFailures),
            .key("sign_up", \.signUp), .key("budget_captcha_share", \.budgetCaptchaShare),
            .key("region_daily_budgets", \.regionDailyBudgets), .key("per_network_per_hour", \.perNetworkPerHour),
        ]
    }

    func problems() -> [String] {
        var problems: [String] = []
        func check(_ condition: Bool, _ message: String) {
            if !condition { problems.append(message) }
        }
        check(PhoneNumber.callingCode(ofRegion: defaultRegion) != nil, "'sms.default_region' must be a region code such as 'US' or 'GB'")
        for entry in allowedCountries {
            let callingCode = !entry.isEmpty && entry.count <= 3 && entry.allSatisfy(\.isASCIIDigit) && PhoneNumber.mainRegion(ofCallingCode: entry) != nil
            let region = entry.count == 2 && entry == entry.uppercased() && PhoneNumber.callingCode(ofRegion: entry) != nil
            check(callingCode || region, "'sms.allowed_countries' holds regions such as \"US\" or calling codes without '+' such as \"44\" (\(entry))")
        }
        check(dailyBudget >= 1, "'sms.daily_budget' must be at least 1")
        check(budgetCaptchaShare > 0 && budgetCaptchaShare <= 1, "'sms.budget_captcha_share' must be above 0 and at most 1")
        for (region, budget) in regionDailyBudgets {
            check(PhoneNumber.callingCode(ofRegion: region) != nil && region == region.uppercased(), "'sms.region_daily_budgets' names regions such as \"US\" (\(region))")
            check(budget >= 1, "'sms.region_daily_budgets' holds budgets of at least 1 (\(region))")
        }
        check(perNetworkPerHour >= 1, "'sms.per_network_per_hour' must be at least 1")
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
    /// When a defence is spent (issue 58).
    public enum Stage: Sendable, Equatable {
        /// By every request that asks for a send, before anything is looked up, so the answers
        /// are the same whether or not the number has an account.
        case request
        /// Only when a text goes out: the money budgets, which a send that texts nothing must
        /// not spend (a flood of requests that text nobody cannot turn the feature off).
        case delivery
    }

    public var stage: Stage {
        switch self {
        case .country, .paused, .captcha, .client, .network, .range, .numberMinute, .numberDay: .request
        case .regionBudget, .dailyBudget: .delivery
        }
    }

    /// A number outside the preset's regions, or of a kind codes are never texted to
    /// (premium-rate, shared-cost, toll-free, unassigned: `PhoneNumberKind.receivesCodes`), 400
    /// `invalid_phone`.
    case country
    /// A number whose deliveries kept failing: paused for a day.
    case paused
    /// A CAPTCHA where one is configured (`captcha_required`), asked for when the client address
    /// sent several codes this hour, the day's budget is near its end (`budget_captcha_share`),
    /// or the number's block is at its hourly limit.
    case captcha
    /// Sends from one client address per hour.
    case client
    /// Sends from one client network (IPv4 /24, IPv6 /64) per hour.
    case network
    /// Sends to one block of numbers per hour.
    case range
    /// Sends to one number per minute.
    case numberMinute = "number_minute"
    /// Sends to one number per day.
    case numberDay = "number_day"
    /// The preset's sends per day to one region (`region_daily_budgets`).
    case regionBudget = "region_budget"
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
        id: UUID? = nil, phone: String, purpose: SMSPurpose, userID: UserID?, codeHash: [UInt8], attempts: Int = 0, createdAt: Date,
        expiresAt: Date, usedAt: Date? = nil
    ) {
        self.id = id ?? SecureRandom.timeOrderedUUID(at: createdAt)
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
