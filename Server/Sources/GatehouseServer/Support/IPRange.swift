#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IP address (4 or 16 bytes), parsed from text.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            let raw = withUnsafeBytes(of: &v6) { Array($0) }
            // An IPv4-mapped IPv6 address is the IPv4 address.
            if raw[0..<10].allSatisfy({ $0 == 0 }) && raw[10] == 0xff && raw[11] == 0xff {
                bytes = Array(raw[12..<16])
            } else {
                bytes = raw
            }
            return
        }
        return nil
    }

    init(bytes: [UInt8]) { self.bytes = bytes }

    public var isV4: Bool { bytes.count == 4 }

    /// The network an address belongs to for limits that count networks, not addresses
    /// (issue 58): its IPv4 /24 or its IPv6 /64, written as a range (`203.0.113.0/24`).
    public var limitNetwork: String {
        let kept = isV4 ? 3 : 8
        let masked = IPAddress(bytes: Array(bytes.prefix(kept)) + Array(repeating: 0, count: bytes.count - kept))
        return "\(masked)/\(kept * 8)"
    }

    public var description: String {
        if isV4 { return bytes.map(String.init).joined(separator: ".") }
        var groups: [String] = []
        for index in stride(from: 0, to: 16, by: 2) {
            groups.append(String(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]), radix: 16))
        }
        return groups.joined(separator: ":")
    }
}

/// An address or CIDR range, e.g. `10.0.0.0/8` or `::1`.
public struct IPRange: Sendable, Hashable {
    public let network: IPAddress
    public let prefix: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let address = IPAddress(parts[0]) else { return nil }
        let bits = address.bytes.count * 8
        if parts.count == 2 {
            guard let prefix = Int(parts[1]), (0...bits).contains(prefix) else { return nil }
            self.prefix = prefix
        } else {
            self.prefix = bits
        }
        network = address
    }

    public func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == network.bytes.count else { return false }
        var remaining = prefix
        for index in 0..<address.bytes.count where remaining > 0 {
            let take = min(8, remaining)
            let mask: UInt8 = take == 8 ? 0xff : ~(0xff >> UInt8(take))
            if address.bytes[index] & mask != network.bytes[index] & mask { return false }
            remaining -= take
        }
        return true
    }
}
