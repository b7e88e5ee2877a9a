import Foundation
import GatehouseWire

/// Email addresses as identity keys (decision 7).
public enum EmailAddress {
    /// Trim, Unicode NFKC, then full case folding of the whole address, so that case
    /// variants, fullwidth letters and the KELVIN SIGN meet one identity.
    public static func normalize(_ address: String) -> String {
        normalizeASCII(address) ?? normalizeUnicode(address)
    }

    /// `normalize` through Foundation's Unicode tables, for any address.
    static func normalizeUnicode(_ address: String) -> String {
        let trimmed = address.trimmingCharacters(in: .whitespacesAndNewlines)
        let compatible = trimmed.precomposedStringWithCompatibilityMapping
        var folded = ""
        for scalar in compatible.lowercased().unicodeScalars {
            // Full case folding differs from lowercasing for a handful of letters.
            switch scalar {
            case "\u{00DF}", "\u{1E9E}": folded += "ss"
            case "\u{03C2}": folded += "\u{03C3}"
            default: folded.unicodeScalars.append(scalar)
            }
        }
        return folded.precomposedStringWithCompatibilityMapping
    }

    /// `normalize` of an address that is ASCII throughout, without Foundation's Unicode tables:
    /// NFKC and case folding map no ASCII text but the capital letters, so it is the address
    /// with its ASCII white space trimmed and its letters in lowercase. Nil for any other.
    /// `EmailAddressASCIITests` holds it to `normalizeUnicode` over every ASCII character.
    static func normalizeASCII(_ address: String) -> String? {
        var address = address
        return address.withUTF8 { bytes -> String? in
            guard let kept = trimmedASCII(bytes) else { return nil }
            return String(unsafeUninitializedCapacity: kept.count) { buffer in
                for (index, byte) in bytes[kept].enumerated() {
                    buffer[index] = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
                }
                return kept.count
            }
        }
    }

    /// `address` trimmed as `trimmingCharacters(in: .whitespacesAndNewlines)` trims it, without
    /// Foundation's bridging when it is ASCII.
    static func trimmed(_ address: String) -> String {
        var address = address
        guard let kept = address.withUTF8({ trimmedASCII($0) }) else { return address.trimmingCharacters(in: .whitespacesAndNewlines) }
        if kept.count == address.utf8.count { return address }
        return address.withUTF8 { String(decoding: UnsafeBufferPointer(rebasing: $0[kept]), as: UTF8.self) }
    }

    /// The bytes of an ASCII `bytes` without the white space `CharacterSet.whitespacesAndNewlines`
    /// holds within ASCII (tab, line feed, vertical tab, form feed, carriage return, space) at
    /// either end; nil when `bytes` is not ASCII.
    private static func trimmedASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        guard !bytes.contains(where: { $0 >= 0x80 }) else { return nil }
        let space: (UInt8) -> Bool = { $0 == 0x20 || (0x09...0x0D).contains($0) }
        let start = bytes.firstIndex(where: { !space($0) }) ?? bytes.endIndex
        let end = bytes.lastIndex(where: { !space($0) }).map { $0 + 1 } ?? start
        return start..<end
    }
}

extension EmailAddress {
    /// A practical syntax check: one `@`, a local part of 1–64 bytes without spaces or control
    /// characters, a domain of dot-separated labels (letters, digits, hyphens, or non-ASCII for
    /// internationalised names) with at least one dot, 254 bytes at most in all.
    public static func isValid(_ address: String) -> Bool {
        let trimmed = Self.trimmed(address)
        guard trimmed.utf8.count <= 254 else { return false }
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return false }
        let local = parts[0]
        let domain = parts[1]
        guard (1...64).contains(local.utf8.count), !local.hasPrefix("."), !local.hasSuffix("."), !local.contains("..") else {
            return false
        }
        guard local.unicodeScalars.allSatisfy({ !forbiddenInLocalPart($0) }) else { return false }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return false }
        for label in labels {
            guard (1...63).contains(label.utf8.count), !label.hasPrefix("-"), !label.hasSuffix("-") else { return false }
            guard label.unicodeScalars.allSatisfy({ $0.value > 127 || isASCIILetterOrDigit($0) || $0 == "-" }) else {
                return false
            }
        }
        return labels.last!.unicodeScalars.allSatisfy { $0.isASCII ? !(0x30...0x39).contains($0.value) : !CharacterSet.decimalDigits.contains($0) }
    }

    /// White space, control characters and `()<>,;:\"[]`, which a local part may not hold.
    private static let forbidden = CharacterSet.whitespacesAndNewlines.union(.controlCharacters).union(CharacterSet(charactersIn: "()<>,;:\\\"[]"))

    private static func forbiddenInLocalPart(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII, scalar.value > 0x20, scalar.value < 0x7F {
            return "()<>,;:\\\"[]".unicodeScalars.contains(scalar)
        }
        return forbidden.contains(scalar)
    }

    /// `CharacterSet.alphanumerics` within ASCII.
    private static func isASCIILetterOrDigit(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        default: false
        }
    }
}

extension EmailAddress {
    /// Whether `address` (trimmed) may be stored, mailed and own an account as typed: it is its
    /// own Unicode NFKC form (so a fullwidth `ｖｉｃｔｉｍ@example.com` or a KELVIN SIGN, which
    /// normalise onto another person's address, are refused rather than stored and mailed as
    /// typed), and its domain is a plausible IDNA name: ASCII letters, digits and hyphens, or
    /// non-ASCII labels made only of lowercase or caseless letters, marks and digits, with no
    /// look-alike dots. Case is not part of it: `Ann@Example.com` is canonical.
    public static func isCanonical(_ address: String) -> Bool {
        // A canonically equivalent spelling (NFD `é`) is the same text and fine; a compatibility
        // mapping (fullwidth, ligatures, KELVIN SIGN) is a look-alike and is not.
        let trimmed = address.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCanonicalMapping
        guard trimmed == trimmed.precomposedStringWithCompatibilityMapping else { return false }
        guard let at = trimmed.lastIndex(of: "@") else { return false }
        let domain = trimmed[trimmed.index(after: at)...]
        for label in domain.split(separator: ".", omittingEmptySubsequences: false) {
            if label.unicodeScalars.allSatisfy({ $0.isASCII }) {
                guard label.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || $0 == "-" }) else { return false }
                // An ASCII label may be an A-label (punycode); it is taken as the registry wrote it.
                continue
            }
            // A U-label: as IDNA2008 maps it (lowercase, NFC), letters, marks and digits only.
            guard String(label) == label.lowercased(), String(label) == String(label).precomposedStringWithCanonicalMapping else {
                return false
            }
            let allowed = CharacterSet.letters.union(.decimalDigits).union(.nonBaseCharacters).union(CharacterSet(charactersIn: "-"))
            guard label.unicodeScalars.allSatisfy({ allowed.contains($0) }) else { return false }
        }
        return true
    }
}

extension EmailAddress {
    /// The one canonicalisation of an address that is to be stored (sign-up, linking, a passkey
    /// sign-up, imports, the operators' calls): trimmed and NFC, when it is valid and already in
    /// its canonical form (`isCanonical`); nil otherwise, so that no path stores a look-alike
    /// that collides with another person's address.
    public static func canonical(_ typed: String) -> String? {
        let address = typed.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCanonicalMapping
        guard isValid(address), isCanonical(address) else { return nil }
        return address
    }
}

extension EmailAddress {
    /// The form mail is sent to: the address as typed, but never a compatibility form (an
    /// account stored before `isCanonical` was enforced gets its mail at the NFKC form, the one
    /// its identity key belongs to; finding 7).
    public static func deliverable(_ address: String) -> String {
        address.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCompatibilityMapping
    }
}
