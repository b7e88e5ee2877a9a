import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The defences against SMS pumping (toll fraud) every send passes before a code is made, in
/// the order of `SMSDefence.allCases` (issue 43). Each counter is reserved by one atomic
/// statement before the send it limits (`Throttle.limit`), so sends released together cannot
/// all pass. A refusal writes an `sms_refused` audit row (`reason`, the number masked) and
/// counts `gatehouse_sms_refused_total{reason}`. The same work runs whether or not the number
/// has an account, so the answers say nothing of it.
struct SMSDefences: Sendable {
    let throttle: Throttle
    let gate: SignInGate
    let settings: SMSSettings
    let presetName: String
    let audit: UnitOfWork<Void>
    let metrics: ServerMetrics
    let clock: any WallClock
    let copy: [String: String]

    /// Passes every defence or throws the first refusal (429 `rate_limited`, 400
    /// `invalid_phone` for a country the preset does not send to, 400 `captcha_required`).
    func admit(_ number: PhoneNumber, client: ClientInfo, captchaToken: String?) async throws {
        let address = try throttle.addressKey(client)
        for defence in SMSDefence.allCases {
            do {
                try await check(defence, number, address: address, client: client, captchaToken: captchaToken)
            } catch let error as GatehouseError {
                metrics.smsRefused(defence)
                try await audit.audit(
                    .smsRefused, .failure, client: client, details: ["reason": defence.rawValue, "phone": Self.masked(number)])
                throw error
            }
        }
    }

    private func check(_ defence: SMSDefence, _ number: PhoneNumber, address: String?, client: ClientInfo, captchaToken: String?) async throws {
        switch defence {
        case .country:
            guard settings.allowedCallingCodes.contains(number.callingCode) else {
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
            guard let threshold = settings.captchaAfterSends, gate.asksCaptcha, let address else { return }
            let now = clock.now.unixSeconds
            let sends = try await throttle.store.rateLimitCount(key: "\(Self.clientKey(address)):3600", windowStart: now - now % 3_600)
            if sends >= threshold { try await gate.requireCaptcha(client, token: captchaToken) }
        case .client:
            // Counted whatever GATEHOUSE_IP_LIMITS says: these sends cost money.
            guard let address else { return }
            try await throttle.limit(Self.clientKey(address), limit: settings.perClientPerHour, windowSeconds: 3_600)
        case .range:
            try await throttle.limit("sms-range:\(number.rangeKey)", limit: settings.perRangePerHour, windowSeconds: 3_600)
        case .numberMinute:
            try await throttle.limit("sms-number:\(number.e164)", limit: settings.perNumberPerMinute, windowSeconds: 60)
        case .numberDay:
            try await throttle.limit("sms-number:\(number.e164)", limit: settings.perNumberPerDay, windowSeconds: 86_400)
        case .dailyBudget:
            try await throttle.limit("sms-budget:\(presetName)", limit: settings.dailyBudget, windowSeconds: 86_400)
        }
    }

    static func clientKey(_ address: String) -> String { "sms-client:\(address)" }

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
