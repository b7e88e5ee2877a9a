import Foundation
import Testing

/// A real receiver for SMS deliveries (Python http.server, `Tests/support/sms_receiver.py`) on a
/// loopback port: an app's send hook, checking the Standard Webhooks signature with the
/// `standardwebhooks` package, or Twilio's Messages API, checking the account's Basic auth and the
/// form fields. Accepted messages, rejected requests and the requests it failed on purpose
/// (`failFirst`) land in three files, one JSON line each.
final class SMSReceiver: Sendable {
    enum Mode: Sendable {
        /// POST to any path, signed with `secret` (`whsec_…`).
        case hook(secret: String)
        /// POST /2010-04-01/Accounts/{accountSID}/Messages.json with Basic auth `accountSID:authToken`.
        case twilio(accountSID: String, authToken: String)
    }

    /// One accepted message. A hook message has `webhookID`, `to`, `text`, `code` and `purpose`;
    /// a Twilio one has `sid`, `to`, `body` and one of `from` and `messagingServiceSID`.
    struct Message: Decodable, Sendable {
        var webhookID: String?
        var to: String?
        var text: String?
        var code: String?
        var purpose: String?
        var sid: String?
        var from: String?
        var messagingServiceSID: String?
        var body: String?

        enum CodingKeys: String, CodingKey {
            case webhookID = "webhook_id"
            case to, text, code, purpose, sid, from
            case messagingServiceSID = "messaging_service_sid"
            case body
        }
    }

    let process: Spawned
    let input: Pipe
    let port: Int
    let mode: Mode
    let directory: URL
    let messagesFile: URL
    let rejectionsFile: URL
    let failuresFile: URL

    static var python: String? { ProcessInfo.processInfo.environment["GATEHOUSE_TEST_PYTHON"] }

    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("support/sms_receiver.py")
    }

    /// `failFirst` answers the first that many otherwise valid requests with `failStatus` (counted
    /// in `failures`, not in `messages`); `redirectTo` answers every valid request with a
    /// `redirectStatus` redirect there (counted in `failures` too).
    init(
        _ mode: Mode, failFirst: Int = 0, failStatus: Int = 500, redirectTo: String? = nil, redirectStatus: Int = 307, port: Int? = nil
    ) async throws {
        guard let python = Self.python else {
            throw ProcessError("GATEHOUSE_TEST_PYTHON (with standardwebhooks) is not set; run make test")
        }
        self.mode = mode
        directory = try ServerProcess.makeDirectory()
        messagesFile = directory.appendingPathComponent("messages.jsonl")
        rejectionsFile = directory.appendingPathComponent("rejections.jsonl")
        failuresFile = directory.appendingPathComponent("failures.jsonl")
        self.port = try port ?? SMTPSink.freePort()
        var arguments = [
            Self.script.path, "--port", String(self.port), "--out", messagesFile.path, "--rejects", rejectionsFile.path,
            "--failures", failuresFile.path, "--fail-first", String(failFirst), "--fail-status", String(failStatus),
            "--redirect-status", String(redirectStatus),
        ]
        if let redirectTo { arguments += ["--redirect-to", redirectTo] }
        switch mode {
        case .hook(let secret):
            arguments += ["--mode", "hook", "--secret", secret]
        case .twilio(let accountSID, let authToken):
            arguments += ["--mode", "twilio", "--account-sid", accountSID, "--auth-token", authToken]
        }
        let started = try await Spawned.helper(python: python, arguments)
        (process, input) = (started.process, started.input)
        guard started.firstLine.contains("READY") else {
            try? input.fileHandleForWriting.close()
            throw ProcessError("the SMS receiver did not start: \(started.firstLine)")
        }
    }

    /// Where it listens, `http://127.0.0.1:<port>` (a hook URL may add any path; Twilio's base URL).
    var url: String { "http://127.0.0.1:\(port)" }

    /// The messages accepted so far, oldest first.
    var messages: [Message] {
        Self.lines(of: messagesFile).compactMap { try? JSONDecoder().decode(Message.self, from: Data($0.utf8)) }
    }

    /// The rejected requests so far, each the raw JSON line `{"status", "reason", "method", "path"}`.
    var rejections: [String] { Self.lines(of: rejectionsFile) }

    /// How many requests were answered with a failure or a redirect on purpose.
    var failures: Int { Self.lines(of: failuresFile).count }

    /// Polls (about 90 seconds at most, as `SMTPSink` does) until `count` messages have arrived.
    func waitForMessages(_ count: Int = 1) async throws -> [Message] {
        for _ in 0..<900 {
            let received = messages
            if received.count >= count { return received }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ProcessError("no SMS arrived (rejections: \(rejections))")
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        // Blocks its thread: the helper exits as soon as its input closes.
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A new Standard Webhooks secret: `whsec_` and the base64 of 24 random bytes.
    static func newHookSecret() -> String {
        let bytes = (0..<24).map { _ in UInt8.random(in: .min ... .max) }
        return "whsec_" + Data(bytes).base64EncodedString()
    }

    /// The complete lines of `file` (a line still being written, with no newline yet, is left out).
    static func lines(of file: URL) -> [String] {
        guard let text = try? String(contentsOf: file, encoding: .utf8), let end = text.lastIndex(of: "\n") else { return [] }
        return text[..<end].split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }
}
