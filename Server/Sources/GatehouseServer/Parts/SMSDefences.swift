import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The defences against SMS pumping (toll fraud) every send passes, in the order of
/// `SMSDefence.allCases` (issues 43 and 58). Each counter is reserved by one atomic statement
/// before the send it limits (`Throttle.limit`), so sends released together cannot all pass.
///
/// Two stages (`SMSDefence.Stage`): `admit` runs the request's defences for every request that
/// asks for a send, before anything is looked up, so the answers are the same whether or not
/// the number has an account; `charge` spends the money budgets (the region's and the day's)
/// only for a text that goes out, so requests that text nobody cannot turn the feature off.
/// Near a budget's end, and past a number block's hourly limit, a send needs a CAPTCHA where
/// one is configured instead of being refused: a solved one passes the block's limit.
///
/// A refusal counts `gatehouse_sms_refused_total{reason}`; the first of each reason in an hour
/// writes an `sms_refused` audit row (`reason`, the number masked), the rest are only counted,
/// so a flood of refused sends does not flood the audit trail.
struct SMSDefences: Sendable {
    let throttle: Throttle
    let gate: SignInGate
    let settings: SMSSettings
    let presetName: String
    let audit: UnitOfWork<Void>
    let metrics: ServerMetrics
    let clock: any WallClock
    let copy: [String: String]

    /// Passes every defence of the request stage or throws the first refusal (429
    /// `rate_limited`, 400 `invalid_phone` for a region the preset does not send to, 400
    /// `captcha_required`).
    func admit(_ number: PhoneNumber, client: ClientInfo, captchaToken: String?) async throws {
        try await pass(.request, number, client: client, captchaToken: captchaToken)
    }

    /// Spends the money budgets for a text about to go out to `number`, or throws 429.
    func charge(_ number: PhoneNumber, client: ClientInfo) async throws {
        try await pass(.delivery, number, client: client, captchaToken: nil)
    }

    /// What `charge` would answer, spending nothing: for a request that answers before it is
    /// known whether a text goes out (a phone sign-up, whose job spends; issue 58), refused
    /// alike while a budget is spent whatever the number.
    func chargeNothing(_ number: PhoneNumber, client: ClientInfo) async throws {
        try await pass(.delivery, number, client: client, captchaToken: nil, spending: false)
    }

    /// Every defence of `stage`, in `SMSDefence.allCases`' order.
    private func pass(
        _ stage: SMSDefence.Stage, _ number: PhoneNumber, client: ClientInfo, captchaToken: String?, spending: Bool = true
    ) async throws {
        let context = Context(
            number: number, client: client, address: try throttle.addressKey(client), network: try throttle.networkKey(client),
            captchaToken: captchaToken)
        var solved = false
        for defence in SMSDefence.allCases where defence.stage == stage {
            try await refusing(defence, number, client: client) {
                try await check(defence, context, spending: spending, solvedCaptcha: &solved)
            }
        }
    }

    private struct Context {
        var number: PhoneNumber
        var client: ClientInfo
        var address: String?
        var network: String?
        var captchaToken: String?
    }

    private func refusing(_ defence: SMSDefence, _ number: PhoneNumber, client: ClientInfo, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as GatehouseError {
            metrics.smsRefused(defence)
            if try await firstRefusalThisHour(defence) {
                try await audit.audit(
                    .smsRefused, .failure, client: client,
                    details: ["reason": defence.rawValue, "phone": Self.masked(number), "counted": "gatehouse_sms_refused_total"])
            }
            throw error
        }
    }

    /// Whether this refusal is its reason's first this hour (one atomic count): only that one is audited.
    private func firstRefusalThisHour(_ defence: SMSDefence) async throws -> Bool {
        let now = clock.now.unixSeconds
        return try await throttle.store.hitRateLimit(key: "sms-refused:\(defence.rawValue):3600", windowStart: now - now % 3_600) == 1
    }

    private func check(_ defence: SMSDefence, _ context: Context, spending: Bool, solvedCaptcha: inout Bool) async throws {
        let number = context.number
        switch defence {
        case .country:
            // The number plan first: a range that pays its owner, or no range at all, is refused
            // wherever it is; then the preset's regions (a "+1" number of Jamaica is not a US one).
            guard number.kind.receivesCodes else {
                throw GatehouseError(
                    .invalidPhone, copy["error.phone_kind"] ?? "We can't send codes to this number. Use a mobile number.",
                    details: ["reason": .string(number.kind == .unknown ? "unassigned" : number.kind.rawValue)])
            }
            guard let region = number.region, settings.allowedRegions.contains(region) else {
                throw GatehouseError(
                    .invalidPhone, copy["error.phone_country"] ?? "We can't send codes to numbers in this country.")
            }
        case .paused:
            if let wait = try await throttle.store.throttle(key: Self.failureKey(number))?.retryAfter(at: clock.now) {
                throw GatehouseError(
                    status: 429, code: .rateLimited,
                    message: copy["error.phone_paused"] ?? "We can't send codes to this number right now. Try again later or use another way to sign in.",
                    retryAfter: wait)
            }
        case .captcha:
            guard gate.asksCaptcha, try await needsCaptcha(context) else { return }
            try await gate.requireCaptcha(context.client, token: context.captchaToken)
            solvedCaptcha = true
        case .client:
            // Counted whatever GATEHOUSE_IP_LIMITS says: these sends cost money.
            guard let address = context.address else { return }
            try await throttle.limit(Self.clientKey(address), limit: settings.perClientPerHour, windowSeconds: 3_600)
        case .network:
            guard let network = context.network else { return }
            try await throttle.limit("sms-network:\(network)", limit: settings.perNetworkPerHour, windowSeconds: 3_600)
        case .range:
            // A solved CAPTCHA stands in for the block's limit: strangers' sends cannot keep its people out.
            guard !solvedCaptcha else { return }
            try await throttle.limit(Self.rangeKey(number), limit: settings.perRangePerHour, windowSeconds: 3_600)
        case .numberMinute:
            try await throttle.limit("sms-number:\(number.e164)", limit: settings.perNumberPerMinute, windowSeconds: 60)
        case .numberDay:
            try await throttle.limit("sms-number:\(number.e164)", limit: settings.perNumberPerDay, windowSeconds: 86_400)
        case .regionBudget:
            guard let region = number.region, let budget = settings.regionDailyBudgets[region] else { return }
            try await spend(Self.regionBudgetKey(region), limit: budget, windowSeconds: 86_400, spending: spending)
        case .dailyBudget:
            try await spend(dailyBudgetKey, limit: settings.dailyBudget, windowSeconds: 86_400, spending: spending)
        }
    }

    /// Spends one of a budget's sends, or (not `spending`) refuses as the spend would while the budget is gone.
    private func spend(_ key: String, limit: Int, windowSeconds: Int64, spending: Bool) async throws {
        guard spending else { return try await throttle.refuseIfSpent(key, limit: limit, windowSeconds: windowSeconds) }
        try await throttle.limit(key, limit: limit, windowSeconds: windowSeconds)
    }

    /// Whether this send asks for a CAPTCHA: the address sent `captcha_after_sends` codes this
    /// hour, the day's budget is past `budget_captcha_share`, or the number's block is at its
    /// hourly limit. Counts only read, nothing spent.
    private func needsCaptcha(_ context: Context) async throws -> Bool {
        let now = clock.now.unixSeconds
        func count(_ key: String, _ window: Int64) async throws -> Int {
            try await throttle.store.rateLimitCount(key: "\(key):\(window)", windowStart: now - now % window)
        }
        if let threshold = settings.captchaAfterSends, let address = context.address,
            try await count(Self.clientKey(address), 3_600) >= threshold
        {
            return true
        }
        if settings.budgetCaptchaShare < 1,
            Double(try await count(dailyBudgetKey, 86_400)) >= settings.budgetCaptchaShare * Double(settings.dailyBudget)
        {
            return true
        }
        return try await count(Self.rangeKey(context.number), 3_600) >= settings.perRangePerHour
    }

    private var dailyBudgetKey: String { "sms-budget:\(presetName)" }

    static func clientKey(_ address: String) -> String { "sms-client:\(address)" }
    static func rangeKey(_ number: PhoneNumber) -> String { "sms-range:\(number.rangeKey)" }
    static func regionBudgetKey(_ region: String) -> String { "sms-region-budget:\(region)" }

    /// The key of a number's deliveries that failed in a row (`SMSDelivery` counts them).
    static func failureKey(_ number: PhoneNumber) -> String { failureKey(e164: number.e164) }
    static func failureKey(e164: String) -> String { "sms-failures:\(e164)" }

    /// A number as audit rows and logs show it: the calling code's block and the last two digits.
    static func masked(_ number: PhoneNumber) -> String { masked(e164: number.e164) }
    static func masked(e164: String) -> String {
        guard e164.count > 6 else { return "+…" }
        return String(e164.prefix(4)) + String(repeating: "•", count: e164.count - 6) + String(e164.suffix(2))
    }
}
