import Foundation
import GatehouseWire
import Testing

/// A software passkey authenticator: `Tests/support/webauthn_authenticator.py` (soft-webauthn's
/// keys, bytes built as a platform authenticator builds them, tampered on request), with
/// py_webauthn beside it as an independent relying party. One process per test, spoken to in
/// JSON lines.
final class SoftAuthenticator: @unchecked Sendable {
    private let process: Spawned
    private let input: FileHandle
    private let output: FileHandle
    private let lock = NSLock()
    private var buffer = Data()

    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("support/webauthn_authenticator.py")
    }

    static var isAvailable: Bool { SMTPSink.python != nil }

    init() throws {
        guard let python = SMTPSink.python else {
            throw ProcessError("GATEHOUSE_TEST_PYTHON (with soft-webauthn and webauthn) is not set; run make test")
        }
        process = Spawned()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [Self.script.path]
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.standardError
        try process.run()
        input = stdin.fileHandleForWriting
        output = stdout.fileHandleForReading
    }

    deinit {
        try? input.close()
        // Reaped on a thread of its own: blocking calls on Swift's cooperative pool (two threads
        // here) would stall every server the test process runs.
        let process = self.process
        LastByteRace.onOwnThread { process.waitUntilExit() }
    }

    /// Sends one command and returns its answer; an `error` answer throws. The pipe is read on
    /// a thread of its own, never on the cooperative pool.
    func call(_ command: [String: Any]) async throws -> [String: Any] {
        var line = try JSONSerialization.data(withJSONObject: command)
        line.append(0x0a)
        let request = line
        let answerLine: Data = try await withCheckedThrowingContinuation { continuation in
            LastByteRace.onOwnThread { continuation.resume(with: Result { try self.exchange(request) }) }
        }
        let answer = try #require(try JSONSerialization.jsonObject(with: answerLine) as? [String: Any])
        if let error = answer["error"] as? String { throw ProcessError("authenticator: \(error)") }
        return answer
    }

    /// Writes one line and reads one line back (blocking).
    private func exchange(_ line: Data) throws -> Data {
        lock.lock()
        defer { lock.unlock() }
        try input.write(contentsOf: line)
        while !buffer.contains(0x0a) {
            // Blocks its thread: `request` calls this on a thread of its own.
            let chunk = output.availableData
            guard !chunk.isEmpty else { throw ProcessError("the authenticator stopped") }
            buffer.append(chunk)
        }
        let end = buffer.firstIndex(of: 0x0a)!
        let answer = Data(buffer[buffer.startIndex..<end])
        buffer = Data(buffer[buffer.index(after: end)...])
        return answer
    }

    /// A registration answer to `options` from `origin`, as the device `device` makes it.
    func create(
        _ device: String, options: PasskeyCreationOptions, origin: String, synced: Bool = false, tamper: [String: Any] = [:]
    ) async throws -> [String: Any] {
        try #require(
            try await call([
                "cmd": "create", "device": device, "options": Self.object(options), "origin": origin, "synced": synced, "tamper": tamper,
            ])["credential"] as? [String: Any])
    }

    /// An assertion answer to `options` from `origin`.
    func get(_ device: String, options: PasskeyRequestOptions, origin: String, tamper: [String: Any] = [:]) async throws -> [String: Any] {
        try #require(
            try await call(["cmd": "get", "device": device, "options": Self.object(options), "origin": origin, "tamper": tamper])["credential"]
                as? [String: Any])
    }

    /// The device's newest credential: id, COSE key, counter, user handle.
    func credential(_ device: String) async throws -> [String: Any] {
        try await call(["cmd": "credential", "device": device])
    }

    static func object(_ value: some Encodable) throws -> Any {
        try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value))
    }

    /// JSON text of a credential answer, for a request body.
    static func json(_ object: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }
}
