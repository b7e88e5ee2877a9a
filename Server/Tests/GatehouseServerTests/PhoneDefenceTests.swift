import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Issue 43: every SMS-pumping defence reaches its limit and answers as it should (429, the
/// CAPTCHA, `invalid_phone`), with its `sms_refused` audit row and its metric. The walk is an
/// exhaustive switch over `SMSDefence`: a new defence does not compile until it has a case here.
@Suite struct PhoneDefenceTests {
    struct Outcome {
        var status: HTTPResponse.Status
        var code: ErrorCode
    }

    @Test(arguments: SMSDefence.allCases)
    func eachDefenceReachesItsLimitWithAnAuditRowAndAMetric(_ defence: SMSDefence) async throws {
        let clock = ManualClock(Date())
        let captcha = FakeCaptcha()
        try await captcha.serve { verifyURL in try await Self.refusingReceiver { refusing in
            try await TestApp.run(.sqlite, preset: "hannah", clock: clock, setup: .live, adjust: { config in
                PhoneTests.roomy(&config)
                config.metrics = true
                Self.tighten(defence, &config, captcha: verifyURL, refusing: refusing)
            }) { client, _ in
                let api = AuthClient(client: client)
                func send(_ number: String, captcha: String? = nil, from address: String? = nil) async throws -> TestResponse {
                    var body = ["phone": number]
                    body["captcha_token"] = captcha
                    let hop: HTTPFields = address.map { [HTTPField.Name("X-Forwarded-For")!: $0] } ?? [:]
                    return try await api.post("/v1/auth/phone/code", PhoneTests.json(body), headers: hop)
                }
                let refused: TestResponse
                switch defence {
                case .country:
                    refused = try await send("+44 20 7946 0958")
                    #expect(refused.status == .badRequest && refused.error?.code == .invalidPhone)
                case .paused:
                    // The receiver refuses the number (400): the first refusal pauses it.
                    #expect(try await send("+14155550142").status == .accepted)
                    try await Self.waitForAudit(api, "sms_number_paused")
                    clock.advance(by: 61)
                    refused = try await send("+14155550142")
                    #expect(refused.status == .tooManyRequests && refused.error?.code == .rateLimited)
                    #expect(refused.error?.message == "We can't send codes to this number right now. Try again later or use another way to sign in.")
                    #expect(try await Self.metric(api, "gatehouse_sms_failed_total") >= 1)
                case .captcha:
                    // Two sends from this address, then the third needs a CAPTCHA; with one it goes.
                    #expect(try await send("+14155550142").status == .accepted)
                    #expect(try await send("+12125550142").status == .accepted)
                    refused = try await send("+13125550142")
                    #expect(refused.status == .badRequest && refused.error?.code == .captchaRequired)
                    #expect(try await send("+13125550142", captcha: FakeCaptcha.goodToken).status == .accepted)
                case .client:
                    for number in ["+14155550142", "+12125550142", "+13125550142"] { #expect(try await send(number).status == .accepted) }
                    refused = try await send("+16175550142")
                    #expect(refused.status == .tooManyRequests && refused.error?.code == .rateLimited)
                case .network:
                    // Three addresses of one /24 count as one network; another network is not held.
                    #expect(try await send("+14155550142", from: "203.0.113.1").status == .accepted)
                    #expect(try await send("+12125550142", from: "203.0.113.2").status == .accepted)
                    refused = try await send("+13125550142", from: "203.0.113.3")
                    #expect(refused.status == .tooManyRequests && refused.error?.code == .rateLimited)
                    #expect(try await send("+13125550142", from: "198.51.100.3").status == .accepted, "another network is not held")
                case .range:
                    // The same leading digits: +14155550 1xx.
                    #expect(try await send("+14155550142").status == .accepted)
                    #expect(try await send("+14155550143").status == .accepted)
                    refused = try await send("+14155550144")
                    #expect(refused.status == .tooManyRequests && refused.error?.code == .rateLimited)
                    #expect(try await send("+12125550144").status == .accepted, "another range is not held")
                case .numberMinute:
                    #expect(try await send("+14155550142").status == .accepted)
                    refused = try await send("+14155550142")
                    #expect(refused.status == .tooManyRequests && refused.error?.code == .rateLimited && refused.error?.retryAfter ?? 0 > 0)
                case .numberDay:
                    for _ in 0..<2 {
                        #expect(try await send("+14155550142").status == .accepted)
                        clock.advance(by: 61)
                    }
                    refused = try await send("+14155550142")
                    #expect(refused.status == .tooManyRequests && refused.error?.code == .rateLimited)
                case .regionBudget:
                    // Two sends a day to Canada's numbers; the United States' are not held by it.
                    for number in ["+1 416 555 0142", "+1 604 555 0142"] { #expect(try await send(number).status == .accepted) }
                    refused = try await send("+1 514 555 0142")
                    #expect(refused.status == .tooManyRequests && refused.error?.code == .rateLimited)
                    #expect(try await send("+14155550142").status == .accepted, "another region is not held")
                case .dailyBudget:
                    for number in ["+14155550142", "+12125550142"] { #expect(try await send(number).status == .accepted) }
                    refused = try await send("+13125550142")
                    #expect(refused.status == .tooManyRequests && refused.error?.code == .rateLimited)
                }
                #expect(refused.status.code >= 400, "\(refused.text)")
                let rows = try await Self.audit(api, "sms_refused")
                #expect(rows.contains { $0.details["reason"] == defence.rawValue && $0.outcome == "failure" }, "\(rows)")
                #expect(rows.allSatisfy { !($0.details["phone"] ?? "").contains("555014") }, "numbers are masked in the audit trail")
                #expect(try await Self.metric(api, #"gatehouse_sms_refused_total{reason="\#(defence.rawValue)"}"#) >= 1)
            }
        } }
    }

    /// A send hook that refuses every number with 400, as a provider does an unreachable one.
    static func refusingReceiver(_ body: @escaping @Sendable (URL) async throws -> Void) async throws {
        let router = Router()
        router.post("/sms") { _, _ -> Response in Response(status: .badRequest) }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in try await body(URL(string: "http://127.0.0.1:\(client.port!)/sms")!) }
    }

    /// The preset's setting for `defence` at a small limit, every other one out of the way.
    static func tighten(_ defence: SMSDefence, _ config: inout GatehouseConfig, captcha: URL, refusing: URL) {
        config.preset.sms.captchaAfterSends = nil
        switch defence {
        case .country: break
        case .paused:
            config.preset.sms.pauseAfterFailures = 1
            config.smsSender = .hook(url: refusing, secret: Array(repeating: 7, count: 24))
        case .captcha:
            config.preset.sms.captchaAfterSends = 2
            config.captchaVerifyURL = captcha
            config.captchaSecret = FakeCaptcha.secret
        case .client: config.preset.sms.perClientPerHour = 3
        case .network:
            config.preset.sms.perNetworkPerHour = 2
            config.trustedProxies = ["127.0.0.1"]
        case .regionBudget:
            config.preset.sms.allowedCountries = ["US", "CA"]
            config.preset.sms.regionDailyBudgets = ["CA": 2]
        case .range: config.preset.sms.perRangePerHour = 2
        case .numberMinute: break
        case .numberDay: config.preset.sms.perNumberPerDay = 2
        case .dailyBudget: config.preset.sms.dailyBudget = 2
        }
    }

    static func audit(_ api: AuthClient, _ event: String) async throws -> [AuditEntry] {
        let trail = try await api.client.execute(uri: "/admin/v1/audit?limit=200", method: .get, headers: TestApp.adminHeaders)
        return try trail.json(AuditList.self).events.filter { $0.event == event }
    }

    static func waitForAudit(_ api: AuthClient, _ event: String) async throws {
        for _ in 0..<200 {
            if try await !audit(api, event).isEmpty { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("no \(event) audit row")
    }

    /// A counter's value on `/metrics` (the line that starts with `series`), 0 when absent.
    static func metric(_ api: AuthClient, _ series: String) async throws -> Double {
        let page = try await api.get("/metrics", token: nil).text
        let line = page.split(separator: "\n").first { $0.hasPrefix(series + " ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }
}
