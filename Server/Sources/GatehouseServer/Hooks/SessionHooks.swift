import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Synchronization

// The hooks asked about a session (issue 63): `BEFORE_SIGN_IN` before it is opened and
// `CUSTOM_ACCESS_TOKEN` before each of the app's access tokens is signed.

/// What `BEFORE_SIGN_IN` allowed, and the claims `CUSTOM_ACCESS_TOKEN` gave the session's
/// tokens: `SessionIssuer` takes one for every session it opens (`start` and `carry`, the two
/// places a session row is written), so no door opens a session the hooks were not asked about.
/// Made only by `AuthHooks.signingIn`, which asks the hooks outside every transaction: a door
/// runs its transaction with an admission that covers nobody, the issuer stops it (`NotAsked`,
/// rolled back) once the credential check has named the account, the hooks are asked for that
/// account and the session id it will have, and the transaction runs again with an admission
/// for them alone.
struct SignInAdmission: Sendable {
    fileprivate enum Scope: Sendable {
        /// Neither hook is set.
        case everyone
        /// Not asked yet.
        case nobody
        case user(UserID, session: SessionID, app: [String: JSONValue]?)
    }

    private let scope: Scope

    fileprivate init(_ scope: Scope) { self.scope = scope }

    /// Whether a session for `user` was allowed.
    func covers(_ user: UserID) -> Bool {
        switch scope {
        case .everyone: true
        case .nobody: false
        case .user(let allowed, _, _): allowed == user
        }
    }

    /// The id the session opened `at` is to have: the one the hooks were told of, or a new one.
    func sessionID(at now: Date) -> SessionID {
        if case .user(_, let session, _) = scope { return session }
        return .timeOrdered(at: now)
    }

    /// The claims `CUSTOM_ACCESS_TOKEN` put under the session's first access token's `app`.
    var app: [String: JSONValue]? {
        if case .user(_, _, let app) = scope { return app }
        return nil
    }

    /// The session that was about to be opened: what the hooks are told of.
    struct NotAsked: Error {
        var user: User
        var door: SessionDoor
        var provider: Provider
        var method: String
        var session: SessionID
    }

    /// Throws `NotAsked` unless a session for `user` was allowed.
    func check(_ user: User, door: SessionDoor, provider: Provider, method: String, session: SessionID) throws {
        guard covers(user.id) else { throw NotAsked(user: user, door: door, provider: provider, method: method, session: session) }
    }
}

/// Why an access token is about to be signed, as `CUSTOM_ACCESS_TOKEN` is told.
enum TokenOccasion: Sendable, Equatable {
    /// A session's first token, opened through `door`.
    case signIn(SessionDoor)
    case refresh
    /// A session raised by a second factor and given new tokens.
    case stepUp

    var name: String {
        switch self {
        case .signIn: "sign_in"
        case .refresh: "refresh"
        case .stepUp: "step_up"
        }
    }
}

/// `CUSTOM_ACCESS_TOKEN`'s answers a session may keep (the hook said `"cache": true`), for one
/// access token's lifetime from the answer, on this node. A kept session's current refresh
/// token (its hash) names the session too, so its refresh finds the claims without reading the
/// store before the rotation.
final class CustomClaimsCache: Sendable {
    private struct Entry {
        var app: [String: JSONValue]
        var until: Date
    }

    private struct State {
        var entries: [SessionID: Entry] = [:]
        /// A kept session's refresh token hash → the session.
        var chains: [[UInt8]: SessionID] = [:]
    }

    private let state = Mutex(State())
    /// Sessions kept at most; past it the expired ones go, then the cache starts again.
    static let capacity = 100_000

    func claims(of session: SessionID, at now: Date) -> [String: JSONValue]? {
        state.withLock { state in
            guard let entry = state.entries[session] else { return nil }
            guard entry.until > now else {
                state.entries[session] = nil
                return nil
            }
            return entry.app
        }
    }

    func keep(_ app: [String: JSONValue], for session: SessionID, until: Date, now: Date) {
        state.withLock { state in
            if state.entries.count >= Self.capacity {
                state.entries = state.entries.filter { $0.value.until > now }
                if state.entries.count >= Self.capacity { state.entries.removeAll(keepingCapacity: true) }
                state.chains = state.chains.filter { state.entries[$0.value] != nil }
            }
            state.entries[session] = Entry(app: app, until: until)
        }
    }

    /// The kept session whose current refresh token hashes to `tokenHash`.
    func session(following tokenHash: [UInt8]) -> SessionID? {
        state.withLock { $0.chains[tokenHash] }
    }

    /// Notes that `session`'s refresh token is now the one hashing to `tokenHash` (its
    /// predecessor's, `replacing`, is forgotten), when the session has a kept answer.
    func follow(_ tokenHash: [UInt8], to session: SessionID, replacing old: [UInt8]? = nil) {
        state.withLock { state in
            if let old { state.chains[old] = nil }
            guard state.entries[session] != nil else { return }
            // Bounded as the entries are: only tokens of sessions still kept stay.
            if state.chains.count >= Self.capacity {
                state.chains = state.chains.filter { state.entries[$0.value] != nil }
                if state.chains.count >= Self.capacity { state.chains.removeAll(keepingCapacity: true) }
            }
            state.chains[tokenHash] = session
        }
    }
}

extension AuthHooks {
    /// Runs `body` (a door's transaction, and nothing it must not repeat) under `BEFORE_SIGN_IN`
    /// and `CUSTOM_ACCESS_TOKEN`: at once when neither is set; otherwise first with an admission
    /// for nobody, and when the issuer stops it at the session it was about to open, asks the
    /// hooks about that account and session and runs it again, once, with an admission for them
    /// (`SignInAdmission`).
    func signingIn<T>(client: ClientInfo, _ body: (SignInAdmission) async throws -> T) async throws -> T {
        let decides = settings[.beforeSignIn]
        guard decides != nil || settings[.customAccessToken] != nil else { return try await body(SignInAdmission(.everyone)) }
        let asked: SignInAdmission.NotAsked
        do {
            return try await body(SignInAdmission(.nobody))
        } catch let error as SignInAdmission.NotAsked {
            asked = error
        }
        if let decides {
            let data = Self.payload(signingIn: asked, client: client, preset: presetName)
            try await decide(.beforeSignIn, decides, body: try Self.envelope(.beforeSignIn, at: caller.clock.now, data: data), user: asked.user.id, client: client)
        }
        // The OpenID provider's doors carry a browser's sign-in over to a client's tokens, which
        // are not the app's: they carry no `app` claims.
        let app: [String: JSONValue]?
        switch asked.door {
        case .oauthCode, .handover:
            app = nil
        case .signUp, .password, .magicLink, .emailVerification, .passwordReset, .provider, .passkey, .anonymous, .phone, .secondFactor:
            app = try await customClaims(
                for: asked.user, session: asked.session, occasion: .signIn(asked.door), method: asked.method, client: client)
        }
        do {
            return try await body(SignInAdmission(.user(asked.user.id, session: asked.session, app: app)))
        } catch is SignInAdmission.NotAsked {
            // The credential named another account the second time (it changed in between): the
            // hooks were not asked about that one, so nothing is opened; the person tries again.
            throw Self.unavailable(preset)
        }
    }

    /// `CUSTOM_ACCESS_TOKEN` for a token of `session` about to be signed: the claims for its `app`
    /// claim, nil when no such hook is set (or it failed open). A session whose answer said
    /// `"cache": true` keeps it for one access token's lifetime on this node. Never call it
    /// inside a transaction.
    func customClaims(
        for user: User, session: SessionID, occasion: TokenOccasion, method: String?, client: ClientInfo
    ) async throws -> [String: JSONValue]? {
        guard let endpoint = settings[.customAccessToken] else { return nil }
        let now = caller.clock.now
        if let kept = claimsCache.claims(of: session, at: now) { return kept }
        let body: Data
        switch endpoint.format {
        case .gatehouse:
            var data = Self.userPayload(user)
            data["session_id"] = session.description
            data["occasion"] = occasion.name
            if case .signIn(let door) = occasion { data["door"] = door.rawValue }
            data["method"] = method ?? NSNull()
            data["preset"] = presetName
            body = try Self.envelope(.customAccessToken, at: now, data: data)
        case .supabase:
            body = try SupabaseHookFormat.customAccessToken(
                user: user, session: session, occasion: occasion, method: method, at: now, ttl: preset.tokens.accessTokenTTLSeconds)
        }
        let format = endpoint.format
        let outcome: Result<CustomClaimsAnswer, HookFailure>
        do {
            outcome = .success(
                try await caller.post(
                    HookName.customAccessToken.label, url: endpoint.url, secret: endpoint.secret, id: Self.messageID(), body: body
                ) { CustomClaimsAnswer.read($0, format: format, sent: body) })
        } catch {
            outcome = .failure(error)
        }
        guard case .success(let answer) = outcome else {
            if case .failure(let failure) = outcome {
                try await audit(
                    .customAccessToken, outcome: endpoint.failOpen ? "failed_open" : "failed", user: user.id, client: client,
                    details: ["reason": failure.reason])
            }
            if endpoint.failOpen { return nil }
            throw Self.unavailable(preset)
        }
        if answer.cache {
            claimsCache.keep(answer.claims, for: session, until: now.addingTimeInterval(TimeInterval(preset.tokens.accessTokenTTLSeconds)), now: now)
        }
        return answer.claims
    }

    /// The account as the hooks are told of it.
    static func userPayload(_ user: User) -> [String: Any] {
        var described: [String: Any] = ["id": user.id.description, "is_anonymous": user.isAnonymous, "email_verified": user.emailVerified]
        if let email = user.email { described["email"] = email }
        if let phone = user.phone { described["phone"] = phone }
        return ["user": described]
    }

    /// `BEFORE_SIGN_IN`'s `data`: the account, the door and how its first factor was proved, the
    /// client's address and the preset.
    static func payload(signingIn asked: SignInAdmission.NotAsked, client: ClientInfo, preset: String) -> [String: Any] {
        var data = userPayload(asked.user)
        data["door"] = asked.door.rawValue
        data["provider"] = asked.provider.rawValue
        data["method"] = asked.method
        data["preset"] = preset
        data["client"] = clientPayload(client)
        return data
    }
}

/// `CUSTOM_ACCESS_TOKEN`'s answer, read strictly: Gatehouse's `{"claims": {…}}`, with
/// `"cache": true` when the session may keep it; Supabase's `{"claims": {…}}`, the whole claims
/// object back, of which the names the hook added are the app's (what it changed or dropped of
/// the claims it was sent is not taken: Gatehouse's claims are the server's). Claims that break
/// `AppClaims`' rules (a reserved name, over 1,000 bytes) fail the call.
struct CustomClaimsAnswer: Equatable {
    var claims: [String: JSONValue]
    var cache: Bool

    static func read(_ answer: [UInt8], format: HookFormat, sent: Data) -> CustomClaimsAnswer? {
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(answer)),
            case .object(let returned)? = object["claims"]
        else { return nil }
        let read: CustomClaimsAnswer
        switch format {
        case .gatehouse:
            guard Set(object.keys).isSubset(of: ["claims", "cache"]) else { return nil }
            var cache = false
            if let flag = object["cache"] {
                guard case .bool(let value) = flag else { return nil }
                cache = value
            }
            read = CustomClaimsAnswer(claims: returned, cache: cache)
        case .supabase:
            guard Set(object.keys) == ["claims"],
                let envelope = try? JSONDecoder().decode([String: JSONValue].self, from: sent), case .object(let original)? = envelope["claims"]
            else { return nil }
            read = CustomClaimsAnswer(claims: returned.filter { original[$0.key] == nil }, cache: false)
        }
        return AppClaims.problem(read.claims) == nil ? read : nil
    }
}
