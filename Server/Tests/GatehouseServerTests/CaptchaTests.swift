import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// A local siteverify endpoint (the protocol Turnstile, hCaptcha and reCAPTCHA share): accepts
/// one token, records what it was asked, and can be switched off.
final class FakeCaptcha: Sendable {
    static let secret = "captcha-secret-0123"
    static let goodToken = "passed-challenge"

    private let state = Mutex<(requests: [[String: String]], down: Bool)>(([], false))

    var requests: [[String: String]] { state.withLock { $0.requests } }
    func setDown(_ down: Bool) { state.withLock { $0.down = down } }

    func serve(_ body: @escaping @Sendable (URL) async throws -> Void) async throws {
        let router = Router()
        router.post("/siteverify") { request, _ -> Response in
            let form = FakeProvider.parseForm(String(buffer: try await request.body.collect(upTo: 65_536)))
            let down = self.state.withLock { state -> Bool in
                state.requests.append(form)
                return state.down
            }
            if down { return Response(status: .badGateway) }
            let success = form["secret"] == Self.secret && form["response"] == Self.goodToken
            let data = try JSONSerialization.data(withJSONObject: ["success": success, "error-codes": success ? [] : ["invalid-input-response"]])
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            try await body(URL(string: "http://127.0.0.1:\(client.port!)/siteverify")!)
        }
    }
}

/// SyncWell §6: a CAPTCHA after several failed logins from one IP, for login and sign-up.
@Suite struct CaptchaTests {
    static func login(_ api: AuthClient, _ password: String, captcha: String? = nil) async throws -> TestResponse {
        var body: [String: String] = ["email": "stuffed@example.com", "password": password]
        body["captcha_token"] = captcha
        return try await api.post("/v1/auth/login", String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self))
    }

    @Test func afterRepeatedFailuresLoginAndSignUpNeedACaptcha() async throws {
        let captcha = FakeCaptcha()
        try await captcha.serve { verifyURL in
            try await TestApp.run(.sqlite, preset: "syncwell", setup: .live, adjust: {
                $0.captchaVerifyURL = verifyURL
                $0.captchaSecret = FakeCaptcha.secret
                $0.preset.throttling.captchaAfterIPFailures = 3
            }) { client, _ in
                let api = AuthClient(client: client)
                let password = "Correct-Horse-42"
                #expect(try await api.signup("stuffed@example.com", password).status == .created)

                // Below the threshold: no CAPTCHA asked for, and the provider is never called.
                for _ in 0..<3 {
                    #expect(try await Self.login(api, "Wrong-Password-1").error?.code == .invalidCredentials)
                }
                #expect(captcha.requests.isEmpty)

                // Past it: without a token, and with one the provider rejects, 400 captcha_required —
                // even with the right password, which is not checked.
                let missing = try await Self.login(api, password)
                #expect(missing.status == .badRequest && missing.error?.code == .captchaRequired)
                let rejected = try await Self.login(api, password, captcha: "made-up")
                #expect(rejected.status == .badRequest && rejected.error?.code == .captchaRequired)
                #expect(captcha.requests.last == ["secret": FakeCaptcha.secret, "response": "made-up", "remoteip": "127.0.0.1"])

                // Sign-up from the same address is held to it too.
                let signup = try await api.post("/v1/auth/signup", #"{"email": "fresh@example.com", "password": "\#(password)"}"#)
                #expect(signup.error?.code == .captchaRequired)

                // A passed challenge lets the login through.
                #expect(try await Self.login(api, password, captcha: FakeCaptcha.goodToken).status == .ok)

                // The provider down: closed, not open.
                captcha.setDown(true)
                let unavailable = try await Self.login(api, password, captcha: FakeCaptcha.goodToken)
                #expect(unavailable.status == .serviceUnavailable && unavailable.error?.code == .serviceUnavailable)
            }
        }
    }
}
