import GatehouseCore
import GatehouseWire

/// Where a request came from, as services see it (they never see the request itself).
public struct ClientInfo: Sendable, Equatable {
    /// The client's IP: the socket peer, or the first untrusted hop of `X-Forwarded-For` when
    /// the peer is a trusted proxy.
    public var ip: String?
    public var userAgent: String?

    public init(ip: String?, userAgent: String?) {
        self.ip = ip
        self.userAgent = userAgent
    }

    /// What may be stored under the preset's privacy settings (decision 11).
    public func stored(under privacy: PrivacySettings) -> ClientInfo {
        ClientInfo(ip: Self.keep(ip: ip, privacy.clientIP), userAgent: Self.keep(userAgent: userAgent, privacy.userAgent))
    }

    static func keep(ip: String?, _ retention: PrivacySettings.Retention) -> String? {
        guard let ip else { return nil }
        switch retention {
        case .full: return ip
        case .none: return nil
        case .truncated: return IPAddress(ip).map(Self.truncate) ?? nil
        }
    }

    /// IPv4 to its /24, IPv6 to its /48.
    static func truncate(_ address: IPAddress) -> String {
        var bytes = address.bytes
        let keep = address.isV4 ? 3 : 6
        for index in keep..<bytes.count { bytes[index] = 0 }
        return IPAddress(bytes: bytes).description
    }

    static func keep(userAgent: String?, _ retention: PrivacySettings.Retention) -> String? {
        guard let userAgent else { return nil }
        let capped = String(userAgent.prefix(512))
        switch retention {
        case .full: return capped
        case .none: return nil
        // The product token only, e.g. `OKLah/1.2` of `OKLah/1.2 CFNetwork/1490 Darwin/23.2`.
        case .truncated: return capped.split(separator: " ").first.map(String.init)
        }
    }
}

/// Works out the client IP from the peer and `X-Forwarded-For`.
public struct ClientAddressResolver: Sendable {
    let trustedProxies: [IPRange]

    public init(trustedProxies: [String]) {
        self.trustedProxies = trustedProxies.compactMap(IPRange.init)
    }

    /// `peer` is the socket peer's IP; `forwardedFor` the raw header, if any.
    public func clientIP(peer: String?, forwardedFor: String?) -> String? {
        guard let peer, let peerAddress = IPAddress(peer) else { return peer }
        guard isTrusted(peerAddress), let forwardedFor else { return peerAddress.description }
        // Walk from the nearest hop back; the first one that is not a trusted proxy is the client.
        var client = peerAddress
        for hop in forwardedFor.split(separator: ",").reversed() {
            guard let address = Self.hopAddress(hop) else { break }
            client = address
            if !isTrusted(address) { break }
        }
        return client.description
    }

    /// A hop as proxies write it: an address, `ip:port`, or `[v6]` and `[v6]:port` (issue 58: a
    /// proxy adding the port made every client look like the proxy, sharing its limits).
    static func hopAddress(_ hop: Substring) -> IPAddress? {
        let text = hop.trimmingCharacters(in: .whitespaces)
        if let address = IPAddress(text) { return address }
        func isPort(_ digits: Substring) -> Bool { !digits.isEmpty && digits.count <= 5 && digits.allSatisfy { $0.isASCII && $0.isNumber } }
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || (rest.first == ":" && isPort(rest.dropFirst())) else { return nil }
            return IPAddress(String(text[text.index(after: text.startIndex)..<close]))
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, isPort(parts[1]) else { return nil }
        return IPAddress(String(parts[0]))
    }

    private func isTrusted(_ address: IPAddress) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }
}
