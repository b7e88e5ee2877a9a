import Foundation
import GatehouseTestSupport

/// A PostgreSQL cluster of one test's own, so that the test can stop and start it without
/// disturbing the suite's shared server. The test script names the directory holding `initdb`
/// and `pg_ctl` in `GATEHOUSE_TEST_PG_BINDIR`.
final class PrivatePostgres: Sendable {
    static var binaries: String? {
        ProcessInfo.processInfo.environment["GATEHOUSE_TEST_PG_BINDIR"].flatMap { $0.isEmpty ? nil : $0 }
    }

    let directory: URL
    let port: Int
    private let bindir: String
    /// PostgreSQL refuses to run as root: as root, its tools run as the `postgres` user.
    private let runner: [String]

    var url: String { "postgres://postgres@127.0.0.1:\(port)/postgres?sslmode=disable" }

    /// Creates and starts a new cluster on a free loopback port (another one if that port was
    /// taken before the server bound it, up to five times).
    init() async throws {
        guard let bindir = Self.binaries else { throw ProcessError("GATEHOUSE_TEST_PG_BINDIR is not set") }
        self.bindir = bindir
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-pg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            runner = ["/usr/sbin/runuser", "-u", "postgres", "--"]
            try await Command.run("/bin/chown", ["postgres", directory.path])
        } else {
            runner = []
        }
        try await Self.tool("initdb", ["-D", directory.path + "/data", "-U", "postgres", "--auth=trust", "-E", "UTF8"], bindir, runner)
        port = try await Self.startOnFreePort(directory, bindir, runner)
    }

    private static func startOnFreePort(_ directory: URL, _ bindir: String, _ runner: [String]) async throws -> Int {
        for attempt in 1...5 {
            let port = try SMTPSink.freePort()
            do {
                try await start(port: port, directory, bindir, runner)
                return port
            } catch let error as ProcessError where attempt < 5 && error.description.contains("Address already in use") {
                continue
            }
        }
        throw ProcessError("no port could be bound")
    }

    /// Starts the server (again) on the same port and data; returns once it accepts connections.
    func start() async throws {
        try await Self.start(port: port, directory, bindir, runner)
    }

    /// `pg_ctl start`; when it fails, the error carries the end of the server's log (the reason
    /// is there, not in what `pg_ctl` prints).
    private static func start(port: Int, _ directory: URL, _ bindir: String, _ runner: [String]) async throws {
        let log = directory.appendingPathComponent("server.log")
        do {
            try await tool("pg_ctl", [
                "-D", directory.path + "/data", "-l", log.path, "-w", "-t", "60",
                "-o", "-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1", "start",
            ], bindir, runner)
        } catch let error as ProcessError {
            let tail = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").suffix(20).joined(separator: "\n")
            throw ProcessError("\(error.description)\nserver.log:\n\(tail)")
        }
    }

    /// Stops the server the way a crash would (`immediate`: no checkpoint, connections cut) or
    /// the way an operator would (`fast`).
    func stop(mode: String = "immediate") async throws {
        try await tool("pg_ctl", ["-D", directory.path + "/data", "-m", mode, "-w", "stop"])
    }

    /// Stops the server if it runs and removes the cluster.
    func remove() async {
        try? await stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func tool(_ name: String, _ arguments: [String]) async throws {
        try await Self.tool(name, arguments, bindir, runner)
    }

    private static func tool(_ name: String, _ arguments: [String], _ bindir: String, _ runner: [String]) async throws {
        let executable = runner.first ?? "\(bindir)/\(name)"
        let all = runner.isEmpty ? arguments : Array(runner.dropFirst()) + ["\(bindir)/\(name)"] + arguments
        try await Command.run(executable, all)
    }
}

/// Runs programs to completion on a thread of their own, not the test's executor. Foundation's
/// `Process` is not used here: it learns of a child's exit through a socket the child inherits,
/// and `pg_ctl start` leaves a daemon holding that socket, so the exit would never be seen. For
/// the same reason the programs started here inherit no descriptor but the standard three.
enum Command {
    /// Runs `executable arguments…`; returns its output, or throws with it when it fails.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) async throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-command-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: output) }
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try spawnAndWait(executable, arguments, output: output.path) })
            }
        }
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        guard status == 0 else {
            let name = URL(fileURLWithPath: executable).lastPathComponent
            throw ProcessError("\(name) \(arguments.joined(separator: " ")) failed (\(status)): \(text)")
        }
        return text
    }

    /// Spawns the program with its output in `output` and waits for it; its exit status, or
    /// 128 + the signal that ended it.
    private static func spawnAndWait(_ executable: String, _ arguments: [String], output: String) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of the test process's: Foundation learns that its own children exited
        // when their monitoring sockets close, and a daemon started here (PostgreSQL) holding
        // copies would hang every later `waitUntilExit`.
        try Spawned.closeFrom(3, &actions)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw ProcessError("cannot run \(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw ProcessError("waiting for \(executable) failed: errno \(errno)") }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}
