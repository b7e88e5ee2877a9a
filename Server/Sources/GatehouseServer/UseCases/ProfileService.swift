import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Anonymous accounts (OKLah), the profile and handles (Handz CH07 §4), merging an anonymous
/// account into a permanent one.
struct ProfileService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdentityStore & ProfileStore & IdempotencyStore & SessionStore & RefreshTokenStore
        & PlanLedgerStore & MFAFactorStore & MFAChallengeStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let gate: SignInGate
    let sessions: SessionIssuer
    let lifecycle: AccountLifecycle
    let throttle: Throttle
    let entitlements: Entitlements
    let merges: MergeTokens
    let preset: Preset
    let clock: any WallClock

    var handles: HandlePolicy { HandlePolicy(settings: preset.handles) }

    // MARK: Anonymous accounts

    /// `POST /v1/auth/anonymous`: no input; a random id (never derived from the device), a
    /// session, and three names to choose from. A retry with the same `Idempotency-Key` within
    /// 24 hours answers the same account with a new session (decision 3).
    /// A new anonymous account; when the database cannot create one, 503 with the preset's
    /// `error.auth_unavailable` words (OKLah's AUTH_UNAVAILABLE), which the app shows with a retry.
    func anonymous(client: ClientInfo, idempotencyKey: String?) async throws -> AnonymousResponse {
        do {
            return try await startAnonymous(client: client, idempotencyKey: idempotencyKey)
        } catch let error as StoreError {
            switch error {
            case .unavailable, .conflict:
                throw GatehouseError(
                    status: 503, code: .serviceUnavailable,
                    message: preset.text("error.auth_unavailable", "The service is temporarily unavailable. Please try again shortly."),
                    retryAfter: 5, underlying: error)
            default:
                throw error
            }
        }
    }

    private func startAnonymous(client: ClientInfo, idempotencyKey: String?) async throws -> AnonymousResponse {
        try gate.requireMethod(preset.signInMethods.anonymous)
        let keyHash = idempotencyKey.map(StoredSecret.hash)
        let now = clock.now
        // A replay counts against the per-IP limit like a first start (finding 3).
        try await throttle.limitIP("anonymous", client: client, limit: preset.throttling.anonymousPerIPPerHour, windowSeconds: 3_600)
        if let keyHash, let earlier = try await store.idempotentUser(scope: "anonymous", keyHash: keyHash, since: now.addingTimeInterval(-86_400)) {
            // Honoured only while the account is still anonymous and the session the first
            // request opened is alive: after an upgrade, a logout or a revocation the key is
            // worth nothing (upgrades and global logouts delete it as well).
            guard let user = try await store.user(id: earlier.user), user.isAnonymous, !user.isDisabled,
                let sessionID = earlier.session, let session = try await store.session(id: sessionID),
                session.isLive(at: now, settings: preset.tokens)
            else {
                throw GatehouseError(
                    status: 409, code: .idempotencyKeyReused,
                    message: "This Idempotency-Key belongs to a start that can no longer be repeated. Send a new key.")
            }
            let response = try await sessions.signingIn(client: client) { admitted in
                try await unitOfWork.run(client: client) { work in
                    // An anonymous account cannot hold a second factor (enrolling needs an address).
                    try await sessions.signIn(work.narrowed { $0 }, user, provider: .anonymous, event: .login, door: .anonymous, admitted: admitted)
                        .requireSession()
                }
            }
            return AnonymousResponse(user: response.user, session: response.session, nameSuggestions: user.nameSuggestions ?? [])
        }
        let names = NameSuggester.suggestions()
        let admission = try await lifecycle.admit(NewAccount(.wayIn(.anonymous)), client: client)
        // The id `BEFORE_SIGN_IN` is told of is the one the account gets (the transaction may run twice).
        let id = UserID.random()
        do {
            let response = try await sessions.signingIn(client: client) { admitted in
                try await lifecycle.withTemporaryHandle { handle in
                    try await unitOfWork.run(client: client) { work -> AuthResponse in
                        let (tx, now) = (work.tx, work.now)
                        let user = User(id: id, isAnonymous: true, handle: handle, createdAt: now)
                        try await lifecycle.create(
                            work.narrowed { $0 }, user, identity: Identity(userID: user.id, provider: .anonymous, subject: user.id.description, createdAt: now),
                            provider: .anonymous, admitted: admission)
                        try await tx.setNameSuggestions(user.id, names, now: now)
                        let response = try await sessions.signIn(
                            work.narrowed { $0 }, user, provider: .anonymous, event: .signup, door: .anonymous, admitted: admitted
                        ).requireSession()
                        if let keyHash, let session = SessionID(response.session.sessionID) {
                            try await tx.insertIdempotencyKey(scope: "anonymous", keyHash: keyHash, userID: user.id, sessionID: session, at: now)
                        }
                        return response
                    }
                }
            }
            return AnonymousResponse(user: response.user, session: response.session, nameSuggestions: names)
        } catch let error as StoreError where error.uniqueKey == .idempotencyKey {
            // The same key raced itself: answer the account the other request made.
            return try await anonymous(client: client, idempotencyKey: idempotencyKey)
        }
    }

    /// `GET /v1/me`: the user and the entitlement snapshot.
    func me(_ signedIn: SignedIn) async throws -> MeResponse {
        let user = signedIn.user
        return MeResponse(
            user: user.payload(identities: try await store.identities(of: user.id)), entitlements: try await entitlements.snapshot(user))
    }

    /// `POST /v1/me/anonymous-name`: one of the names last offered becomes the display name.
    func chooseName(_ signedIn: SignedIn, name: String) async throws -> UserResponse {
        let user = signedIn.user
        guard let offered = user.nameSuggestions, offered.contains(name) else {
            throw GatehouseError(
                status: 422, code: .invalidChoice, message: preset.text("error.invalid_choice", "Please choose one of the suggested names."))
        }
        try await changeProfile(of: user.id) { $0.displayName = name }
        return try await userResponse(user.id)
    }

    // MARK: Profile and handles

    /// Applies `change` to the account as stored now, read under its lock, and writes the
    /// profile's fields: what a change leaves alone is never taken from the request's copy, so
    /// two changes of different fields both stand.
    private func changeProfile(
        of id: UserID, metadata: [String: JSONValue]? = nil, by writer: AccountMetadata.Writer = .holder,
        _ change: @escaping @Sendable (inout User) -> Void
    ) async throws {
        try await unitOfWork.run { work in
            try await work.tx.lockUser(id)
            guard var stored = try await work.tx.user(id: id) else { throw GatehouseError.unauthorized() }
            change(&stored)
            try await work.tx.updateProfile(
                id, displayName: stored.displayName, handle: stored.handle, avatarURL: stored.avatarURL,
                onboardingComplete: stored.onboardingComplete, now: work.now)
            if let metadata, try await !MetadataWrites.apply(work.narrowed { $0 }, user: id, [.user: metadata], by: writer).isEmpty {
                try await work.audit(.metadataChanged, user: id, details: ["kind": AccountMetadata.Kind.user.rawValue, "by": writer.name])
            }
        }
    }

    /// `PATCH /v1/me`.
    func patch(_ signedIn: SignedIn, _ patch: ProfilePatch) async throws -> UserResponse {
        try await self.patch(user: signedIn.user, patch)
    }

    /// The same change made to `user` by whoever may (the user, or an operator through
    /// `/auth/v1/admin/users`).
    func patch(user: User, _ patch: ProfilePatch, by writer: AccountMetadata.Writer = .holder) async throws -> UserResponse {
        let displayName = try patch.displayName.map(validDisplayName)
        let handle = try patch.handle.map(validHandle)
        if patch.setsAvatarURL { try checkAvatarURL(patch.avatarURL) }
        do {
            try await changeProfile(of: user.id, metadata: patch.userMetadata, by: writer) { stored in
                if let displayName { stored.displayName = displayName }
                if let handle { stored.handle = handle }
                if patch.setsAvatarURL { stored.avatarURL = patch.avatarURL }
                if let onboarding = patch.onboardingComplete { stored.onboardingComplete = onboarding }
            }
        } catch let error as StoreError where error.uniqueKey == .handle {
            // Two people racing for one handle: the database lets exactly one win.
            throw handleTaken
        }
        return try await userResponse(user.id)
    }

    /// Refuses `patch` as `patch(user:_:)` would, before there is an account to change: for a
    /// sign-up that sets the profile too (`/auth/v1/signup` with `data`), so that a refused
    /// profile creates no account. A handle is also refused when it is taken now; two sign-ups
    /// racing for one free handle both pass here, and the loser's profile change then fails.
    func check(_ patch: ProfilePatch) async throws {
        if let requested = patch.displayName { _ = try validDisplayName(requested) }
        if let requested = patch.handle, try await store.user(handle: try validHandle(requested)) != nil { throw handleTaken }
        if patch.setsAvatarURL { try checkAvatarURL(patch.avatarURL) }
    }

    private func validDisplayName(_ requested: String) throws -> String {
        guard let valid = ProfilePolicy.displayName(requested) else {
            throw GatehouseError(
                status: 422, code: .invalidDisplayName, message: preset.text("error.invalid_display_name", "A name needs 1 to 50 characters."))
        }
        return valid
    }

    /// The handle as stored.
    private func validHandle(_ requested: String) throws -> String {
        guard preset.handles.enabled else { throw GatehouseError.invalidRequest("Handles are not used by this app.") }
        if let problem = handles.problem(requested) {
            throw GatehouseError(status: 422, code: .invalidHandle, message: handles.message(for: problem), reasons: [problem])
        }
        return handles.normalize(requested)
    }

    /// nil removes the avatar.
    private func checkAvatarURL(_ requested: String?) throws {
        guard let requested else { return }
        guard ProfilePolicy.isValidAvatarURL(requested) else {
            throw GatehouseError(status: 422, code: .invalidAvatarURL, message: "The avatar must be an https:// address, or null to remove it.")
        }
    }

    /// `GET /v1/handles/{handle}`: one indexed lookup, fast enough for as-you-type checks.
    func availability(_ handle: String) async throws -> HandleAvailability {
        let normalized = handles.normalize(handle)
        if let problem = handles.problem(handle) {
            return HandleAvailability(handle: normalized, available: false, reason: problem)
        }
        let taken = try await store.user(handle: normalized) != nil
        return HandleAvailability(handle: normalized, available: !taken, reason: taken ? "taken" : nil)
    }

    // MARK: Merge

    /// `POST /v1/auth/merge`: the signed-in account keeps; the anonymous account named by the
    /// token is retired, with a `user.merged` event for the app's backend to move its rows.
    func merge(_ signedIn: SignedIn, token: String) async throws -> UserResponse {
        let claim = try merges.open(token)
        guard claim.to == signedIn.user.id else {
            throw GatehouseError(status: 400, code: .tokenInvalid, message: "This merge token is for another account.")
        }
        try await unitOfWork.run { work in
            let tx = work.tx
            guard let source = try await tx.user(id: claim.from), source.isAnonymous else {
                throw GatehouseError(status: 400, code: .tokenInvalid, message: "This merge has already happened.")
            }
            // What was bought or granted while anonymous stays with the person: every source of
            // the plan ledger moves to the account kept.
            for ledger in PlanSource.allCases {
                switch ledger {
                case .appStore: try await tx.moveSubscriptions(from: source.id, to: claim.to)
                case .stripe: try await tx.moveStripeRows(from: source.id, to: claim.to)
                case .googlePlay: try await tx.moveGooglePlayPurchases(from: source.id, to: claim.to)
                case .grant: try await tx.moveGrants(from: source.id, to: claim.to)
                case .trial: continue  // The account kept has its own.
                }
            }
            // Two parallel merges of one token: one deletes, the other finds nothing (PostgreSQL
            // reads the source without a lock).
            guard try await tx.deleteUser(source.id) else {
                throw GatehouseError(status: 400, code: .tokenInvalid, message: "This merge has already happened.")
            }
            try await work.audit(.accountMerged, user: claim.to, details: ["from": claim.from.description])
            try await work.record(.userMerged, user: claim.to, data: ["from": claim.from.description, "to": claim.to.description])
        }
        return try await userResponse(claim.to)
    }

    private func userResponse(_ id: UserID) async throws -> UserResponse {
        guard let user = try await store.user(id: id) else { throw GatehouseError.unauthorized() }
        return UserResponse(user: user.payload(identities: try await store.identities(of: id)))
    }

    var handleTaken: GatehouseError {
        GatehouseError(status: 409, code: .handleTaken, message: preset.text("error.handle_taken", "This handle is already taken."))
    }
}
