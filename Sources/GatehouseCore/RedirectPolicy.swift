import Foundation
import GatehouseWire

/// Decides whether an app's `redirect_to` may receive a sign-in link.
///
/// Only an exact origin match counts: scheme, host and port equal to an allowlist entry's.
/// Everything that lets one URL look like another is refused before comparing: anything but
/// printable ASCII (look-alike Unicode hosts, control characters, spaces), backslashes, user
/// info (`@`), a scheme-relative or schemeless value (`//evil.example`), percent-encoding in
/// the host, an empty host, a trailing dot, and paths that begin with `//`.
public struct RedirectPolicy: Sendable, Equatable {
    public struct Origin: Sendable, Hashable {
        public var scheme: String
        public var host: String
        public var port: Int?
    }

    public let allowed: Set<Origin>

    public init(allowlist: [String]) {
        allowed = Set(allowlist.compactMap(Self.origin(of:)))
    }

    /// `candidate` when it may be used, else 400 `invalid_redirect` (the magic link's
    /// `redirect_to`, Stripe's return URLs).
    public func require(_ candidate: String) throws(GatehouseError) -> String {
        guard let allowed = check(candidate) else {
            throw GatehouseError(
                status: 400, code: .invalidRedirect, message: "This redirect address is not allowed. Add its origin to GATEHOUSE_REDIRECT_ALLOWLIST.")
        }
        return allowed
    }

    /// The normalised URL when `candidate` may be used, else `nil`.
    public func check(_ candidate: String) -> String? {
        guard let origin = Self.origin(of: candidate), allowed.contains(origin) else { return nil }
        return candidate
    }

    /// The origin of a strictly well-formed absolute URL, lowercased; `nil` for anything odd.
    public static func origin(of text: String) -> Origin? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 2_048,
            bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "\\") })
        else { return nil }
        // scheme "://" authority [path…]
        guard let separator = text.range(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard let first = scheme.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first),
            scheme.utf8.allSatisfy({ byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            })
        else { return nil }
        let rest = text[separator.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let tail = rest[authorityEnd...]
        if tail.hasPrefix("//") { return nil }
        guard !authority.contains("@"), !authority.contains("%") else { return nil }
        var host = Substring(authority)
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        var port: Int?
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                let number = Int(portText), (1...65_535).contains(number)
            else { return nil }
            port = number
        }
        let lowered = host.lowercased()
        guard !lowered.isEmpty, !lowered.hasSuffix("."), !lowered.hasPrefix("."), !lowered.contains("..") else { return nil }
        let isIPv6 = lowered.hasPrefix("[") && lowered.hasSuffix("]")
        if !isIPv6 {
            guard lowered.utf8.allSatisfy({ byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            }) else { return nil }
        }
        // Default ports are spelled out so that `https://a.example` and `https://a.example:443` meet.
        if port == nil {
            switch scheme {
            case "https": port = 443
            case "http": port = 80
            default: break
            }
        }
        return Origin(scheme: scheme, host: lowered, port: port)
    }
}
