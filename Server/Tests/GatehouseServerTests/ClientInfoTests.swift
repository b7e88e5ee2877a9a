import GatehouseCore
import GatehouseServer
import Testing

@Suite struct ClientInfoTests {
    @Test func theClientIPIsThePeerUnlessAProxyIsTrusted() {
        let none = ClientAddressResolver(trustedProxies: [])
        #expect(none.clientIP(peer: "10.0.0.9", forwardedFor: "1.2.3.4") == "10.0.0.9")
        let proxied = ClientAddressResolver(trustedProxies: ["10.0.0.0/8"])
        #expect(proxied.clientIP(peer: "10.0.0.9", forwardedFor: "1.2.3.4") == "1.2.3.4")
        // The client may prepend anything; only the hops our proxies added count.
        #expect(proxied.clientIP(peer: "10.0.0.9", forwardedFor: "6.6.6.6, 1.2.3.4, 10.0.0.2") == "1.2.3.4")
        #expect(proxied.clientIP(peer: "10.0.0.9", forwardedFor: "garbage") == "10.0.0.9")
        // Issue 58: hops written with their ports are the clients', not the proxy's.
        #expect(proxied.clientIP(peer: "10.0.0.9", forwardedFor: "203.0.113.7:51234") == "203.0.113.7")
        #expect(proxied.clientIP(peer: "10.0.0.9", forwardedFor: "[2001:db8::7]:443, 10.0.0.2:80") == "2001:db8:0:0:0:0:0:7")
        #expect(proxied.clientIP(peer: "10.0.0.9", forwardedFor: "[2001:db8::8]") == "2001:db8:0:0:0:0:0:8")
        #expect(proxied.clientIP(peer: "10.0.0.9", forwardedFor: "203.0.113.7:port") == "10.0.0.9")
        #expect(proxied.clientIP(peer: "192.168.1.1", forwardedFor: "1.2.3.4") == "192.168.1.1")
    }

    @Test func privacySettingsTruncateOrDropWhatIsStored() {
        let client = ClientInfo(ip: "203.0.113.77", userAgent: "OKLah/1.2 CFNetwork/1490 Darwin/23.2")
        var privacy = PrivacySettings()
        #expect(client.stored(under: privacy) == client)
        privacy.clientIP = .truncated
        privacy.userAgent = .truncated
        #expect(client.stored(under: privacy) == ClientInfo(ip: "203.0.113.0", userAgent: "OKLah/1.2"))
        #expect(ClientInfo(ip: "2001:db8:abcd:12::1", userAgent: nil).stored(under: privacy).ip == "2001:db8:abcd:0:0:0:0:0")
        privacy.clientIP = .none
        privacy.userAgent = .none
        #expect(client.stored(under: privacy) == ClientInfo(ip: nil, userAgent: nil))
    }
}
