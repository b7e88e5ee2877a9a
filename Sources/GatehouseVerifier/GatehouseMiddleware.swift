#if Verifier
import Foundation
import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird
import NIOCore

/// A request context that can carry the verified Gatehouse user to route handlers.
public protocol GatehouseUserContext: RequestContext {
    /// The user whose token ``GatehouseMiddleware`` verified, set before the route handler runs;
    /// nil on routes the middleware does not protect.
    var gatehouseUser: GatehouseUser? { get set }
}

/// Protects an app's own API with Gatehouse access tokens, offline:
/// - no token, or one that does not verify: 401 `unauthorized`;
/// - with an `action`: the plan must allow it, decided by the same engine and rules as
///   Gatehouse (its `/v1/config`), from the token's `plan`, treated as `free` once
///   `plan_expires_at` has passed (decision 20): else 403 `plan_required` with the gate decision
///   under `details`. Counts the action's caps read (`saved_count`, `flow_rank`…) come from
///   `context`, a closure over the backend's own database, never from the client;
/// - with a `UsageMeter`: the user's request is counted. In memory, past the action's limit:
///   429 `rate_limited` with `Retry-After`. With Gatehouse-held meters (shared by every
///   instance): past the plan's limit, 403 `plan_required` with the meter's gate decision.
/// Errors have the contract's shape, `{"error": {"code", "message", …}}`.
///
/// ```swift
/// router.group("flows/:id")
///     .add(middleware: GatehouseMiddleware<AppContext>(access: access, action: "edit_flow") { _, context, user in
///         ["flow_rank": try await flows.rank(of: context.parameters.require("id"), owner: user.userID)]
///     })
/// ```
public struct GatehouseMiddleware<Context: GatehouseUserContext>: RouterMiddleware {
    /// The counts an action's rules read, for this request and user, from the app's own data.
    public typealias Counts = @Sendable (Request, Context, GatehouseUser) async throws -> [String: Int]

    let access: GatehouseAccess
    let action: String?
    let usage: UsageMeter?
    let meter: String?
    let counts: Counts?

    /// `meter`: the name this route's requests count under in `usage`, when it is not the
    /// action's (Hannah's search is gated as AI and counted on its own).
    public init(access: GatehouseAccess, action: String? = nil, usage: UsageMeter? = nil, meter: String? = nil, counts: Counts? = nil) {
        self.access = access
        self.action = action
        self.usage = usage
        self.meter = meter
        self.counts = counts
    }

    /// Verifies the bearer token, checks `action` against the plan and counts the use in `usage`,
    /// then calls `next` with ``GatehouseUserContext/gatehouseUser`` set. Otherwise it answers
    /// itself: 401 `unauthorized`, 403 with the gate decision, 429 `rate_limited`, 503
    /// `service_unavailable`, or 500 `internal_error` for an action the preset lacks; errors
    /// thrown by `counts` or `next` pass through.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let token = Self.bearerToken(request) else {
            return errorResponse(.unauthorized, .unauthorized, "Sign in to continue.", extra: [.wwwAuthenticate: "Bearer"])
        }
        let user: GatehouseUser
        do {
            user = try await access.tokens.verify(token)
        } catch .keysUnavailable {
            return errorResponse(.serviceUnavailable, .serviceUnavailable, "Sign-in cannot be checked right now. Please try again shortly.")
        } catch {
            return errorResponse(
                .unauthorized, .unauthorized, "The access token is missing or not valid.",
                extra: [.wwwAuthenticate: #"Bearer error="invalid_token""#])
        }
        if let action {
            let facts = try await counts?(request, context, user) ?? [:]
            let decision: GateDecision
            do {
                decision = try await access.decide(action, for: user, context: facts)
            } catch let unknown as GatehouseAccess.UnknownAction {
                return errorResponse(.internalServerError, .internalError, unknown.description)
            } catch {
                return errorResponse(.serviceUnavailable, .serviceUnavailable, "Your plan cannot be checked right now. Please try again shortly.")
            }
            if !decision.allowed { return GatehouseRefusal(decision).response }
        }
        if let usage {
            // Every request is a use of its own: the meter's key is one the meter makes, never a
            // header the end user chose (finding 3 of issue 40: one `Idempotency-Key` on every
            // call was counted once).
            switch await usage.record(user: user.userID, action: meter ?? action ?? "request") {
            case .allowed: break
            case .limited(let retryAfter):
                return errorResponse(
                    .tooManyRequests, .rateLimited, "Too many requests. Please wait a moment and try again.", retryAfter: retryAfter,
                    extra: [.retryAfter: String(retryAfter)])
            case .refused(let decision):
                return GatehouseRefusal(decision).response
            case .unavailable:
                return errorResponse(.serviceUnavailable, .serviceUnavailable, "Your usage cannot be checked right now. Please try again shortly.")
            }
        }
        var context = context
        context.gatehouseUser = user
        return try await next(request, context)
    }

    static func bearerToken(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}

/// A gate that refused: 403 with the decision under `details` and the code Gatehouse itself
/// gives for it (`GateDecision.refusalCode`: `plan_required`, or a step-up gate's own). Thrown
/// by `GatehouseAccess.require(_:for:context:)` from a route
/// handler, Hummingbird answers it as that response.
public struct GatehouseRefusal: HTTPResponseError, Equatable {
    /// The refused decision, sent under `error.details` (`gate`, `reason_code`, `message`, `actions`).
    public let decision: GateDecision

    /// Makes the refusal of `decision`, one whose `allowed` is false.
    public init(_ decision: GateDecision) { self.decision = decision }

    /// Always 403 Forbidden.
    public var status: HTTPResponse.Status { .forbidden }

    /// The 403 response: `error.code` is the decision's `refusalCode`, `error.message` its
    /// `message` (or a generic sentence), `error.details` the decision.
    public var response: Response {
        errorResponse(.forbidden, decision.refusalCode, decision.message ?? "This is not part of your plan.", details: Self.json(decision))
    }

    /// Answers ``GatehouseRefusal/response`` when the refusal is thrown from a route handler;
    /// Hummingbird calls this.
    public func response(from request: Request, context: some RequestContext) throws -> Response { response }

    static func json(_ decision: GateDecision) -> [String: JSONValue]? {
        JSONValue(encoding: decision)?.objectValue
    }
}

extension HTTPField.Name {
}

/// A response in the contract's error shape.
func errorResponse(
    _ status: HTTPResponse.Status, _ code: ErrorCode, _ message: String, retryAfter: Int? = nil, details: [String: JSONValue]? = nil,
    extra: HTTPFields = [:]
) -> Response {
    let body = ErrorBody(error: ErrorPayload(code: code, message: message, retryAfter: retryAfter, details: details))
    let data = (try? JSONEncoder().encode(body)) ?? Data(#"{"error":{"code":"internal_error","message":"error"}}"#.utf8)
    var headers: HTTPFields = [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"]
    headers.append(contentsOf: extra)
    return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
}
#endif
