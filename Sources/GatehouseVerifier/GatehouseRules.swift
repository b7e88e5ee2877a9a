#if Verifier
import Foundation
import GatehouseCore

/// The app's entitlement rules and copy, from Gatehouse's `GET /v1/config` (the same document
/// the SDK reads), refreshed every `maxAge`; a failed refresh keeps the rules already known.
/// Or fixed rules given up front (`init(engine:)`), e.g. read from the preset file.
public actor GatehouseRules {
    private let configURL: URL?
    private let fetch: GatehouseFetcher?
    private let clock: any WallClock
    private let maxAge: TimeInterval
    private var engine: EntitlementEngine?
    private var fetchedAt: Date?
    /// After a failed fetch, none before this.
    private var retryAt: Date?
    private var inFlight: Task<Void, Never>?

    /// Thrown by ``GatehouseRules/current()`` while no rules have been read: `GET /v1/config`
    /// failed or had no entitlements. ``GatehouseMiddleware`` answers it with 503 `service_unavailable`.
    public struct Unavailable: Error, CustomStringConvertible {
        /// A short sentence for logs.
        public var description: String { "the app's entitlement rules could not be read from Gatehouse" }
    }

    /// Makes rules read from Gatehouse's config document on first use and cached.
    /// - Parameters:
    ///   - configURL: Gatehouse's `GET /v1/config`.
    ///   - fetch: How the document is read.
    ///   - maxAge: Seconds the rules are used before they are read again.
    ///   - clock: The source of the current time (a manual clock in tests).
    public init(configURL: URL, fetch: GatehouseFetcher, maxAge: TimeInterval = 300, clock: any WallClock = SystemClock()) {
        self.configURL = configURL
        self.fetch = fetch
        self.maxAge = maxAge
        self.clock = clock
    }

    /// Makes fixed rules that are never fetched, e.g. an engine built from the preset file.
    public init(engine: EntitlementEngine) {
        configURL = nil
        fetch = nil
        maxAge = .infinity
        clock = SystemClock()
        self.engine = engine
        fetchedAt = Date.distantFuture
    }

    /// The rules to decide with: the cached ones, read again from `GET /v1/config` once `maxAge`
    /// has passed (one fetch shared by all callers; after a failure, none for 10 s).
    /// - Throws: ``GatehouseRules/Unavailable`` while no rules have ever been read.
    public func current() async throws -> EntitlementEngine {
        let now = clock.now
        let stale = fetchedAt.map { now.timeIntervalSince($0) >= maxAge } ?? true
        if stale, retryAt.map({ now >= $0 }) ?? true || inFlight != nil { await refresh() }
        guard let engine else { throw Unavailable() }
        return engine
    }

    private func refresh() async {
        if let inFlight {
            await inFlight.value
            return
        }
        let task = Task { await self.load() }
        inFlight = task
        await task.value
        inFlight = nil
    }

    private func load() async {
        guard let configURL, let fetch, let data = try? await fetch.get(configURL),
            let configuration = try? JSONDecoder().decode(PublicConfiguration.self, from: data), let settings = configuration.entitlements
        else {
            // Keep what is known; try again after a short pause.
            retryAt = clock.now.addingTimeInterval(10)
            return
        }
        engine = EntitlementEngine(settings: settings, copy: configuration.copy)
        fetchedAt = clock.now
        retryAt = nil
    }
}
#endif
