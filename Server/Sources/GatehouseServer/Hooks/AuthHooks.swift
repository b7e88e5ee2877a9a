import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// An account about to be made, as `BEFORE_USER_CREATED` is told of it.
struct NewAccount: Sendable, Equatable {
    /// How it is made: by a way in of the catalogue (on either surface), or by an operator
    /// (`/auth/v1`'s admin create, invite, a generated sign-up link).
    enum Origin: Sendable, Equatable {
        case wayIn(Credential)
        case byOperator

        var name: String {
            switch self {
            case .wayIn(let credential): credential.rawValue
            case .byOperator: "operator"
            }
        }
    }

    /// What Apple or Google vouched for in the id token that asks for the account.
    struct ProviderClaims: Sendable, Equatable {
        var subject: String
        var email: String?
        var emailVerified: Bool
        var name: String?
    }

    var origin: Origin
    var email: String?
    /// E.164.
    var phone: String?
    var provider: ProviderClaims?

    init(_ origin: Origin, email: String? = nil, phone: String? = nil, provider: ProviderClaims? = nil) {
        (self.origin, self.email, self.phone, self.provider) = (origin, email, phone, provider)
    }
}

/// What `BEFORE_USER_CREATED` allowed (or that no such hook is set): the one thing
/// `AccountLifecycle.create` needs besides the rows, so no way in makes an account without
/// having asked. Made only here, by `AuthHooks.admit`, before the transaction that makes the
/// account (the hook is a network call: never inside a transaction others wait on).
struct AccountAdmission: Sendable {
    let account: NewAccount

    fileprivate init(_ account: NewAccount) { self.account = account }

    /// An account made by the job of a request the hook allowed (`PhoneService.finishSignUp`:
    /// the request asked, the job makes what it answered).
    static func askedByQueuedRequest(phone: String) -> AccountAdmission { AccountAdmission(NewAccount(.wayIn(.phone), phone: phone)) }

    /// Thrown by `AccountLifecycle.create` when a use case reaches the making of an account
    /// without an admission: it read, before its transaction, that the account existed, and it
    /// did not by the time of the write. `AuthHooks.admitting` asks and runs the body again.
    struct NotAsked: Error {}
}

/// The app's say in an account's life (the contract's "Next wave 3: Auth hooks"), through the
/// one `HookCaller`: `BEFORE_USER_CREATED` before any account is made, `BEFORE_SIGN_IN` before
/// any session is opened, `CUSTOM_ACCESS_TOKEN` before any of the app's access tokens is signed. Each decision hook
/// answers allow or reject; a reject is 403 `hook_rejected` with the hook's message, a failure
/// 503 `hook_unavailable` unless the hook fails open. Rejects and failures are audited
/// (`hook_call`).
struct AuthHooks: Sendable {
    let caller: HookCaller
    let settings: HookSettings
    let preset: Preset
    let presetName: String
    let audits: UnitOfWork<Void>
    let claimsCache = CustomClaimsCache()

    /// The longest message a reject may carry (a person's sentence, shown as it is).
    static let maximumMessageLength = 500

    /// `BEFORE_USER_CREATED` for `account`: the admission `AccountLifecycle.create` takes.
    func admit(_ account: NewAccount, client: ClientInfo) async throws -> AccountAdmission {
        guard let endpoint = settings[.beforeUserCreated] else { return AccountAdmission(account) }
        let body: Data
        switch endpoint.format {
        case .gatehouse: body = try Self.envelope(.beforeUserCreated, at: caller.clock.now, data: Self.payload(account, client: client, preset: presetName))
        case .supabase: body = try SupabaseHookFormat.beforeUserCreated(account, client: client, at: caller.clock.now)
        }
        try await decide(.beforeUserCreated, endpoint, body: body, user: nil, client: client)
        return AccountAdmission(account)
    }

    /// Runs `body` with an admission asked for only when `needed` (read before the transaction)
    /// says an account will be made; when the transaction finds otherwise (`NotAsked`), asks and
    /// runs it again once.
    func admitting<T>(
        _ account: NewAccount, client: ClientInfo, needed: Bool, _ body: (AccountAdmission?) async throws -> T
    ) async throws -> T {
        if needed { return try await body(try await admit(account, client: client)) }
        do {
            return try await body(nil)
        } catch is AccountAdmission.NotAsked {
            return try await body(try await admit(account, client: client))
        }
    }

    func decide(_ hook: HookName, _ endpoint: HookEndpoint, body: Data, user: UserID?, client: ClientInfo) async throws {
        let failure: HookFailure
        let format = endpoint.format
        do {
            let decision = try await caller.post(hook.label, url: endpoint.url, secret: endpoint.secret, id: Self.messageID(), body: body) {
                HookDecision.read($0, format: format)
            }
            switch decision {
            case .allow:
                return
            case .reject(let message):
                try await audit(hook, outcome: "rejected", user: user, client: client, details: [:])
                throw GatehouseError(status: 403, code: .hookRejected, message: message)
            }
        } catch let error as HookFailure {
            failure = error
        }
        try await audit(hook, outcome: endpoint.failOpen ? "failed_open" : "failed", user: user, client: client, details: ["reason": failure.reason])
        if endpoint.failOpen { return }
        throw Self.unavailable(preset)
    }

    static func unavailable(_ preset: Preset) -> GatehouseError {
        GatehouseError(
            status: 503, code: .hookUnavailable,
            message: preset.text("error.hook_unavailable", "We can't finish this right now. Please try again in a moment."))
    }

    func audit(_ hook: HookName, outcome: String, user: UserID?, client: ClientInfo, details: [String: String]) async throws {
        try await audits.audit(
            .hookCall, .failure, user: user, client: client,
            details: details.merging(["hook": hook.rawValue, "decision": outcome]) { kept, _ in kept })
    }

    /// A `webhook-id`: new for each call (a synchronous hook is never retried).
    static func messageID() -> String { "msg_" + UUIDText.lowercase(SecureRandom.uuid()) }

    /// Gatehouse's envelope: `{"type": "before_user_created", "timestamp", "data"}`, the time the
    /// server's clock's.
    static func envelope(_ hook: HookName, at now: Date, data: [String: Any]) throws -> Data {
        try JSONSerialization.data(
            withJSONObject: ["type": hook.label, "timestamp": now.rfc3339, "data": data], options: [.sortedKeys, .withoutEscapingSlashes])
    }

    /// `BEFORE_USER_CREATED`'s `data`: the way in, the address or number, the provider's
    /// verified claims, the client's address and the preset.
    static func payload(_ account: NewAccount, client: ClientInfo, preset: String) -> [String: Any] {
        var data: [String: Any] = ["way_in": account.origin.name, "preset": preset]
        if let email = account.email { data["email"] = email }
        if let phone = account.phone { data["phone"] = phone }
        if let claims = account.provider {
            var provider: [String: Any] = ["subject": claims.subject, "email_verified": claims.emailVerified]
            if let email = claims.email { provider["email"] = email }
            if let name = claims.name { provider["name"] = name }
            data["provider_claims"] = provider
        }
        data["client"] = clientPayload(client)
        return data
    }

    /// The person's address and user agent, as every hook's payload names them (`null` for an
    /// operator's call).
    static func clientPayload(_ client: ClientInfo) -> [String: Any] {
        ["ip": client.ip ?? NSNull(), "user_agent": client.userAgent ?? NSNull()]
    }
}

/// A decision hook's answer, read strictly: Gatehouse's `{"decision": "allow"}` or
/// `{"decision": "reject", "message": "…"}` and nothing else; Supabase's empty body or `{}` to
/// allow and `{"error": {"http_code", "message"}}` to reject.
enum HookDecision: Equatable {
    case allow
    case reject(String)

    static func read(_ answer: [UInt8], format: HookFormat) -> HookDecision? {
        switch format {
        case .gatehouse:
            guard let object = try? JSONSerialization.jsonObject(with: Data(answer)) as? [String: Any],
                Set(object.keys).isSubset(of: ["decision", "message"]), let decision = object["decision"] as? String
            else { return nil }
            switch decision {
            case "allow": return object["message"] == nil ? .allow : nil
            case "reject": return message(object["message"]).map(HookDecision.reject)
            default: return nil
            }
        case .supabase:
            if answer.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .allow }
            guard let object = try? JSONSerialization.jsonObject(with: Data(answer)) as? [String: Any] else { return nil }
            if object.isEmpty { return .allow }
            guard Set(object.keys) == ["error"], let error = object["error"] as? [String: Any],
                Set(error.keys).isSubset(of: ["http_code", "message"])
            else { return nil }
            return message(error["message"]).map(HookDecision.reject)
        }
    }

    private static func message(_ value: Any?) -> String? {
        guard let text = value as? String else { return nil }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.count <= AuthHooks.maximumMessageLength else { return nil }
        return trimmed
    }
}
