import AsyncHTTPClient
import Crypto
import Foundation
import GatehouseCore
import GatehouseWire
import Logging
import NIOCore

/// One SMS as the outbox holds it, ready for a sender.
struct SMSMessage: Sendable, Equatable {
    /// The outbox row's id: the hook's `webhook-id`, the same on every retry so a receiver can
    /// drop a repeat.
    var id: UUID
    /// E.164.
    var to: String
    var text: String
    /// The code a code's SMS carries; nil for a notice.
    var code: String?
    /// An `SMSPurpose` (`sign_in`, `verify_phone`), or `notice` for a text with no code
    /// (`PhoneNotices`: a number that left an account).
    var purpose: String

    /// The `purpose` of a notice.
    static let notice = "notice"

    init?(_ message: OutboxMessage) {
        guard let text = message.textBody, let purpose = message.payload?["purpose"] else { return nil }
        let code = message.payload?["code"]
        // A code's SMS has its code; only a notice goes without one.
        guard SMSPurpose(rawValue: purpose) != nil ? code != nil : purpose == Self.notice else { return nil }
        (id, to, self.text, self.code, self.purpose) = (message.id, message.recipient, text, code, purpose)
    }
}

/// A receiver's answer other than a 2xx. One that refuses this number (a 4xx other than an
/// authentication, timeout or rate-limit answer: Twilio's 400 for an invalid or unreachable
/// `To`, a hook's 4xx) counts towards pausing the number; an outage (a 5xx, no connection) does
/// not, so a provider's bad minute pauses nobody.
struct SMSDeliveryRefused: Error, CustomStringConvertible {
    var status: Int
    var detail: String

    var refusesNumber: Bool { (400..<500).contains(status) && ![401, 403, 408, 429].contains(status) }
    var description: String { "\(detail) answered \(status)" }
}

/// Where SMS go: the app's send hook, Twilio, or (in development) nowhere but the outbox.
protocol SMSSender: Sendable {
    /// Whether the outbox keeps a sent SMS's text (the dev outbox shows it; real senders clear
    /// it, so no code outlives its delivery).
    var keepsBodies: Bool { get }
    /// Hands the SMS over; throws when the receiver did not take it (retried with backoff).
    func send(_ message: SMSMessage) async throws
}

/// `GATEHOUSE_SMS_HOOK_URL`: a POST through the one hook caller (`HookCaller`: Standard Webhooks
/// signing, the hooks' timeout, no redirect, a bounded answer), body `{"type": "sms.send",
/// "timestamp", "data": {"to", "text", "code", "purpose"}}`. Anything but a 2xx is a failure.
struct SMSHookSender: SMSSender {
    let url: URL
    /// The secret's bytes (the base64 after `whsec_`).
    let secret: [UInt8]
    /// Gatehouse's payload, or Supabase Auth's `send-sms` one.
    let format: HookFormat
    let caller: HookCaller
    var keepsBodies: Bool { false }

    /// The hook's label in the metric, the span and the console's hook health.
    static let label = "send_sms"

    func send(_ message: SMSMessage) async throws {
        let data: Data
        switch format {
        case .gatehouse:
            let body: [String: Any] = [
                "type": "sms.send", "timestamp": caller.clock.now.rfc3339,
                "data": ["to": message.to, "text": message.text, "purpose": message.purpose].merging(message.code.map { ["code": $0] } ?? [:]) { a, _ in a },
            ]
            data = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        case .supabase:
            data = try SupabaseHookFormat.sendSMS(message)
        }
        do {
            // Any 2xx is taken: what it says is not read.
            try await caller.post(Self.label, url: url, secret: secret, id: "msg_" + message.id.uuidString.lowercased(), body: data) { _ in () }
        } catch let failure {
            // A receiver's own answer may refuse the number; an outage never does.
            if case .status(let status) = failure { throw SMSDeliveryRefused(status: status, detail: "the SMS hook") }
            throw failure
        }
    }
}

/// Twilio's Messages API: `POST {base}/2010-04-01/Accounts/{AccountSid}/Messages.json` with
/// HTTP Basic auth (the account SID and its auth token) and the form fields `To`, `Body` and
/// `From` or `MessagingServiceSid`. Twilio answers 201 with the queued message.
struct TwilioSender: SMSSender {
    let settings: TwilioSettings
    let client: HTTPClient
    var keepsBodies: Bool { false }

    func send(_ message: SMSMessage) async throws {
        var base = settings.apiURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        var request = HTTPClientRequest(url: "\(base)/2010-04-01/Accounts/\(settings.accountSID)/Messages.json")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let credentials = Data("\(settings.accountSID):\(settings.authToken)".utf8).base64EncodedString()
        request.headers.add(name: "Authorization", value: "Basic \(credentials)")
        var fields = [("To", message.to), ("Body", message.text)]
        switch settings.sender {
        case .from(let from): fields.append(("From", from))
        case .messagingService(let sid): fields.append(("MessagingServiceSid", sid))
        }
        request.body = .bytes(ByteBuffer(string: fields.map { "\($0)=\(Self.formEncoded($1))" }.joined(separator: "&")))
        let response = try await client.execute(request, timeout: .seconds(10))
        let answer = try? await response.body.collect(upTo: 65_536)
        guard (200..<300).contains(response.status.code) else {
            // Twilio's error code (e.g. 21211, an invalid `To`), never the body's echo of the text.
            let code = answer.flatMap { try? JSONSerialization.jsonObject(with: Data(buffer: $0)) as? [String: Any] }?["code"]
            throw SMSDeliveryRefused(status: Int(response.status.code), detail: "Twilio\(code.map { " (code \($0))" } ?? "")")
        }
    }

    /// `application/x-www-form-urlencoded`: everything but unreserved characters percent-encoded.
    static func formEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}

/// Development without a sender: the SMS stays in the outbox (`GET /dev/outbox`, `kind` `sms`)
/// and one log line says so, without the number's digits or the code.
struct DevSMSSender: SMSSender {
    let logger: Logger
    var keepsBodies: Bool { true }

    func send(_ message: SMSMessage) async throws {
        logger.notice("sms (dev outbox)", metadata: ["to": "\(SMSDefences.masked(e164: message.to))", "purpose": "\(message.purpose)"])
    }
}
