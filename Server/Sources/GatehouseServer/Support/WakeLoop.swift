import ServiceLifecycle

/// A background service that sweeps the database on a `WakeLoop` (hourly clean-ups): `start()`
/// once the database is ready, then `sweepOnce()` on every turn of the loop until shutdown.
protocol PeriodicSweep: Service, Sendable {
    var loop: WakeLoop { get }
    func sweepOnce() async
}

extension PeriodicSweep {
    func start() { loop.start() }

    func run() async throws {
        await loop.run { await self.sweepOnce() }
    }
}

/// The loop of a background service that works on a timer alone: `body` every `interval`, the
/// first an interval after the start, until graceful shutdown, which ends a sleep at once. The
/// signing keys' reload, the password hash schemes' refresh and the memory trim run on it; work
/// that is also woken, or waits for the database, runs on a `WakeLoop`.
func everyInterval(_ interval: Duration, _ body: @escaping @Sendable () async -> Void) async {
    try? await cancelWhenGracefulShutdown {
        while true {
            try await Task.sleep(for: interval)
            await body()
        }
    }
}

/// The heart of a background worker: waits until it is started (the database is migrated),
/// then runs `body` at once, whenever woken, and every `pollInterval`, until graceful shutdown.
final class WakeLoop: Sendable {
    let pollInterval: Duration
    private let signal: AsyncStream<Void>
    private let signalContinuation: AsyncStream<Void>.Continuation
    private let ready: AsyncStream<Void>
    private let readyContinuation: AsyncStream<Void>.Continuation

    init(pollInterval: Duration) {
        self.pollInterval = pollInterval
        (signal, signalContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        (ready, readyContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func wake() { signalContinuation.yield() }

    /// Lets the loop begin (called once the database is ready).
    func start() { readyContinuation.yield() }

    func run(_ body: @escaping @Sendable () async -> Void) async {
        await cancelWhenGracefulShutdown {
            for await _ in self.ready { break }
            await withTaskGroup(of: Void.self) { group in
                // The poll is a wake-up like any other. One iterator reads the stream for the
                // loop's whole life: cancelling an AsyncStream's iteration ends the stream.
                let interval = self.pollInterval
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        self.wake()
                    }
                }
                await body()
                for await _ in self.signal {
                    if Task.isCancelled { break }
                    await body()
                }
                group.cancelAll()
            }
        }
    }
}
