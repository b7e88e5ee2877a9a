import Foundation

extension Data {
    /// Base64url without padding (RFC 4648 §5), as JOSE uses it.
    var base64URLEncoded: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
