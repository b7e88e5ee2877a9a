import Foundation
@testable import GatehouseServer
import GatehouseTestSupport
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// A graceful shutdown is bounded, and one that hangs says what it waits on (`ShutdownWatch`):
/// the services beside the server stop from the last to the first, so the one named is the
/// last still running; the rest is cancelled at the grace.
@Suite struct ShutdownWatchTests {
    /// Stops when the shutdown reaches it.
    struct Prompt: Service {
        func run() async throws { try? await gracefulShutdown() }
    }

    /// Ignores the graceful shutdown; only cancellation ends it.
    struct Stubborn: Service {
        func run() async throws { try await Task.sleep(for: .seconds(3_600)) }
    }

    /// Runs `services` (tracked) under a watch, begins its shutdown once they run, and answers
    /// what was logged and how long the shutdown took.
    static func shutDown(_ services: [any Service], grace: Duration, report: Duration) async throws -> (lines: [String], took: Duration) {
        let log = KeptLog(level: .warning) { event in "\(event.message)" + (event.metadata?["on"].map { " on \($0)" } ?? "") }
        let watch = ShutdownWatch(logger: log.logger(label: "gatehouse.test.shutdown"), grace: grace, report: report)
        let app = ServiceGroup(configuration: .init(services: watch.tracking(services), logger: Logger(label: "gatehouse.test.app")))
        let group = Mutex<ServiceGroup?>(nil)
        let running = Task { try await watch.run(app, onSignals: false) { made in group.withLock { $0 = made } } }
        // Every tracked service runs (no service has returned: the shutdown would wait on the server).
        for _ in 0..<1_000 where watch.waitingOn != "the HTTP server (its requests in flight)" { try await Task.sleep(for: .milliseconds(10)) }
        try #require(watch.waitingOn == "the HTTP server (its requests in flight)", "the services did not all start")
        let began = ContinuousClock.now
        try await #require(group.withLock { $0 }).triggerGracefulShutdown()
        _ = await running.result
        let took = ContinuousClock.now - began
        // Past the report's time: a shutdown that ended before it logs nothing later either.
        try await Task.sleep(for: report * 2)
        return (log.lines, took)
    }

    @Test func aServiceThatIgnoresTheShutdownIsNamedThenCancelledAtTheGrace() async throws {
        let (lines, took) = try await Self.shutDown([Prompt(), Stubborn(), Prompt()], grace: .seconds(2), report: .milliseconds(500))
        #expect(lines == ["shutdown is still waiting on Stubborn"], "\(lines)")
        // Cancelled at the grace, not after the hour it sleeps for.
        #expect(took >= .seconds(2) && took < .seconds(60), "\(took)")
    }

    /// (The report comes late enough here that a slow machine still stops before it.)
    @Test func aPromptShutdownNamesNothing() async throws {
        let (lines, took) = try await Self.shutDown([Prompt(), Prompt()], grace: .seconds(6), report: .seconds(3))
        #expect(lines.isEmpty, "\(lines)")
        #expect(took < .seconds(6), "\(took)")
    }
}
