import Foundation
import GatehouseWire

/// Email addresses as identity keys (decision 7).
public enum EmailAddress {
    /// Trim, Unicode NFKC, then full case folding of the whole address, so that case
    /// variants, fullwidth letters and the KELVIN SIGN meet one identity.
    public static func normalize(_ address: String) -> String {
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
}

extension EmailAddress {
    /// A practical syntax check: one `@`, a local part of 1–64 bytes without spaces or control
    /// characters, a domain of dot-separated labels (letters, digits, hyphens, or non-ASCII for
    /// internationalised names) with at least one dot, 254 bytes at most in all.
    public static func isValid(_ address: String) -> Bool {
        let trimmed = address.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.utf8.count <= 254 else { return false }
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return false }
        let local = parts[0]
        let domain = parts[1]
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
