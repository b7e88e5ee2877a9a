import Foundation
import GatehouseServer
import Testing

/// Issue 47: the threads that hash passwords lower their own priority (`nice` 10 on Linux), so a
/// burst of logins takes the cores only when nothing else waits for them (`/v1/me`'s p99 beside
/// eight logins, BENCHMARKS.md). Nothing else in the process changes a thread's niceness.
@Suite struct HashingPriorityTests {
    /// The niceness of each of this process's threads (`/proc/self/task/*/stat`, field 19).
    static func threadNiceness() throws -> [Int] {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        return tasks.compactMap { task in
            guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 16 ? Int(fields[16]) : nil
        }
    }

    /// The niceness the process was started at (the main thread's: `/proc/self/stat`, field 19).
    /// A runner may start the suite at a lower priority (`nice 15 make test`): the expectations
    /// are relative to it.
    static func startingNiceness() throws -> Int {
        let stat = try String(contentsOfFile: "/proc/self/stat", encoding: .utf8)
        guard let close = stat.lastIndex(of: ")") else { throw ProcessError("unreadable /proc/self/stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 16, let value = Int(fields[16]) else { throw ProcessError("no niceness in /proc/self/stat") }
        return value
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/task"), "Linux's /proc"))
    func aHashingThreadRunsAtNiceTen() async throws {
        let base = try Self.startingNiceness()
        let hasher = try PasswordHasher(parameters: Argon2Parameters(memoryKiB: 64, iterations: 1, parallelism: 1), threads: 1)
        _ = try await hasher.hash("correct horse battery")
        let niceness = try Self.threadNiceness()
        // Lowered to 10, or kept where the process already runs lower.
        #expect(niceness.contains(max(base, 10)), "started at \(base): \(niceness)")
        if base < 10 { #expect(niceness.contains(base), "the other threads keep the process's priority: \(niceness)") }
        await hasher.shutdown()
    }
}
