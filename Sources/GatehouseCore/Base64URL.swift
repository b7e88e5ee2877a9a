import Foundation

extension Data {
    /// Base64url without padding (RFC 4648 §5), as JOSE uses it.
    public var base64URLEncoded: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes base64url in its one exact form (RFC 7515 §2, "base64url" without padding):
    /// only `A–Z a–z 0–9 - _`, no `=`, no white space, and no stray bits in the last character.
    /// Anything else is nil, so a token can be spelled only one way (finding 12: a signature
    /// with `=` appended was accepted).
    public init?(base64URLEncoded text: String) {
        // Whatever decodes but does not encode back to the same text (padding, `+` `/`, white
        // space, stray bits in the last character) is not the exact form.
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let decoded = Data(base64Encoded: base64), decoded.base64URLEncoded == text else { return nil }
        self = decoded
    }
}
