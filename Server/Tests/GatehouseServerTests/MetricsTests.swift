import Foundation
import GatehouseCore
import GatehouseTestSupport
import Testing

/// `GET /metrics` (issue 25): scraped by a real Prometheus server (Debian's `prometheus`, driven
/// by `Tests/support/prometheus_scrape.py`), which must see the target healthy and count the
/// sign-in failures the test caused; the token guards it; it is not served unless configured.
@Suite struct MetricsTests {
    static let token = "metrics-token-0123456789-abcdef"
    static let password = "correct horse battery"

    static var prometheus: String? {
        ["/usr/bin/prometheus", "/opt/homebrew/bin/prometheus", "/usr/local/bin/prometheus"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    static var scraper: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("support/prometheus_scrape.py").path
    }

    /// `name{labels} value` lines of a Prometheus text page, keyed by everything before the value.
    static func samples(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    static func scrape(_ base: URL, bearer: String?) async throws -> HTTP.Reply {
        try await HTTP.request(
            base.appendingPathComponent("metrics"), method: "GET", headers: bearer.map { ["Authorization": "Bearer \($0)"] } ?? [:])
    }

    @Test(.requires(SMTPSink.python != nil && prometheus != nil, "GATEHOUSE_TEST_PYTHON and Debian's prometheus"))
    func prometheusScrapesTheServerAndSeesTheFailuresTheTestCaused() async throws {
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = "sqlite://" + directory.appendingPathComponent("gatehouse.sqlite").path
        let environment = ServerProcess.environment(
            database: database, ["GATEHOUSE_IP_LIMITS": "off", "GATEHOUSE_METRICS_TOKEN": Self.token])
        let server = try ServerProcess(["serve"], environment: environment, directory: directory)
        defer { server.signal(SIGTERM) }
        let base = try await server.baseURL()

        // One sign-up, three wrong passwords, one right one.
        let signUp = try await BackupTests.post(base, "/v1/auth/signup", ["email": "metrics@example.com", "password": Self.password])
        #expect(signUp.status == 201)
        for _ in 0..<3 {
            let wrong = try await BackupTests.post(base, "/v1/auth/login", ["email": "metrics@example.com", "password": "not the password"])
            #expect(wrong.status == 401)
        }
        let right = try await BackupTests.post(base, "/v1/auth/login", ["email": "metrics@example.com", "password": Self.password])
        #expect(right.status == 200)

        // A path no route matches is counted under one label, not as sent; so is a method
        // outside the standard ones (a client may send any token).
        #expect(try await HTTP.request(base.appendingPathComponent("/no/such/path")).status == 404)
        _ = try await HTTP.request(base.appendingPathComponent("/v1/me"), method: "PROPFIND")

        // The token guards the page.
        #expect(try await Self.scrape(base, bearer: nil).status == 401)
        #expect(try await Self.scrape(base, bearer: "metrics-token-0123456789-wrong!").status == 401)
        let page = try await Self.scrape(base, bearer: Self.token)
        #expect(page.status == 200)
        #expect(page.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        let samples = Self.samples(page.text)
        #expect(samples[#"gatehouse_sign_in_failures_total{method="password",reason="invalid_credentials"}"#] == 3, "\(page.text)")
        // The login; a sign-up opens a session but is not a sign-in.
        #expect(samples[#"gatehouse_sign_ins_total{method="password"}"#] == 1)
        #expect(samples[#"gatehouse_http_requests_total{method="POST",route="/v1/auth/login",status="401"}"#] == 3)
        #expect(samples[#"gatehouse_http_requests_total{method="POST",route="/v1/auth/login",status="200"}"#] == 1)
        #expect(samples[#"gatehouse_http_request_duration_seconds_count{method="POST",route="/v1/auth/signup"}"#] == 1)
        #expect(samples[#"gatehouse_http_requests_total{method="GET",route="unmatched",status="404"}"#] == 1)
        #expect(!page.text.contains("/no/such/path") && !page.text.contains("PROPFIND"))
        #expect(samples.keys.contains { $0.hasPrefix(#"gatehouse_http_requests_total{method="_OTHER","#) }, "\(page.text)")
        // One hash at sign-up, four checks at the logins.
        #expect(samples[#"gatehouse_password_hash_duration_seconds_count{operation="hash"}"#] == 1)
        #expect(samples[#"gatehouse_password_hash_duration_seconds_count{operation="verify"}"#] == 4)
        #expect((samples["gatehouse_db_pool_wait_seconds_count"] ?? 0) > 0)
        // Paths are recorded by their route, never as sent: no address or token in a label.
        #expect(!page.text.contains("metrics@example.com"))

        // The real Prometheus server scrapes it with the token and answers the query.
        let python = try #require(SMTPSink.python)
        let port = try #require(base.port)
        let output = try await Command.run(
            python,
            [
                Self.scraper, "--target", "127.0.0.1:\(port)", "--bearer", Self.token, "--prometheus", try #require(Self.prometheus),
                "--query", #"sum(gatehouse_sign_in_failures_total{reason="invalid_credentials"})"#, "--expect-value", "3",
                "--timeout", "60",
            ])
        let line = try #require(output.split(separator: "\n").last(where: { $0.hasPrefix("{") }))
        let result = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(result["target_health"] as? String == "up", "\(output)")
        #expect(result["value"] as? Double == 3 || result["value"] as? Int == 3, "\(output)")

        // Without the token Prometheus sees the target down (401).
        await #expect(throws: (any Error).self) {
            try await Command.run(
                python,
                [
                    Self.scraper, "--target", "127.0.0.1:\(port)", "--prometheus", try #require(Self.prometheus),
                    "--query", "gatehouse_lockouts_total", "--timeout", "8",
                ])
        }
    }

    @Test func metricsAreNotServedUnlessConfigured() async throws {
        try await TestApp.run(.sqlite) { client, _ in
            let page = try await AuthClient(client: client).get("/metrics", token: nil)
            #expect(page.status == .notFound)
        }
    }

    /// In process, metrics on without a token: five wrong passwords lock the account, the right
    /// one is then refused as locked, and a refresh token presented after its rotation ends the
    /// session; each is counted once.
    @Test func aLockoutAndARefreshReuseAreCounted() async throws {
        let clock = ManualClock()
        try await TestApp.run(.sqlite, clock: clock, adjust: { $0.metrics = true }) { client, config in
            let api = AuthClient(client: client)
            let first = try await api.account("lock@example.com")
            for _ in 0..<5 {
                #expect(try await api.login("lock@example.com", "not the password").status == .unauthorized)
            }
            #expect(try await api.login("lock@example.com").status == .tooManyRequests)
            // Reuse: the old refresh token again once the reuse interval has passed.
            let rotated = try await api.refresh(first.session.refreshToken)
            #expect(rotated.status == .ok)
            clock.advance(by: TimeInterval(config.preset.tokens.refreshReuseIntervalSeconds + 1))
            #expect(try await api.refresh(first.session.refreshToken).status == .unauthorized)

            let page = try await api.get("/metrics", token: nil)
            #expect(page.status == .ok)
            let samples = Self.samples(page.text)
            #expect(samples["gatehouse_lockouts_total"] == 1, "\(page.text)")
            #expect(samples[#"gatehouse_sign_in_failures_total{method="password",reason="invalid_credentials"}"#] == 5)
            #expect(samples[#"gatehouse_sign_in_failures_total{method="password",reason="account_locked"}"#] == 1)
            #expect(samples["gatehouse_refresh_reuse_detected_total"] == 1)
        }
    }
}
