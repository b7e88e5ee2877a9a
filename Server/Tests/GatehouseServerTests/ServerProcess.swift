import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The real `gatehouse` executable, run as a child process in its own directory.
final class ServerProcess: Sendable {
    let process: Spawned
    let directory: URL
    private let output = TextBuffer()
    private let errors = TextBuffer()

    /// The executable built beside the test bundle.
    static var executable: URL {
        get throws { try built("gatehouse") }
    }

    /// The package's executable `name`, built beside the test bundle.
    static func built(_ name: String) throws -> URL {
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent(name),
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent(name),
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name),
        ]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw ProcessError("the \(name) executable is not built (swift build --build-tests builds it)")
        }
        return found
    }

    /// Starts `gatehouse arguments…` in `directory` with only `environment` set (plus PATH),
    /// through `launcher` when given (a program that execs its arguments, such as `/usr/bin/env`).
    init(_ arguments: [String] = ["serve"], environment: [String: String] = [:], directory: URL? = nil, launcher: String? = nil) throws {
        self.directory = try directory ?? Self.makeDirectory()
        process = Spawned()
        if let launcher {
            process.executableURL = URL(fileURLWithPath: launcher)
            process.arguments = [try Self.executable.path] + arguments
        } else {
            process.executableURL = try Self.executable
            process.arguments = arguments
        }
        process.currentDirectoryURL = self.directory
        var env = environment
        env["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        output.follow(out.fileHandleForReading)
        errors.follow(err.fileHandleForReading)
    }

    /// The settings every test server shares: any free port, `database`, the test admin key, a
    /// cheap hash (the tests are about other things than Argon2) and a PostgreSQL pool that opens
    /// on demand (as `TestApp`'s: the suite runs many servers at once), with `extra` on top.
    static func environment(database: String, _ extra: [String: String] = [:]) -> [String: String] {
        [
            "GATEHOUSE_PORT": "0", "GATEHOUSE_DATABASE_URL": database, "GATEHOUSE_ADMIN_KEY": TestApp.adminKey,
            "GATEHOUSE_ARGON2_MEMORY_KIB": "64", "GATEHOUSE_ARGON2_ITERATIONS": "1", "GATEHOUSE_ARGON2_PARALLELISM": "1",
            "GATEHOUSE_DATABASE_POOL_MINIMUM": "0",
        ].merging(extra) { $1 }
    }

    /// Starts `gatehouse serve` on a port chosen first, for settings that must name it
    /// (`GATEHOUSE_PUBLIC_URL`): another test's listener may take that port between the choice
    /// and the server's bind ("Address already in use"), so a start that fails that way is tried
    /// again on a new port, up to five times.
    static func onChosenPort(_ environment: (Int) -> [String: String]) async throws -> (server: ServerProcess, port: Int, base: URL) {
        for attempt in 1...5 {
            let port = try SMTPSink.freePort()
            let server = try ServerProcess(environment: environment(port))
            do {
                return (server, port, try await server.baseURL())
            } catch where attempt < 5 && server.standardError.contains("Address already in use") {
                continue
            }
        }
        throw ProcessError("no port could be bound")
    }

    static func makeDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-proc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    var standardOutput: String { output.text }
    var standardError: String { errors.text }

    /// Waits (polling, up to about a minute) for the server to say where it listens.
    func baseURL() async throws -> URL {
        for _ in 0..<1_200 {
            let text = standardOutput
            if let range = text.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression),
                text.contains("Gatehouse is running at")
            {
                return URL(string: String(text[range]))!
            }
            if !process.isRunning {
                throw ProcessError("gatehouse exited with \(process.terminationStatus): \(standardError)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessError("gatehouse did not start: \(standardError)")
    }

    /// Waits (up to about a minute) for the process to end and returns its exit status.
    func exitStatus() async throws -> Int32 {
        for _ in 0..<1_200 where process.isRunning {
            try await Task.sleep(for: .milliseconds(50))
        }
        guard !process.isRunning else { throw ProcessError("gatehouse did not exit") }
        // Let the pipes drain.
        try await Task.sleep(for: .milliseconds(100))
        return process.terminationStatus
    }

    func signal(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// Text collected from a pipe, read from other threads.
final class TextBuffer: Sendable {
    private let storage = Mutex("")
    func append(_ data: Data) { storage.withLock { $0 += String(decoding: data, as: UTF8.self) } }

    /// Appends what `handle` yields as it comes, on a thread of its own, until its end. Not a
    /// `readabilityHandler`: its dispatch source can outlive the pipe it watches, and the test
    /// process then crashes in libdispatch's event loop (it did after a test killed its server).
    func follow(_ handle: FileHandle) {
        // `read(2)` answers what the pipe holds now (`FileHandle.read(upToCount:)` waits to fill
        // its count); 0 is the end, and an interrupted read is tried again.
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                if count > 0 {
                    self.append(Data(buffer[0..<count]))
                } else if count == 0 || errno != EINTR {
                    break
                }
            }
        }
    }
    var text: String { storage.withLock { $0 } }
}

struct ProcessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A small HTTP client for talking to a server process.
enum HTTP {
    struct Reply: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
        func json<T: Decodable>(_ type: T.Type = T.self) throws -> T { try JSONDecoder().decode(T.self, from: body) }
    }

    static func request(_ url: URL, method: String = "GET", headers: [String: String] = [:], body: Data? = nil) async throws -> Reply {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            fields[String(describing: name).lowercased()] = String(describing: value)
        }
        return Reply(status: http.statusCode, headers: fields, body: data)
    }
}
