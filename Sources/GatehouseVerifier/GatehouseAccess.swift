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
    public let tokens: AccessTokenVerifier
    public let rules: GatehouseRules
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
            jwksURL: URL(string: base + "/.well-known/jwks.json")!, issuer: issuer ?? base, audience: audience, leeway: leeway, clock: clock,
            fetch: fetch)
        rules = GatehouseRules(configURL: URL(string: base + "/v1/config")!, fetch: fetch, clock: clock)
        self.clock = clock
    }

    public init(tokens: AccessTokenVerifier, rules: GatehouseRules, clock: any WallClock = SystemClock()) {
        self.tokens = tokens
        self.rules = rules
        self.clock = clock
    }

    public struct UnknownAction: Error, CustomStringConvertible {
        public var action: String
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
                action, context: context, plan: user.plan(at: now), emailVerified: user.emailVerified, assurance: user.assurance, at: now)
        else { throw UnknownAction(action: action) }
        return decision
    }
}
#endif
