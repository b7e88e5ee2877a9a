import Foundation
@testable import GatehouseCore
import Testing

/// Issue 61: an ASCII address is normalised and checked without Foundation's Unicode tables
/// (a login spent 3 % of its work beyond the hash there). The short way must give what the
/// Unicode way gives, for every ASCII character at every place that matters.
@Suite struct EmailAddressASCIITests {
    /// Every ASCII character, at each end, inside the local part and inside the domain.
    static let addresses: [String] = (0..<128).flatMap { code -> [String] in
        let c = String(UnicodeScalar(UInt8(code)))
        return [
            "\(c)Ann.Lee@Example.COM\(c)", "\(c)\(c)x@y.io", "An\(c)n@example.com", "ann@exa\(c)mple.com", "ann@example.c\(c)m",
            "ann@example.\(c)", "\(c)", "\(c)@\(c).\(c)", "a@b.c\(c)",
        ]
    } + ["", " ", "\t\n\u{0B}\u{0C}\r ", "ANN@EXAMPLE.COM", "a@b.12", "a@-b.com", "a@b-.com", "a..b@c.com", ".a@c.com", "a.@c.com"]

    @Test func asciiNormalisesAsUnicodeDoes() {
        for address in Self.addresses {
            #expect(EmailAddress.normalizeASCII(address) == EmailAddress.normalizeUnicode(address), "\(address.debugDescription)")
        }
        #expect(EmailAddress.normalizeASCII(" Ann@Example.COM\t") == "ann@example.com")
        // Anything not ASCII takes the Unicode way.
        #expect(EmailAddress.normalizeASCII("straße@example.com") == nil)
        #expect(EmailAddress.normalizeASCII("ann@example.com\u{A0}") == nil)
    }

    @Test func asciiIsCheckedAsFoundationChecksIt() {
        for address in Self.addresses + Self.addresses.map({ "\u{A0}\($0)\u{2028}" }) {
            #expect(EmailAddress.isValid(address) == Self.foundationIsValid(address), "\(address.debugDescription)")
            #expect(EmailAddress.trimmed(address) == address.trimmingCharacters(in: .whitespacesAndNewlines), "\(address.debugDescription)")
        }
        #expect(EmailAddress.isValid(" ann@example.com\n"))
        #expect(!EmailAddress.isValid("an n@example.com"))
        #expect(!EmailAddress.isValid("ann@example.c0m1"))
    }

    /// `EmailAddress.isValid` as it was written with `CharacterSet` alone, before the ASCII checks.
    static func foundationIsValid(_ address: String) -> Bool {
        let trimmed = address.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.utf8.count <= 254 else { return false }
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return false }
        let (local, domain) = (parts[0], parts[1])
        guard (1...64).contains(local.utf8.count), !local.hasPrefix("."), !local.hasSuffix("."), !local.contains("..") else {
            return false
        }
        let forbidden = CharacterSet.whitespacesAndNewlines.union(.controlCharacters).union(CharacterSet(charactersIn: "()<>,;:\\\"[]"))
        guard local.unicodeScalars.allSatisfy({ !forbidden.contains($0) }) else { return false }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return false }
        for label in labels {
            guard (1...63).contains(label.utf8.count), !label.hasPrefix("-"), !label.hasSuffix("-") else { return false }
            guard label.unicodeScalars.allSatisfy({ $0.value > 127 || CharacterSet.alphanumerics.contains($0) || $0 == "-" }) else {
                return false
            }
        }
        return labels.last!.unicodeScalars.allSatisfy { !CharacterSet.decimalDigits.contains($0) }
    }
}
