import Foundation
import Testing

/// A real app endpoint for the auth hooks (Python http.server, `Tests/support/hook_receiver.py`)
/// on a loopback port: it checks every call's Standard Webhooks signature with the
/// `standardwebhooks` package, records the verified calls, and answers as its plan says (the
/// plan is read again for every call, so a test changes it between requests).
final class HookReceiver: Sendable {
    /// One verified call: its `webhook-id`, the path it was sent to and its JSON body.
    struct Call {
        var webhookID: String
        var path: String
        var body: [String: Any]

        init?(_ line: String) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let id = object["webhook_id"] as? String, let path = object["path"] as? String, let body = object["body"] as? [String: Any]
            else { return nil }
            webhookID = id
            self.path = path
            self.body = body
        }

        /// `data` of Gatehouse's envelope.
        var data: [String: Any] { body["data"] as? [String: Any] ?? [:] }
    }

    let process: Spawned
    let input: Pipe
    let port: Int
    let secret: String
    let directory: URL
    let planFile: URL
    let callsFile: URL
    let rejectionsFile: URL

    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("support/hook_receiver.py")
    }

    init(secret: String = SMSReceiver.newHookSecret()) async throws {
        guard let python = SMSReceiver.python else {
            throw ProcessError("GATEHOUSE_TEST_PYTHON (with standardwebhooks) is not set; run make test")
        }
        self.secret = secret
        directory = try ServerProcess.makeDirectory()
        planFile = directory.appendingPathComponent("plan.json")
        callsFile = directory.appendingPathComponent("calls.jsonl")
        rejectionsFile = directory.appendingPathComponent("rejections.jsonl")
        port = try SMTPSink.freePort()
        let started = try await Spawned.helper(
            python: python,
            [Self.script.path, "--port", String(port), "--secret", secret, "--plan", planFile.path, "--out", callsFile.path, "--rejects", rejectionsFile.path])
        (process, input) = (started.process, started.input)
        guard started.firstLine.contains("READY") else {
            try? input.fileHandleForWriting.close()
            throw ProcessError("the hook receiver did not start: \(started.firstLine)")
        }
    }

    /// `http://127.0.0.1:<port><path>`.
    func url(_ path: String = "/hook") -> String { "http://127.0.0.1:\(port)\(path)" }

    /// How the next calls are answered (see hook_receiver.py).
    func plan(_ plan: [String: Any]) throws {
        try JSONSerialization.data(withJSONObject: plan).write(to: planFile, options: .atomic)
    }

    /// Answers every call with `{"decision": "allow"}` (the default).
    func allow() throws { try plan([:]) }

    /// Answers `{"decision": "reject", "message": message}`.
    func reject(_ message: String) throws { try plan(["body": ["decision": "reject", "message": message]]) }

    /// The verified calls so far, oldest first.
    var calls: [Call] { SMSReceiver.lines(of: callsFile).compactMap(Call.init) }

    /// Calls refused for their signature.
    var rejections: [String] { SMSReceiver.lines(of: rejectionsFile) }

    func stop() {
        try? input.fileHandleForWriting.close()
        // Blocks its thread: the helper exits as soon as its input closes.
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}
