#if Verifier
import Foundation
import GatehouseCore
import GatehouseWire

/// What an app's own backend needs to trust Gatehouse's access tokens and enforce the app's
/// plans: a token verifier and the entitlement rules, both read from the Gatehouse server and
/// cached.
///
/// ```swift
/// let access = GatehouseAccess(baseURL: URL(string: "https://auth.example.com")!, audience: "hannah")
/// router.group("ai")
///     .add(middleware: GatehouseMiddleware<AppContext>(access: access, action: "ai_chat", usage: meter))
///     .post("chat") { request, context in … context.gatehouseUser!.userID … }
/// ```
public struct GatehouseAccess: Sendable {
    /// Verifies access tokens offline, against Gatehouse's published keys.
    public let tokens: AccessTokenVerifier
    /// The app's entitlement rules, which ``GatehouseAccess/decide(_:for:context:)`` and
    /// ``GatehouseAccess/require(_:for:context:)`` run.
    public let rules: GatehouseRules
    /// The source of the time gates are decided at; a token's plan ends when this clock passes its
    /// `plan_expires_at`.
    public let clock: any WallClock

    /// `baseURL` is where this backend reaches Gatehouse; `issuer` is Gatehouse's public URL
    /// (`iss` of its tokens), by default the same; `audience` is its token audience
    /// (`GATEHOUSE_TOKEN_AUDIENCE`, by default the preset's name).
    public init(
        baseURL: URL, audience: String, issuer: String? = nil, leeway: TimeInterval = 30, fetch: GatehouseFetcher = .http(),
        clock: any WallClock = SystemClock()
    ) {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        tokens = AccessTokenVerifier(
            jwksURL: URL(string: base + Endpoints.jwks.path.expand())!, issuer: issuer ?? base, audience: audience, leeway: leeway, clock: clock,
            fetch: fetch)
        rules = GatehouseRules(configURL: URL(string: base + Endpoints.configuration.path.expand())!, fetch: fetch, clock: clock)
        self.clock = clock
    }

    /// Makes a ``GatehouseAccess`` from a verifier and rules made separately, e.g. fixed rules from
    /// ``GatehouseRules/init(engine:)``.
    public init(tokens: AccessTokenVerifier, rules: GatehouseRules, clock: any WallClock = SystemClock()) {
        self.tokens = tokens
        self.rules = rules
        self.clock = clock
    }

    /// Thrown when the app's preset has no rules for the action asked about: a mistake in the
    /// backend or the preset, which ``GatehouseMiddleware`` answers with 500 `internal_error`.
    public struct UnknownAction: Error, CustomStringConvertible {
        /// The action name that was asked about.
        public var action: String
        /// A sentence naming the action, for logs and the 500's message.
        public var description: String { "'\(action)' is not an action of this app's Gatehouse preset." }
    }

    /// Throws `GatehouseRefusal` (403 `plan_required` with the decision, when thrown from a
    /// route handler) unless `action` is allowed for `user` with `context`: the counts from
    /// this backend's own data, read in the same step that acts on them (see the example
    /// backend's compare-and-insert).
    public func require(_ action: String, for user: GatehouseUser, context: [String: Int] = [:]) async throws {
        let decision = try await decide(action, for: user, context: context)
        guard decision.allowed else { throw GatehouseRefusal(decision) }
    }

    /// The gate decision for `user` and `action` now.
    public func decide(_ action: String, for user: GatehouseUser, context: [String: Int] = [:]) async throws -> GateDecision {
        let engine = try await rules.current()
        let now = clock.now
        guard let decision = engine.decide(
                action, context: context, plan: user.plan(at: now), emailVerified: user.emailVerified || user.phoneVerified, assurance: user.assurance, at: now)
        else { throw UnknownAction(action: action) }
        return decision
    }
}
#endif
