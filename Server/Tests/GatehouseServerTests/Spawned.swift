import Foundation

/// A child process started with `posix_spawn`, offering the part of `Foundation.Process` the
/// tests use. `Process.run()` in Swift 6.3.1 now and then crashes reading `/proc/self/fd` (an
/// over-read fixed upstream in swift-corelibs-foundation #5472); a suite that starts hundreds of
/// processes met it in about one run in seven. The child inherits only its standard descriptors.
final class Spawned: @unchecked Sendable {
    // SAFETY: configured before `run()` on one thread; afterwards only `lock`-guarded state changes.
    var executableURL: URL?
    var arguments: [String] = []
    var environment: [String: String]?
    var currentDirectoryURL: URL?
    /// A `Pipe` or a `FileHandle` (`FileHandle.nullDevice` is /dev/null); nil inherits nothing
    /// (the child gets /dev/null).
    var standardInput: Any?
    var standardOutput: Any?
    var standardError: Any?

    private(set) var processIdentifier: pid_t = 0
    private let lock = NSLock()
    private var rawStatus: Int32?

    func run() throws {
        guard let executable = executableURL?.path else { throw ProcessError("no executable") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        try Self.connect(standardInput, to: 0, reading: true, &actions)
        try Self.connect(standardOutput, to: 1, reading: false, &actions)
        try Self.connect(standardError, to: 2, reading: false, &actions)
        if let directory = currentDirectoryURL?.path {
            try Self.call("posix_spawn_file_actions_addchdir_np", &actions, directory)
        }
        try Self.closeFrom(3, &actions)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned: Int32
        if let environment {
            let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { envp.forEach { free($0) } }
            spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        } else {
            spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        }
        guard spawned == 0 else { throw ProcessError("cannot run \(executable): \(String(cString: strerror(spawned)))") }
        processIdentifier = pid
        // The parent keeps only its own ends of the pipes, so readers see end-of-file at exit.
        (standardInput as? Pipe)?.fileHandleForReading.closeFile()
        (standardOutput as? Pipe)?.fileHandleForWriting.closeFile()
        if (standardError as? Pipe) !== (standardOutput as? Pipe) { (standardError as? Pipe)?.fileHandleForWriting.closeFile() }
    }

    var isRunning: Bool {
        lock.withLock {
            guard rawStatus == nil, processIdentifier > 0 else { return false }
            var status: Int32 = 0
            switch waitpid(processIdentifier, &status, WNOHANG) {
            case 0: return true
            case processIdentifier:
                rawStatus = status
                return false
            default:
                rawStatus = -1
                return false
            }
        }
    }

    /// The exit code, or the signal that ended it (as `Process` reports it).
    var terminationStatus: Int32 {
        lock.withLock {
            guard let status = rawStatus else { return 0 }
            let signal = status & 0x7f
            return signal == 0 ? (status >> 8) & 0xff : signal
        }
    }

    /// Blocks until the child has exited (polling; for the few synchronous callers). A wait past
    /// 60 seconds is said once on standard error (`HangWatch`), with the program waited for.
    func waitUntilExit() {
        var polls = 0
        while isRunning {
            usleep(10_000)
            polls += 1
            if polls == 6_000 {
                let script = arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? ""
                let program = "\(executableURL?.lastPathComponent ?? "a child") \(script)"
                HangWatch.say(HangWatch.label(program) + " has not exited after 60 seconds")
            }
        }
    }

    private static func connect(_ stream: Any?, to descriptor: Int32, reading: Bool, _ actions: inout posix_spawn_file_actions_t) throws {
        if let pipe = stream as? Pipe {
            let end = reading ? pipe.fileHandleForReading : pipe.fileHandleForWriting
            posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, descriptor)
        } else if let handle = stream as? FileHandle, handle !== FileHandle.nullDevice {
            posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, descriptor)
        } else {
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", reading ? O_RDONLY : O_WRONLY, 0)
        }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), not imported by Swift's Glibc.
    static func closeFrom(_ descriptor: Int32, _ actions: inout posix_spawn_file_actions_t) throws {
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            throw ProcessError("posix_spawn_file_actions_addclosefrom_np is missing (glibc 2.34 or newer is needed)")
        }
        guard unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, descriptor) == 0 else {
            throw ProcessError("posix_spawn_file_actions_addclosefrom_np failed")
        }
    }

    /// glibc's `posix_spawn_file_actions_addchdir_np` (2.29+).
    private static func call(_ name: String, _ actions: inout posix_spawn_file_actions_t, _ path: String) throws {
        typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
        guard let symbol = dlsym(nil, name) else { throw ProcessError("\(name) is missing (glibc 2.29 or newer is needed)") }
        let result = path.withCString { unsafeBitCast(symbol, to: AddChdir.self)(&actions, $0) }
        guard result == 0 else { throw ProcessError("\(name) failed") }
    }
}

/// Work that blocks its thread (waiting for a child, reading a pipe until it ends), run on a
/// thread of its own. The test process's Swift threads are as many as its cores (two in CI), so
/// a child waited for on one of them (a headless Chromium session, the churn loader, a validator)
/// holds up every test's awaits, the in-process servers' and their stores' among them. Likely,
/// not shown: how a PostgreSQL transaction of a parallel test ran past its 30 seconds (stop 84).
enum OwnThread {
    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }
}

extension Spawned {
    /// As `helper`, keeping the helper's output to read after its first line.
    static func helperKeepingOutput(python: String, _ arguments: [String]) async throws -> (process: Spawned, input: Pipe, output: Pipe, firstLine: String) {
        let process = Spawned()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let reading = output.fileHandleForReading
        let first = try await OwnThread.run { reading.availableData }
        return (process, input, output, String(decoding: first, as: UTF8.self))
    }

    /// Starts `python script arguments…`, a helper that runs until its standard input closes
    /// (close `input` to stop it), and returns it with the first thing it printed (how it says
    /// it is ready, e.g. its port).
    static func helper(python: String, _ arguments: [String]) async throws -> (process: Spawned, input: Pipe, firstLine: String) {
        let started = try await helperKeepingOutput(python: python, arguments)
        return (started.process, started.input, started.firstLine)
    }
}
