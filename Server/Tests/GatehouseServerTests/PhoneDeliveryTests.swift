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

/// Issue 43: SMS delivered to real receivers (`Tests/support/sms_receiver.py`): an app's send
/// hook whose every signature is checked by the `standardwebhooks` package from PyPI, and a
/// local server speaking Twilio's Messages API that checks the account's Basic auth and the form
/// fields. A receiver that fails twice gets the SMS once; a queued SMS survives `kill -9`.
@Suite struct PhoneDeliveryTests {
    static let accountSID = "AC" + String(repeating: "0123456789abcdef", count: 2)
    static let authToken = "twilio-test-auth-token-43"

    /// A code sent through the hook arrives signed, once, and signs in.
    @Test(.requires(SMSReceiver.python != nil, "GATEHOUSE_TEST_PYTHON with standardwebhooks"))
    func theSendHookGetsASignedPostAndTheCodeSignsIn() async throws {
        let secret = SMSReceiver.newHookSecret()
        let receiver = try await SMSReceiver(.hook(secret: secret))
        defer { receiver.stop() }
        try await TestApp.run(.sqlite, preset: "hannah", adjust: {
            PhoneTests.roomy(&$0)
            $0.smsSender = SMSSenderSettings.hook(url: URL(string: receiver.url + "/sms")!, secret: secret)
        }) { client, config in
            let api = AuthClient(client: client)
            #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": "(415) 555-0142"])).status == .accepted)
            let received = try await receiver.waitForMessages()
            let message = try #require(received.first)
            #expect(message.to == PhoneTests.number && message.purpose == "sign_in")
            let code = try #require(message.code)
            #expect(message.text == "Your Hannah Health sign-in code is \(code). It expires in 10 minutes. Don't share it.\n\n@127.0.0.1 #\(code)")
            #expect(message.webhookID?.hasPrefix("msg_") == true)
            #expect(receiver.rejections.isEmpty, "\(receiver.rejections)")
            let signIn = try await api.post("/v1/auth/phone/verify", PhoneTests.json(["phone": PhoneTests.number, "code": code]))
            #expect(signIn.status == .ok, "\(signIn.text)")
            // Once sent, the outbox keeps no code.
            let row = try await TestApp.withStore(config) { store in try await store.recentMail(limit: 10).first { $0.kind == "sms" } }
            #expect(row?.status == "sent" && row?.textBody == nil && row?.payload == nil)
        }
    }

    /// `GATEHOUSE_SMS_HOOK_FORMAT=supabase` (issue 63): Supabase Auth's `send-sms` payload,
    /// signed (checked with the `standardwebhooks` package), and its code signs in.
    @Test(.requires(SMSReceiver.python != nil, "GATEHOUSE_TEST_PYTHON with standardwebhooks"))
    func theSendHookSpeaksSupabasesPayload() async throws {
        let receiver = try await HookReceiver()
        defer { receiver.stop() }
        try await TestApp.run(.sqlite, preset: "hannah", adjust: {
            PhoneTests.roomy(&$0)
            $0.smsSender = SMSSenderSettings.hook(url: URL(string: receiver.url("/sms"))!, secret: receiver.secret, format: .supabase)
        }) { client, _ in
            let api = AuthClient(client: client)
            #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": "(415) 555-0142"])).status == .accepted)
            var sent: HookReceiver.Call?
            for _ in 0..<200 where sent == nil {
                sent = receiver.calls.first { $0.path == "/sms" }
                if sent == nil { try await Task.sleep(for: .milliseconds(50)) }
            }
            let call = try #require(sent, "no SMS reached the hook")
            #expect((call.body["user"] as? [String: Any])?["phone"] as? String == String(PhoneTests.number.dropFirst()))
            let sms = try #require(call.body["sms"] as? [String: Any])
            let code = try #require(sms["otp"] as? String)
            #expect(code.count == 6 && (sms["message"] as? String)?.contains(code) == true, "\(sms)")
            #expect(call.webhookID.hasPrefix("msg_") && receiver.rejections.isEmpty)
            let signIn = try await api.post("/v1/auth/phone/verify", PhoneTests.json(["phone": PhoneTests.number, "code": code]))
            #expect(signIn.status == .ok, "\(signIn.text)")
        }
    }

    /// Twilio's Messages API with `From`, and with a Messaging Service.
    @Test(.requires(SMSReceiver.python != nil, "GATEHOUSE_TEST_PYTHON"), arguments: [false, true])
    func twilioGetsTheFormWithTheAccountsBasicAuth(_ messagingService: Bool) async throws {
        let receiver = try await SMSReceiver(.twilio(accountSID: Self.accountSID, authToken: Self.authToken))
        defer { receiver.stop() }
        let service = "MG" + String(repeating: "ab12", count: 8)
        try await TestApp.run(.sqlite, preset: "hannah", adjust: {
            PhoneTests.roomy(&$0)
            $0.smsSender = .twilio(
                TwilioSettings(
                    accountSID: Self.accountSID, authToken: Self.authToken, sender: messagingService ? .messagingService(service) : .from("+15005550006"),
                    apiURL: URL(string: receiver.url)!))
        }) { client, _ in
            let api = AuthClient(client: client)
            #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": "+1 415 555 0142"])).status == .accepted)
            let message = try #require(try await receiver.waitForMessages().first)
            #expect(message.to == PhoneTests.number && message.sid?.hasPrefix("SM") == true)
            #expect(messagingService ? message.messagingServiceSID == service && message.from == nil : message.from == "+15005550006")
            let body = try #require(message.body)
            #expect(body.hasPrefix("Your Hannah Health sign-in code is ") && body.hasSuffix("\n\n@127.0.0.1 #\(body.suffix(6))"))
            #expect(receiver.rejections.isEmpty, "\(receiver.rejections)")
        }
    }

    /// A receiver that fails twice, then takes it: the SMS arrives once, on the third attempt.
    @Test(.requires(SMSReceiver.python != nil, "GATEHOUSE_TEST_PYTHON with standardwebhooks"))
    func aReceiverThatFailsTwiceGetsTheSMSOnce() async throws {
        let secret = SMSReceiver.newHookSecret()
        let receiver = try await SMSReceiver(.hook(secret: secret), failFirst: 2)
        defer { receiver.stop() }
        try await TestApp.run(.sqlite, preset: "hannah", adjust: {
            PhoneTests.roomy(&$0)
            $0.smsSender = SMSSenderSettings.hook(url: URL(string: receiver.url + "/sms")!, secret: secret)
        }) { client, config in
            let api = AuthClient(client: client)
            #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": PhoneTests.number])).status == .accepted)
            let received = try await receiver.waitForMessages()
            // Nothing more comes once it was taken.
            try await Task.sleep(for: .seconds(2))
            #expect(receiver.messages.count == 1 && received.count == 1)
            #expect(receiver.failures == 2 && receiver.rejections.isEmpty, "\(receiver.rejections)")
            let row = try await TestApp.withStore(config) { store in try await store.recentMail(limit: 10).first { $0.kind == "sms" } }
            #expect(row?.status == "sent" && row?.attempts == 3)
            // Two failures in a row are below the pause (3), and the success started the count again.
            let paused = try await TestApp.withStore(config) { store in try await store.throttle(key: "sms-failures:\(PhoneTests.number)") }
            #expect(paused == nil)
        }
    }

    /// Issue 58: a hook answering with a redirect has not taken the SMS, and the redirect is never
    /// followed: a 307 would re-post the signed body (the code in it) to another host, a 302
    /// would turn into a GET there. The other host hears nothing; the SMS is not marked sent.
    @Test(.requires(SMSReceiver.python != nil, "GATEHOUSE_TEST_PYTHON with standardwebhooks"), arguments: [307, 302])
    func aRedirectIsAFailedDeliveryNeverFollowed(_ status: Int) async throws {
        let secret = SMSReceiver.newHookSecret()
        let elsewhere = try await SMSReceiver(.hook(secret: secret))
        defer { elsewhere.stop() }
        let redirecting = try await SMSReceiver(.hook(secret: secret), redirectTo: elsewhere.url + "/elsewhere", redirectStatus: status)
        defer { redirecting.stop() }
        try await TestApp.run(.sqlite, preset: "hannah", adjust: {
            PhoneTests.roomy(&$0)
            $0.smsSender = SMSSenderSettings.hook(url: URL(string: redirecting.url + "/sms")!, secret: secret)
        }) { client, config in
            let api = AuthClient(client: client)
            #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": PhoneTests.number])).status == .accepted)
            for _ in 0..<600 where redirecting.failures < 2 { try await Task.sleep(for: .milliseconds(100)) }
            #expect(redirecting.failures >= 2, "the SMS was tried again after the redirect")
            #expect(elsewhere.messages.isEmpty && elsewhere.rejections.isEmpty, "\(elsewhere.rejections)")
            let row = try await TestApp.withStore(config) { store in try await store.recentMail(limit: 10).first { $0.kind == "sms" } }
            #expect(row?.status != "sent")
        }
    }

    /// Issue 58: a number paused after refused deliveries stays paused when a retry finally goes
    /// through (a pumping run could otherwise lift its own pause); the holder typing the code lifts it.
    @Test(.requires(SMSReceiver.python != nil, "GATEHOUSE_TEST_PYTHON with standardwebhooks"))
    func aPauseIsLiftedByTheHoldersProofNotByADelivery() async throws {
        let secret = SMSReceiver.newHookSecret()
        let receiver = try await SMSReceiver(.hook(secret: secret), failFirst: 1, failStatus: 400)
        defer { receiver.stop() }
        try await TestApp.run(.sqlite, preset: "hannah", adjust: {
            PhoneTests.roomy(&$0)
            $0.preset.sms.pauseAfterFailures = 1
            $0.smsSender = SMSSenderSettings.hook(url: URL(string: receiver.url + "/sms")!, secret: secret)
        }) { client, config in
            let api = AuthClient(client: client)
            #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": PhoneTests.number])).status == .accepted)
            let code = try #require(try await receiver.waitForMessages().first?.code)
            #expect(receiver.failures == 1)
            let key = "sms-failures:\(PhoneTests.number)"
            var paused: ThrottleState?
            for _ in 0..<50 {
                paused = try await TestApp.withStore(config) { store in try await store.throttle(key: key) }
                let sent = try await TestApp.withStore(config) { store in try await store.recentMail(limit: 10).first { $0.kind == "sms" }?.status }
                if sent == "sent" { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(paused?.lockedUntil != nil, "the delivery lifted the pause")
            let signedIn = try await api.post("/v1/auth/phone/verify", PhoneTests.json(["phone": PhoneTests.number, "code": code]))
            #expect(signedIn.status == .ok, "\(signedIn.text)")
            #expect(try await TestApp.withStore(config) { store in try await store.throttle(key: key) } == nil)
        }
    }

    /// Issue 58: mail and SMS are delivered on lanes of their own. An SMS hook that holds every
    /// request open delays only SMS: a magic link asked for meanwhile is sent while the SMS is
    /// still held.
    @Test func aHangingSMSHookDelaysOnlySMS() async throws {
        let held = HeldRequests()
        let router = Router()
        router.post("/sms") { _, _ -> Response in
            await held.wait()
            return Response(status: .noContent)
        }
        let receiver = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await receiver.test(.live) { hook in
            try await TestApp.run(.sqlite, preset: "hannah", adjust: {
                PhoneTests.roomy(&$0)
                $0.smsSender = .hook(url: URL(string: "http://127.0.0.1:\(hook.port!)/sms")!, secret: Array(repeating: 7, count: 24))
            }) { client, config in
                let api = AuthClient(client: client)
                #expect(try await api.post("/v1/auth/phone/code", PhoneTests.json(["phone": PhoneTests.number])).status == .accepted)
                for _ in 0..<300 where await held.count == 0 { try await Task.sleep(for: .milliseconds(50)) }
                #expect(await held.count == 1, "the SMS reached the hook")
                #expect(try await api.post("/v1/auth/magic-link", PhoneTests.json(["email": "lanes.58@example.com"])).status == .accepted)
                // Up to 8 s: under the hook's 10 s timeout, after which one worker for both would
                // have moved on to the mail too.
                var mail: OutboxMessage?
                for _ in 0..<160 {
                    mail = try await TestApp.withStore(config) { store in
                        try await store.recentMail(limit: 10).first { $0.kind == "magic_link" && $0.status == "sent" }
                    }
                    if mail != nil { break }
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(mail != nil, "the mail waited for the SMS hook")
                let sms = try await TestApp.withStore(config) { store in try await store.recentMail(limit: 10).first { $0.kind == "sms" } }
                #expect(sms?.status == "pending", "the SMS is still held")
                await held.release()
            }
        }
    }

    /// An SMS queued just before `kill -9` (the hook down) is sent by the next start.
    @Test(.requires(SMSReceiver.python != nil, "GATEHOUSE_TEST_PYTHON with standardwebhooks"))
    func anSMSQueuedBeforeACrashIsSentAfterRestart() async throws {
        let port = try SMTPSink.freePort()
        let secret = SMSReceiver.newHookSecret()
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = [
            "GATEHOUSE_PORT": "0", "GATEHOUSE_ADMIN_KEY": TestApp.adminKey, "GATEHOUSE_PRESET": "hannah",
            "GATEHOUSE_SMS_HOOK_URL": "http://127.0.0.1:\(port)/sms", "GATEHOUSE_SMS_HOOK_SECRET": secret, "GATEHOUSE_LOG_LEVEL": "warning",
        ]
        let first = try ServerProcess(environment: environment, directory: directory)
        let base = try await first.baseURL()
        let sent = try await HTTP.request(
            base.appendingPathComponent("v1/auth/phone/code"), method: "POST", headers: ["Content-Type": "application/json"],
            body: Data(#"{"phone": "+14155550142"}"#.utf8))
        #expect(sent.status == 202)
        first.signal(SIGKILL)
        _ = try await first.exitStatus()

        let receiver = try await SMSReceiver(.hook(secret: secret), port: port)
        defer { receiver.stop() }
        let second = try ServerProcess(environment: environment, directory: directory)
        _ = try await second.baseURL()
        let message = try #require(try await receiver.waitForMessages().first)
        #expect(message.to == "+14155550142" && message.purpose == "sign_in" && message.code?.count == 6)
        #expect(receiver.rejections.isEmpty, "\(receiver.rejections)")
        second.signal(SIGTERM)
        _ = try await second.exitStatus()
    }
}

/// Requests a test's receiver holds open until the test releases them.
actor HeldRequests {
    private(set) var count = 0
    private var released = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        count += 1
        guard !released else { return }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        released = true
        for continuation in waiting { continuation.resume() }
        waiting = []
    }
}
