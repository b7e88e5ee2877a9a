import Foundation
import GatehouseWire

/// The preset's `stripe` section: the Stripe prices the app sells on the web and the plan and tier
/// each one gives (Hannah: premium and nutritionist). Empty: Stripe is off for the preset.
public struct StripeSettings: Sendable, Equatable, PresetSection {
    public var prices: [String: ProductSettings] = [:]
    /// How long a `past_due` subscription keeps its plan (billing grace, `pro`) from when it went
    /// past due: set it to the retry schedule in Stripe's settings (Smart Retries' default is two
    /// weeks). Stripe does not say when its retries end; Apple does, and its grace end is used.
    public var billingGraceDays = Self.defaultBillingGraceDays

    public static let defaultBillingGraceDays = 14

    public init() {}

    static var fields: [PresetField<Self>] { [.key("prices", \.prices), .key("billing_grace_days", \.billingGraceDays)] }

    func problems() -> [String] {
        var problems: [String] = []
        if !(0...60).contains(billingGraceDays) { problems.append("'stripe.billing_grace_days' must be 0 to 60") }
        for (id, price) in prices.sorted(by: { $0.key < $1.key }) {
            if !id.hasPrefix("price_") { problems.append("'stripe.prices.\(id)' must be a Stripe price id (price_…)") }
            if price.plan != .pro { problems.append("'stripe.prices.\(id).plan' must be pro (a subscription gives Pro; a Stripe trial, trial)") }
        }
        return problems
    }
}

/// Stripe's `Stripe-Signature` header (`t=<unix seconds>,v1=<hex HMAC-SHA256>,…`), checked over
/// the raw body before anything in it is read. The MAC is the caller's (the core has no
/// cryptography): HMAC-SHA256 keyed with the signing secret's UTF-8 bytes over `"<t>.<body>"`.
public struct StripeSignature: Sendable, Equatable {
    public var timestamp: Int64
    /// Every `v1` signature in the header (Stripe sends one per live secret while one rolls).
    public var signatures: [[UInt8]]

    /// How far the signed timestamp may be from now: five minutes, as Stripe's libraries use.
    public static let tolerance: TimeInterval = 300

    public enum Failure: String, Error, Sendable {
        case missing = "no Stripe-Signature header"
        case malformed = "the Stripe-Signature header is not t=…,v1=…"
        case stale = "the signed timestamp is outside the tolerance"
        case mismatch = "no signature matches a configured secret"
    }

    /// Parses the header; `nil` when it has no timestamp or no `v1` signature.
    public init?(header: String) {
        var timestamp: Int64?
        var signatures: [[UInt8]] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            switch pair[0] {
            case "t": timestamp = Int64(pair[1])
            case "v1": if let bytes = Self.hexBytes(pair[1]) { signatures.append(bytes) }
            default: continue  // v0 (test mode's legacy scheme) and future schemes are ignored
            }
        }
        guard let timestamp, !signatures.isEmpty else { return nil }
        self.timestamp = timestamp
        self.signatures = signatures
    }

    /// Checks `header` over `body`: a parsable header, a timestamp within `tolerance` of `now`, and
    /// one `v1` equal (in constant time) to the MAC of some secret in `secrets`.
    public static func verify(
        header: String?, body: [UInt8], secrets: [String], now: Date, tolerance: TimeInterval = tolerance,
        mac: (_ secret: [UInt8], _ message: [UInt8]) -> [UInt8]
    ) -> Failure? {
        guard let header, !header.isEmpty else { return .missing }
        guard let parsed = StripeSignature(header: header) else { return .malformed }
        guard abs(now.timeIntervalSince1970 - TimeInterval(parsed.timestamp)) <= tolerance else { return .stale }
        let message = Array("\(parsed.timestamp).".utf8) + body
        var matched = false
        for secret in secrets {
            let expected = mac(Array(secret.utf8), message)
            for candidate in parsed.signatures where constantTimeEquals(candidate, expected) { matched = true }
        }
        return matched ? nil : .mismatch
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0, !digits.isEmpty else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = Hex.value(digits[index]), let low = Hex.value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
