// One process of an app and its extensions sharing a session through the SDK (issue 64), run as
// several OS processes at once by `SharedSessionTests`. Every process of a run uses the same
// directory: the "Keychain" (a 0600 file) with its `FileSessionLock`, and the app group's storage.
//
//     session-sharer sign-in <server> <directory>
//     session-sharer loop <server> <directory> <seconds> <lease> [<die-after>]
//
// `sign-in` signs in anonymously. `loop` calls `/v1/me` for `seconds`, its access token counted
// as spent 0.3 s after it was issued, so each call after that refreshes; it prints `rotated` for
// every refresh the server answered, and at the end `signed_in` or the state it ended in. With
// `die-after`, the process kills itself (SIGKILL) the moment it takes the lock for that time, so
// it dies holding it.
import Foundation
import GatehouseClient

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Prints a line at once: the test reads them while the process runs, and a killed process
/// flushes nothing.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The lock, killing its process once it has taken it `dieAfter` times.
struct DyingLock: SessionLock {
    let inner: FileSessionLock
    let dieAfter: Int?
    let taken = Counter()

    var lease: TimeInterval { inner.lease }

    func tryAcquire(owner: String) throws -> Bool {
        let acquired = try inner.tryAcquire(owner: owner)
        if acquired, let dieAfter, taken.increment() == dieAfter {
            say("dying")
            kill(getpid(), SIGKILL)
        }
        return acquired
    }

    func release(owner: String) throws { try inner.release(owner: owner) }
    func exclusively<T>(_ body: () throws -> T) throws -> T { try inner.exclusively(body) }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func increment() -> Int { lock.withLock { value += 1; return value } }
}

/// Prints `rotated` for every refresh the server answered with a new session.
struct ReportingTransport: HTTPTransport {
    let inner = URLSessionTransport()
    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let response = try await inner.send(request)
        if request.url.path == "/v1/auth/refresh", response.status == 200 { say("rotated") }
        return response
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 4, let server = URL(string: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: session-sharer sign-in|loop <server> <directory> …\n".utf8))
    exit(2)
}
let directory = URL(fileURLWithPath: arguments[3])
let seconds = arguments.count > 4 ? Double(arguments[4]) ?? 5 : 5
let lease = arguments.count > 5 ? Double(arguments[5]) ?? 30 : 30
let dieAfter = arguments.count > 6 ? Int(arguments[6]) : nil

var configuration = try ClientConfiguration(baseURL: server)
// The server's access tokens last 60 s: each is refreshed once it is 0.3 s old.
configuration.refreshAhead = 59.7
let keychain = directory.appendingPathComponent("keychain")
let lock = DyingLock(inner: FileSessionLock(url: keychain.appendingPathComponent("session.lock"), lease: lease), dieAfter: dieAfter)
let client = Gatehouse(
    configuration: configuration,
    tokenStore: FileTokenStore(url: keychain.appendingPathComponent("session.json"), lock: lock),
    storage: DirectoryStorage(directory: directory.appendingPathComponent("group")),
    transport: ReportingTransport())

switch arguments[1] {
case "sign-in":
    _ = try await client.signInAnonymously()
    say("signed_in")
case "loop":
    var failures: [String] = []
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        do {
            _ = try await client.refreshUser()
        } catch {
            failures.append("\(error.code.rawValue): \(error.message)")
        }
        try await Task.sleep(for: .milliseconds(Int.random(in: 0...40)))
    }
    let state = await client.state
    for failure in failures { say("failed \(failure)") }
    if case .signedIn = state, failures.isEmpty {
        say("signed_in")
    } else {
        say("ended \(state)")
        exit(1)
    }
default:
    exit(2)
}
