import Foundation
import GatehouseCore
import Testing

@Suite struct RedirectPolicyTests {
    let policy = RedirectPolicy(allowlist: ["https://app.example.com", "myapp://auth", "http://localhost:3000"])

    @Test(arguments: [
        "https://app.example.com", "https://app.example.com/", "https://APP.Example.com/callback?x=1#frag",
        "https://app.example.com:443/x", "myapp://auth", "myapp://auth/done", "http://localhost:3000/cb",
    ])
    func allowsExactOrigins(_ candidate: String) {
        #expect(policy.check(candidate) == candidate)
    }

    @Test(arguments: [
        "https://evil.com", "https://app.example.com.evil.com", "https://app.example.com@evil.com",
        "https://user:pass@app.example.com", "//evil.com", "https://app.example.com//evil.com",
        #"https://app.example.com\evil.com"#, #"https:\\app.example.com"#, "http://app.example.com",
        "https://app.example.com:8443", "https://аpp.example.com", "https://app.example.com%2F@evil.com",
        "https://app.example.com./", "https://.app.example.com", "javascript:alert(1)", "myapp://evil",
        "myapp:auth", "https://app.example.com /x", "https://app.example.com\n", "", "app.example.com",
        "https://app.example.com:0", "https://app.example.com:99999", "https://[::1]", "http://localhost:3001",
    ])
    func refusesEverythingElse(_ candidate: String) {
        #expect(policy.check(candidate) == nil)
    }

    @Test func defaultPortsMeetTheirSpelledOutForm() {
        let withPort = RedirectPolicy(allowlist: ["https://a.example:443"])
        #expect(withPort.check("https://a.example/x") != nil)
        #expect(RedirectPolicy(allowlist: []).check("https://a.example") == nil)
    }
}

@Suite struct MailRequestPolicyTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func oneAMinute() {
        #expect(MailRequestPolicy.retryAfter(sent: [], now: now, interval: 60, perDay: 5) == nil)
        #expect(MailRequestPolicy.retryAfter(sent: [now.addingTimeInterval(-20)], now: now, interval: 60, perDay: 5) == 40)
        #expect(MailRequestPolicy.retryAfter(sent: [now.addingTimeInterval(-60)], now: now, interval: 60, perDay: 5) == nil)
    }

    @Test func fiveInAnyTwentyFourHours() {
        let sent = (0..<5).map { now.addingTimeInterval(-3_600 * Double(5 - $0)) }  // 5 h … 1 h ago
        // The oldest of the five leaves the window in 19 hours.
        #expect(MailRequestPolicy.retryAfter(sent: sent, now: now, interval: 60, perDay: 5) == 19 * 3_600)
        let older = [now.addingTimeInterval(-90_000)] + sent.dropFirst()
        #expect(MailRequestPolicy.retryAfter(sent: Array(older), now: now, interval: 60, perDay: 5) == nil)
    }

    @Test func linksKnowTheirState() {
        var token = EmailToken(
            hash: [1], purpose: .passwordReset, userID: nil, email: "a@b.c", normalizedEmail: "a@b.c", createdAt: now,
            expiresAt: now.addingTimeInterval(3_600))
        #expect(token.state(at: now) == .valid)
        #expect(token.state(at: now.addingTimeInterval(3_600)) == .expired)
        token.usedAt = now
        #expect(token.state(at: now) == .used)
    }
}
