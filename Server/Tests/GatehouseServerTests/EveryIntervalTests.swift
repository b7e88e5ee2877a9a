import Foundation
@testable import GatehouseServer
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// The loop of the background services that work on a timer alone (`everyInterval`: the signing
/// keys' reload, the hash schemes' refresh, the memory trim): the work runs an interval after the
/// start and every interval after, and a graceful shutdown ends the loop at once, mid-sleep.
@Suite struct EveryIntervalTests {
    final class Ticking: Service {
        let interval: Duration
        let ticks = Atomic<Int>(0)
        init(interval: Duration) { self.interval = interval }
        var count: Int { ticks.load(ordering: .relaxed) }
        func run() async throws {
            await everyInterval(interval) { self.ticks.add(1, ordering: .relaxed) }
        }
    }

    @Test func itWorksEveryIntervalAndStopsAtOnceOnAGracefulShutdown() async throws {
        let ticking = Ticking(interval: .milliseconds(40))
        let group = ServiceGroup(configuration: .init(services: [ticking], logger: Logger(label: "every-interval")))
        let running = Task { try await group.run() }
        // Not at once: the first run comes an interval after the start.
        try await Task.sleep(for: .milliseconds(10))
        #expect(ticking.count == 0)
        let deadline = ContinuousClock.now + .seconds(30)
        while ticking.count < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(ticking.count >= 3)

        // With an hour's interval, a graceful shutdown ends the sleep: the group returns at once.
        let slow = ServiceGroup(
            configuration: .init(services: [Ticking(interval: .seconds(3_600))], logger: Logger(label: "every-interval")))
        let sleeping = Task { try await slow.run() }
        try await Task.sleep(for: .milliseconds(50))
        let asked = ContinuousClock.now
        await slow.triggerGracefulShutdown()
        try await sleeping.value
        #expect(ContinuousClock.now - asked < .seconds(10))
        await group.triggerGracefulShutdown()
        try await running.value
    }
}
