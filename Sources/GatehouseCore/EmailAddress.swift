import Foundation

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
