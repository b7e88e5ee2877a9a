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

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/task"), "Linux's /proc"))
    func aHashingThreadRunsAtNiceTen() async throws {
        let hasher = try PasswordHasher(parameters: Argon2Parameters(memoryKiB: 64, iterations: 1, parallelism: 1), threads: 1)
        _ = try await hasher.hash("correct horse battery")
        #expect(try Self.threadNiceness().contains(10))
        #expect(try Self.threadNiceness().contains(0), "the other threads keep the default priority")
        await hasher.shutdown()
    }
}
