import Foundation
import GatehouseWire

/// Time-based one-time codes (RFC 6238) as every authenticator app makes them: HMAC-SHA-1,
/// 6 digits, 30-second steps, RFC 4226's dynamic truncation. The HMAC comes from outside (the
/// server's is swift-crypto's), so the core stays pure.
public struct TOTP: Sendable {
    public static let period: Int64 = 30
    public static let digits = 6
    /// 20 bytes (160 bits), RFC 4226 §4's recommended length for SHA-1.
    public static let secretLength = 20

    public let secret: [UInt8]
    private let hmacSHA1: @Sendable (_ key: [UInt8], _ message: [UInt8]) -> [UInt8]

    public init(secret: [UInt8], hmacSHA1: @escaping @Sendable (_ key: [UInt8], _ message: [UInt8]) -> [UInt8]) {
        self.secret = secret
        self.hmacSHA1 = hmacSHA1
    }

    /// The step `date` falls in: whole periods since the Unix epoch (T0 = 0).
    public static func step(at date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / Double(period)).rounded(.down))
    }

    /// The code of one step, zero-padded to six digits.
    public func code(step: Int64) -> String {
        var counter = [UInt8](repeating: 0, count: 8)
        for index in 0..<8 { counter[7 - index] = UInt8(truncatingIfNeeded: UInt64(bitPattern: step) >> (8 * UInt64(index))) }
        let mac = hmacSHA1(secret, counter)
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let binary = (UInt32(mac[offset] & 0x7f) << 24) | (UInt32(mac[offset + 1]) << 16) | (UInt32(mac[offset + 2]) << 8)
            | UInt32(mac[offset + 3])
        let value = binary % 1_000_000
        let text = String(value)
        return String(repeating: "0", count: Self.digits - text.count) + text
    }

    public func code(at date: Date) -> String { code(step: Self.step(at: date)) }

    /// The step within `skew` steps of `date` (RFC 6238 §5.2's allowance for clock drift and
    /// typing time) whose code is `code`, or nil. Every step of the window is computed and
    /// compared in constant time, whichever matches, so the answer's timing says nothing about
    /// which step (or whether one) matched. The caller accepts a step only once.
    public func step(matching code: String, at date: Date, skew: Int64 = 1) -> Int64? {
        let typed = Array(code.utf8)
        guard typed.count == Self.digits, typed.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        let now = Self.step(at: date)
        var matched: Int64?
        for step in (now - skew)...(now + skew) where constantTimeEquals(Array(self.code(step: step).utf8), typed) {
            matched = step
        }
        return matched
    }

    /// The key URI authenticator apps scan (`otpauth://totp/Issuer:account?secret=…`), with the
    /// issuer both in the label and as a parameter, and the parameters spelled out.
    public static func uri(secret: [UInt8], issuer: String, account: String) -> String {
        let label = "\(escape(issuer)):\(escape(account))"
        return "otpauth://totp/\(label)?secret=\(Base32.encode(secret))&issuer=\(escape(issuer))&algorithm=SHA1&digits=\(digits)&period=\(period)"
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters (a space is `%20`).
    private static func escape(_ text: String) -> String {
        var unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        unreserved.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }
}
