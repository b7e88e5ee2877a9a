import Foundation
import GatehouseCore
import GatehouseWire

/// The last snapshot the server gave, and when: the device decides gates from it offline, and
/// keeps CH08's pro_grace window from `verifiedAt`.
struct CachedEntitlements: Codable, Sendable, Equatable {
    var payload: EntitlementsPayload
    var userID: String?
    var verifiedAt: Date
}

extension Gatehouse {
    // MARK: Configuration

    /// `GET /v1/config`, cached on the device so the next launch has it with no network
    /// (decision 25). A cached copy is revalidated: the request names its `ETag` in
    /// `If-None-Match`, and the server's 304 keeps it without sending the document again. Falls
    /// back to the cached copy when the server cannot be reached.
    @discardableResult
    public func loadConfiguration() async throws(GatehouseClientError) -> PublicConfiguration {
        do throws(GatehouseClientError) {
            var headers: [String: String] = [:]
            let etag = storage.data(forKey: Self.configurationTagKey).map { String(decoding: $0, as: UTF8.self) }
            if configurationCache != nil, let etag { headers["If-None-Match"] = etag }
            let response = try await exchange(Endpoints.configuration, auth: .none, headers: headers)
            if response.status == 304, let configurationCache {
                isOffline = false
                return configurationCache
            }
            guard response.status != 304, let configuration = try? JSONDecoder().decode(PublicConfiguration.self, from: response.body) else {
                throw Self.invalidResponse
            }
            configurationCache = configuration
            storage.set(response.body, forKey: "config")
            storage.set(response.headers["etag"].map { Data($0.utf8) }, forKey: Self.configurationTagKey)
            isOffline = false
            return configuration
        } catch {
            if error.isNetworkFailure { isOffline = true }
            if error.isNetworkFailure, let configurationCache { return configurationCache }
            throw error
        }
    }

    /// Where the cached configuration's `ETag` is kept, beside the document (`config`).
    static let configurationTagKey = "config.etag"

    /// The configuration last loaded (this launch or an earlier one).
    public var configurationSnapshot: PublicConfiguration? { configurationCache }

    /// The preset's copy as far as it is known: the server's (loaded now or cached from an
    /// earlier launch) over the app's `bundledCopy`.
    public var copy: [String: String] {
        configuration.bundledCopy.merging(configurationCache?.copy ?? [:]) { _, server in server }
    }

    /// A copy string of the preset, or `fallback` (neutral English) when neither the server's
    /// copy nor the app's bundled copy has it.
    public func text(_ key: String, _ fallback: String) -> String {
        configurationCache?.copy[key] ?? configuration.bundledCopy[key] ?? fallback
    }

    // MARK: Snapshot

    func storeEntitlements(_ payload: EntitlementsPayload) {
        var comparable = payload
        comparable.evaluatedAt = entitlementCache?.payload.evaluatedAt ?? payload.evaluatedAt
        let changed = entitlementCache?.payload != comparable
        entitlementCache = CachedEntitlements(payload: payload, userID: sessionUser?.id, verifiedAt: clock.now())
        storage.set(encoding: entitlementCache, forKey: "entitlements")
        if changed { emit(.entitlementsChanged(payload)) }
    }

    /// `GET /v1/entitlements` (a guest's without a session). When the server cannot be reached,
    /// the cached snapshot as `currentEntitlements` shows it.
    @discardableResult
    public func entitlements() async throws(GatehouseClientError) -> EntitlementsPayload {
        do throws(GatehouseClientError) {
            return try await fetchEntitlements()
        } catch {
            if error.isNetworkFailure, let current = currentEntitlements { return current }
            throw error
        }
    }

    /// `GET /v1/entitlements`, kept and reported; a network failure is thrown, not answered from
    /// the cache.
    func fetchEntitlements() async throws(GatehouseClientError) -> EntitlementsPayload {
        let payload = try await call(Endpoints.entitlements, auth: .optional)
        isOffline = false
        storeEntitlements(payload)
        trackSnapshotLoaded(payload)
        return payload
    }

    /// The snapshot the app should show now, from the cache, offline too. While the server
    /// cannot be reached, a Pro snapshot verified less than `pro_grace_hours` ago (72) shows as
    /// `pro_grace` (CH08 §2 step 4, with the preset's banner); past that window, as Free.
    public var currentEntitlements: EntitlementsPayload? {
        guard let cache = entitlementCache, cache.userID == sessionUser?.id else { return nil }
        guard isOffline, cache.payload.planState.isPro else { return cache.payload }
        let hours = configurationCache?.entitlements?.proGraceHours ?? 72
        var shown = cache.payload
        if clock.now().timeIntervalSince(cache.verifiedAt) < TimeInterval(hours) * 3600 {
            shown.planState = .proGrace
        } else if let engine {
            // Unverified too long: Free until the server says otherwise.
            let free = engine.snapshot(input(plan: .free, from: cache.payload), at: clock.now())
            shown.planState = free.planState
            shown.capabilities = free.capabilities
            shown.limits = free.limits
            shown.credits = free.credits
            shown.readOnly = free.readOnly
            shown.tier = free.tier
        } else {
            shown.planState = .free
        }
        return shown
    }

    /// The banner to show above the app, from the snapshot and the preset's copy: pro_grace's
    /// "Can't verify subscription right now…", or a trial's "N days left in trial" from its
    /// `banner_from_day` (Hannah: day 5).
    public var banner: String? {
        guard let snapshot = currentEntitlements else { return nil }
        if snapshot.planState == .proGrace {
            return text("banner.pro_grace", "We can't confirm your subscription right now. We'll check again shortly.")
        }
        if snapshot.planState == .trial, let trial = snapshot.trial, let settings = configurationCache?.entitlements {
            let day = settings.trial.days - trial.daysLeft
            if day >= settings.trial.bannerFromDay {
                return PluralCopy.text(
                    copy, "trial.days_left", count: trial.daysLeft, placeholder: "days",
                    fallback: PluralCopy.Forms(zero: "Your trial ends today", one: "1 day of trial left", other: "{days} days of trial left"))
            }
        }
        return nil
    }

    // MARK: Gates

    var engine: EntitlementEngine? {
        guard let configuration = configurationCache, let settings = configuration.entitlements else { return nil }
        return EntitlementEngine(settings: settings, copy: configuration.copy)
    }

    func input(plan: PlanState, from snapshot: EntitlementsPayload?) -> EntitlementInput {
        guard plan != .guest, let user = sessionUser else { return .guest }
        var spent: [String: Int] = [:]
        for (name, balance) in snapshot?.credits ?? [:] { spent[name] = max(0, balance.granted - balance.remaining) }
        return EntitlementInput(
            userID: UserID(user.id) ?? .random(), emailVerified: user.emailVerified, planOverride: plan.rawValue, creditsSpent: spent, assurance: assurance)
    }

    /// The gate decision for `action` now, on the device, with the same engine and rules as the
    /// server. The preset's rules come from `/v1/config`: the first call loads it when no launch
    /// has yet (then it is cached, offline too). Throws `configuration_unavailable` when it has
    /// never been loaded and cannot be now, and `unknown_action` for an action the preset does
    /// not know (as `/v1/entitlements/check` does). A refusal with a `surface` is reported as
    /// `gate_shown` in the background.
    public func decide(_ action: String, context: [String: Int] = [:], surface: GateSurface? = nil)
        async throws(GatehouseClientError) -> GateDecision
    {
        if configurationCache == nil {
            do throws(GatehouseClientError) {
                try await loadConfiguration()
            } catch {
                throw GatehouseClientError(
                    code: .configurationUnavailable, message: "This isn't available offline yet. Check your connection and try again.",
                    status: error.status)
            }
        }
        guard let engine else { throw Self.unknownAction(action) }
        let snapshot = currentEntitlements
        let plan = planStateNow
        guard let decision = engine.decide(action, context: context, input: input(plan: plan, from: snapshot), at: clock.now()) else {
            throw Self.unknownAction(action)
        }
        if !decision.allowed, let reason = decision.reasonCode {
            var properties: [String: JSONValue] = ["reasonCode": .string(reason), "planState": .string(plan.rawValue)]
            if let surface { properties["surface"] = .string(surface.rawValue) }
            track("gate_shown", properties)
        }
        return decision
    }

    /// The plan the device goes by now: guest without a session, else the current snapshot's.
    var planStateNow: PlanState { sessionUser == nil ? .guest : currentEntitlements?.planState ?? .free }

    /// CH08 §9 `entitlement_snapshot_loaded`: a snapshot the server gave (`GET /v1/entitlements`),
    /// with the credits left (all kinds together) and the caps as `name=value` pairs (`none` for
    /// no cap), in name order.
    func trackSnapshotLoaded(_ payload: EntitlementsPayload) {
        var properties: [String: JSONValue] = ["planState": .string(payload.planState.rawValue)]
        if !payload.credits.isEmpty {
            properties["creditsRemaining"] = .number(Double(payload.credits.values.reduce(0) { $0 + $1.remaining }))
        }
        if !payload.limits.isEmpty {
            let caps = payload.limits.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.map(String.init) ?? "none")" }
            properties["caps"] = .string(String(caps.joined(separator: ",").prefix(200)))
        }
        track("entitlement_snapshot_loaded", properties)
    }

    static func unknownAction(_ action: String) -> GatehouseClientError {
        GatehouseClientError(code: .unknownAction, message: "The app's plans have no action named \(action).")
    }

    /// `POST /v1/entitlements/check`: the server's decision.
    public func check(_ action: String, context: [String: Int] = [:]) async throws(GatehouseClientError) -> GateDecision {
        try await call(Endpoints.checkEntitlement, body: EntitlementCheckRequest(action: action, context: context), auth: .optional)
    }

    /// `POST /v1/credits/{name}/spend`, idempotent by `idempotencyKey` (reuse it when retrying).
    /// The snapshot is refreshed afterwards. Reported once per key as CH08 §9 `credit_spent`, with
    /// `subject` (the flow practised) as `flowId` and the key (the practice session) as `sessionId`.
    @discardableResult
    public func spendCredit(
        _ name: String, action: String, idempotencyKey: String = UUID().uuidString, subject: String? = nil
    ) async throws(GatehouseClientError) -> CreditSpendResponse {
        let response = try await call(
            Endpoints.spendCredit, name, body: CreditSpendRequest(idempotencyKey: idempotencyKey, action: action, subject: subject),
            auth: .required)
        var reported = storage.decoded([String].self, forKey: "credit_spent_keys") ?? []
        if !reported.contains(idempotencyKey) {
            var properties: [String: JSONValue] = ["sessionId": .string(idempotencyKey)]
            if let subject { properties["flowId"] = .string(subject) }
            track("credit_spent", properties)
            reported = Array((reported + [idempotencyKey]).suffix(50))
            storage.set(encoding: reported, forKey: "credit_spent_keys")
        }
        _ = try? await entitlements()
        return response
    }

    /// `POST /v1/trial/start`, reported as CH08 §9 `trial_started`.
    @discardableResult
    public func startTrial() async throws(GatehouseClientError) -> EntitlementsPayload {
        let snapshot = try await call(Endpoints.startTrial, auth: .required)
        storeEntitlements(snapshot)
        if snapshot.planState == .trial { track("trial_started") }
        return snapshot
    }

    // MARK: Analytics

    /// Queues a client analytics event (CH08 §9, OKLah §13) and sends the queue in the
    /// background. Events sent before any account carry this install's device-local id, which
    /// the server ties to the user once one signs in.
    public func track(_ name: String, _ properties: [String: JSONValue] = [:]) {
        var queue = analyticsQueue
        queue.append(ClientEvent(name: name, properties: properties, occurredAt: clock.now().rfc3339, anonymousID: installID))
        // Bounded: an app offline for long keeps the latest 200.
        analyticsQueue = Array(queue.suffix(200))
        if analyticsFlush == nil {
            Task { await self.flushAnalytics() }
        }
    }

    /// Sends the queued events now (one sender at a time, so nothing is sent twice); those the
    /// server refused as invalid are dropped, those the network lost stay queued for later.
    public func flushAnalytics() async {
        while let running = analyticsFlush { await running.value }
        guard !analyticsQueue.isEmpty else { return }
        // The task runs on this actor and clears itself before it completes, so a caller
        // waiting above never sees a finished task still in place.
        let task = Task {
            await self.sendQueuedAnalytics()
            self.analyticsFlush = nil
        }
        analyticsFlush = task
        await task.value
    }

    private func sendQueuedAnalytics() async {
        while !analyticsQueue.isEmpty {
            let batch = Array(analyticsQueue.prefix(50))
            do throws(GatehouseClientError) {
                try await call(Endpoints.events, body: ClientEventBatch(events: batch), auth: .optional)
            } catch {
                if error.isNetworkFailure || error.code == .rateLimited { return }
            }
            // Only what was sent goes: events tracked meanwhile were appended behind it.
            var queue = analyticsQueue
            if queue.starts(with: batch) { queue.removeFirst(batch.count) } else { queue.removeAll { batch.contains($0) } }
            analyticsQueue = queue
        }
    }

    var analyticsQueue: [ClientEvent] {
        get { storage.decoded([ClientEvent].self, forKey: "analytics_queue") ?? [] }
        set {
            if newValue.isEmpty { storage.set(nil, forKey: "analytics_queue") } else { storage.set(encoding: newValue, forKey: "analytics_queue") }
        }
    }
}
