import Foundation
import Synchronization
import Testing

/// Names what a test that hangs waits on. A wait the tests cannot bound themselves (a request to
/// an app in the test process, which has no time-out; an app's graceful shutdown; a call to a
/// stand-in) is watched: one that has not ended after `after` is printed to standard error once,
/// with the test it belongs to, and again when it ends. The test script prints these lines again
/// when its run does not finish (CI of stop 106: a test hung for 20 minutes and nothing said
/// where).
final class HangWatch: Sendable {
    static let prefix = "hang report:"

    private let label: String
    private let started = ContinuousClock.now
    private let reported: Flag
    private let timer: Task<Void, Never>

    /// Starts watching `what` (`describe` is asked when it is reported, for what it waits on by
    /// then).
    init(_ what: String, after: Duration = .seconds(90), describe: @escaping @Sendable () -> String = { "" }) {
        let label = Self.label(what)
        let reported = Flag()
        (self.label, self.reported) = (label, reported)
        timer = Task {
            guard (try? await Task.sleep(for: after)) != nil else { return }
            let detail = describe()
            reported.set()
            Self.say("\(label) has not ended after \(after)\(detail.isEmpty ? "" : " (\(detail))")")
        }
    }

    /// Stops watching; says so if it had been reported.
    func end() {
        timer.cancel()
        if reported.isSet { Self.say("\(label) ended after \(ContinuousClock.now - started)") }
    }

    /// Runs `body` watched as `what`.
    static func watching<T>(
        _ what: @autoclosure () -> String, after: Duration = .seconds(90), _ body: () async throws -> T
    ) async throws -> T {
        let watch = HangWatch(what(), after: after)
        defer { watch.end() }
        return try await body()
    }

    /// `what`, named with the test it belongs to.
    static func label(_ what: String) -> String {
        "\(Test.current?.name ?? "outside a test"): \(what)"
    }

    /// One line on standard error, which the test script keeps.
    static func say(_ line: String) {
        FileHandle.standardError.write(Data("\(prefix) \(line)\n".utf8))
    }

    private final class Flag: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }
}
