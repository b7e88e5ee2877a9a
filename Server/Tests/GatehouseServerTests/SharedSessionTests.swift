import Foundation
import GatehouseStore
import Logging
import Synchronization
import Testing

/// Issue 64: an app and its extensions share one session through the SDK. Real OS processes
/// (`session-sharer`) share one "Keychain" file and its `FileSessionLock`, and refresh in a loop
/// against a live server whose reuse detection has no grace (`refresh_reuse_interval_seconds`
/// 0): a refresh token presented twice would end the session everywhere.
@Suite(.serialized) struct SharedSessionTests {
    /// One `session-sharer` process and what it printed, read to its end by a thread of its own
    /// (no `readabilityHandler`: its dispatch source outlived a closed pipe once, and crashed).
    final class Sharer: Sendable {
        let process = Spawned()
        private let output = TextBuffer()
        private let finished = Flag()

        init(_ arguments: [String]) throws {
            process.executableURL = try ServerProcess.built("session-sharer")
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let (output, finished, reading) = (self.output, self.finished, pipe.fileHandleForReading)
            Thread.detachNewThread {
                output.append(reading.readDataToEndOfFile())
                finished.set()
            }
        }

        var lines: [String] { output.text.split(separator: "\n").map(String.init) }
        var rotations: Int { lines.filter { $0 == "rotated" }.count }

        /// The exit status (or the signal that ended it) once its output is read, within two minutes.
        func finish() async throws -> Int32 {
            for _ in 0..<2_400 where process.isRunning || !finished.isSet { try await Task.sleep(for: .milliseconds(50)) }
            guard !process.isRunning, finished.isSet else { throw ProcessError("session-sharer did not exit: \(output.text)") }
            return process.terminationStatus
        }
    }

    /// Set once, read from any thread.
    final class Flag: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }

    /// A server on SQLite whose preset's only change is no reuse grace, and the device folder the
    /// processes share, signed in anonymously.
    static func signedInDevice() async throws -> (server: ServerProcess, base: String, directory: URL, device: String) {
        let directory = try ServerProcess.makeDirectory()
        let preset = directory.appendingPathComponent("shared.json")
        try Data(#"{"name":"shared","tokens":{"access_token_ttl_seconds":60,"refresh_reuse_interval_seconds":0}}"#.utf8).write(to: preset)
        let server = try ServerProcess(
            ["serve"],
            environment: ServerProcess.environment(
                database: "sqlite://\(directory.appendingPathComponent("gatehouse.sqlite").path)", ["GATEHOUSE_PRESET": preset.path]),
            directory: directory)
        let base = try await server.baseURL().absoluteString
        let device = directory.appendingPathComponent("device").path
        let signIn = try Sharer(["sign-in", base, device])
        #expect(try await signIn.finish() == 0, "\(signIn.lines)")
        return (server, base, directory, device)
    }

    /// The session's chain in the server's database: one token per rotation after the first,
    /// each rotated once, one live token, and the session never revoked.
    static func expectOneUnbrokenChain(_ directory: URL, rotations: Int) async throws {
        let database = try await SQLiteDatabase.open(path: directory.appendingPathComponent("gatehouse.sqlite").path, logger: Logger(label: "shared-session-test"))
        let tokens = try await database.query("SELECT COUNT(*) AS n, SUM(rotated_at IS NULL) AS live FROM refresh_tokens").first
        let sessions = try await database.query("SELECT COUNT(*) AS n, SUM(revoked_at IS NOT NULL) AS revoked FROM sessions").first
        await database.shutdown()
        let figures = [try tokens?.int("n"), try tokens?.int("live"), try sessions?.int("n"), try sessions?.int("revoked")]
        #expect(figures == [Int64(rotations + 1), 1, 1, 0], "tokens, live tokens, sessions, revoked sessions")
    }

    /// Waits for every loop: each ends signed in, having refreshed again and again (over many
    /// of its tokens' 0.3-second lives). Answers their refreshes, summed.
    static func finishSignedIn(_ loops: [Sharer]) async throws -> Int {
        var rotations = 0
        for loop in loops {
            #expect(try await loop.finish() == 0, "\(loop.lines.filter { $0 != "rotated" })")
            #expect(loop.lines.last == "signed_in")
            #expect(loop.rotations >= 5, "\(loop.rotations) refreshes")
            rotations += loop.rotations
        }
        return rotations
    }

    @Test(arguments: [2, 4])
    func processesSharingASessionPresentEachRefreshTokenOnce(_ count: Int) async throws {
        let (server, base, directory, device) = try await Self.signedInDevice()
        let loops = try (0..<count).map { _ in try Sharer(["loop", base, device, "6", "30"]) }
        let rotations = try await Self.finishSignedIn(loops)
        try await Self.expectOneUnbrokenChain(directory, rotations: rotations)
        _ = server
    }

    @Test func aProcessKilledHoldingTheLockHoldsTheOthersUpOnlyForItsLease() async throws {
        let (server, base, directory, device) = try await Self.signedInDevice()
        // Leases of 2 s; the first process dies the third time it takes the lock, holding it.
        let dying = try Sharer(["loop", base, device, "8", "2", "3"])
        let loops = try (0..<2).map { _ in try Sharer(["loop", base, device, "8", "2"]) }
        #expect(try await dying.finish() == SIGKILL)
        #expect(dying.lines.contains("dying"))
        let rotations = try await Self.finishSignedIn(loops) + dying.rotations
        try await Self.expectOneUnbrokenChain(directory, rotations: rotations)
        _ = server
    }
}
