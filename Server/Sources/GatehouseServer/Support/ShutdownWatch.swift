import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// A graceful shutdown with a bound, and a name for what holds it. `gatehouse serve` runs the
/// application through ``ShutdownWatch/serve(_:)``: SIGTERM or SIGINT stops it gracefully (the
/// HTTP server first, then the services beside it, one after another); whatever still runs
/// `grace` later is cancelled. Each service the application runs beside the server is tracked
/// (`tracking(_:)`), and `report` after the signal the one the shutdown waits on is logged by
/// name (a warning), so a stop that hangs says where.
public final class ShutdownWatch: Sendable {
    /// How long a graceful shutdown may take before the rest is cancelled (10 s).
    public let grace: Duration
    /// When the service a shutdown waits on is named (5 s).
    public let report: Duration

    /// The tracked services that have not returned, by their place in the application's list,
    /// and how many there are in all.
    private let running = Mutex<(names: [Int: String], total: Int)>(([:], 0))
    private let logger: Mutex<Logger>
    /// The task that names what a shutdown waits on, once it began.
    private let reporter = Mutex<Task<Void, any Error>?>(nil)

    public init(logger: Logger, grace: Duration = .seconds(10), report: Duration = .seconds(5)) {
        self.logger = Mutex(logger)
        self.grace = grace
        self.report = report
    }

    /// The logger the report goes to (the application's, once it is built).
    func use(_ logger: Logger) { self.logger.withLock { $0 = logger } }

    /// `services`, each noted as running until its `run()` returns. The group stops them from the
    /// last to the first, after the HTTP server.
    func tracking(_ services: [any Service]) -> [any Service] {
        running.withLock { $0.total = services.count }
        return services.enumerated().map { place, service in
            Tracked(place: place, name: String(describing: type(of: service)), inner: service, watch: self)
        }
    }

    /// What a graceful shutdown waits on now: the HTTP server while every service still runs,
    /// else the last service in the list that has not returned (the group stops them in turn).
    var waitingOn: String {
        running.withLock { state in
            guard state.names.count < state.total || state.total == 0 else { return "the HTTP server (its requests in flight)" }
            return state.names.max { $0.key < $1.key }?.value ?? "nothing tracked"
        }
    }

    fileprivate func started(_ place: Int, _ name: String) { running.withLock { $0.names[place] = name } }

    fileprivate func ended(_ place: Int) { _ = running.withLock { $0.names.removeValue(forKey: place) } }

    /// Runs `app` until SIGTERM or SIGINT and its graceful shutdown, bounded by `grace`.
    public func serve(_ app: some ApplicationProtocol) async throws {
        try await run(app, onSignals: true)
    }

    /// Runs `app` in a service group, stopped gracefully on SIGTERM or SIGINT (`onSignals`) or
    /// through the group handed to `group`, and cancelled `grace` after the shutdown began.
    func run(_ app: some Service, onSignals: Bool, group handOut: (ServiceGroup) -> Void = { _ in }) async throws {
        var configuration = ServiceGroupConfiguration(
            services: [.init(service: app), .init(service: Signalled(watch: self))], gracefulShutdownSignals: onSignals ? [.sigterm, .sigint] : [],
            logger: logger.withLock { $0 })
        configuration.maximumGracefulShutdownDuration = grace
        let group = ServiceGroup(configuration: configuration)
        handOut(group)
        // A shutdown that ended before `report` names nothing.
        defer { reporter.withLock { $0?.cancel() } }
        try await group.run()
    }

    /// Listed after the application, so the group tells it of the shutdown before the
    /// application: it returns at once and leaves a task that names what still runs at `report`.
    private struct Signalled: Service {
        let watch: ShutdownWatch

        func run() async throws {
            try? await gracefulShutdown()
            let report = Task { [watch] in
                try await Task.sleep(for: watch.report)
                watch.logger.withLock { $0 }.warning(
                    "shutdown is still waiting",
                    metadata: ["on": .string(watch.waitingOn), "cancelled_after_seconds": "\(watch.grace.components.seconds)"])
            }
            watch.reporter.withLock { $0 = report }
        }
    }

    /// Named in the group's own logs and errors by its service's type name, not by every field of
    /// the wrapper and of the service inside it.
    private struct Tracked: Service, CustomStringConvertible {
        let place: Int
        let name: String
        let inner: any Service
        let watch: ShutdownWatch

        var description: String { name }

        func run() async throws {
            watch.started(place, name)
            defer { watch.ended(place) }
            try await inner.run()
        }
    }
}
