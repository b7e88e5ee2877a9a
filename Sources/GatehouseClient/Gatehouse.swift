import Foundation
import GatehouseCore
import GatehouseWire

/// Time as the SDK needs it: a monotonic clock for token lifetimes (decision 26: never the
/// device's wall clock), the wall clock for what must survive a relaunch, and waiting.
public protocol ClientClock: Sendable {
    /// Seconds on a clock that never jumps (token expiry).
    func uptime() -> TimeInterval
    /// The wall-clock time, for what is kept across launches (when the entitlement snapshot
    /// was verified, analytics timestamps).
    func now() -> Date
    /// Waits `seconds` between retries; throws when the wait is cancelled.
    func sleep(seconds: TimeInterval) async throws
}

/// The default ``ClientClock``: `ContinuousClock` for uptime, the device's date for wall time,
/// `Task.sleep` for waits.
public struct SystemClientClock: ClientClock {
    private let start = ContinuousClock.now

    /// Makes a clock whose uptime counts from now.
    public init() {}

    public func uptime() -> TimeInterval {
        let elapsed = ContinuousClock.now - start
        return TimeInterval(elapsed.components.seconds) + TimeInterval(elapsed.components.attoseconds) / 1e18
    }

    /// The device's current date and time (`Date()`).
    public func now() -> Date { Date() }

    /// Waits with `Task.sleep`, to the millisecond; throws `CancellationError` when the task is
    /// cancelled.
    public func sleep(seconds: TimeInterval) async throws {
        try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
    }
}

/// The Gatehouse client: every call of the contract an app makes for its person, with the
/// session kept alive underneath.
///
/// - The access token lives in memory; the refresh token in the `TokenStore` (Keychain).
/// - One refresh at a time however many calls need it; a refresh ahead of expiry; a 401 on any
///   call refreshes once and retries the call once.
/// - A network failure keeps the session (calls retry their refresh with backoff); only the
///   server saying the session is gone signs the person out.
/// - A session saved by an earlier install of the app is discarded (the Keychain outlives it).
public actor Gatehouse {
    /// The configuration the client was made with.
    public nonisolated let configuration: ClientConfiguration
    let transport: any HTTPTransport
    let tokenStore: any TokenStore
    let storage: any ClientStorage
    let clock: any ClientClock
    /// This install's id (kept in `storage`, which goes with the app).
    nonisolated let installID: String

    /// Where the person stands now; `authStateChanges` yields each change. `.restoring` until
    /// `restore()` or a first call settles it.
    public internal(set) var state: AuthState = .restoring
    var stored: StoredSession?
    var accessToken: String?
    /// On `clock.uptime()`.
    var accessExpiry: TimeInterval = 0
    private var refreshInFlight: Task<Result<String, GatehouseClientError>, Never>?
    var restoreInFlight: Task<RestoreOutcome, Never>?
    /// Refreshes tried again in the background after one failed without the server ending the
    /// session (see `Gatehouse+SharedSession`).
    var refreshRetry: (id: UUID, task: Task<Void, Never>)?
    /// This client's name on a ``SessionLock`` shared with other processes.
    nonisolated let lockOwner = "\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)"
    private var observers: [UUID: AsyncStream<AuthEvent>.Continuation] = [:]
    /// Entitlements and configuration caches (see `Gatehouse+Entitlements`).
    var entitlementCache: CachedEntitlements?
    var configurationCache: PublicConfiguration?
    /// The refresh failed for want of network since the last success (pro_grace, offline UI).
    public internal(set) var isOffline = false
    var analyticsFlush: Task<Void, Never>?
    private var savedSessionLoaded = false
    /// A sign-in waiting for its second factor, and the way it came in.
    var pendingChallenge: (challenge: MFAChallengePayload, provider: SignInProvider)?

    /// Makes the client. Make one for the app and keep it (a global or a property): it reads
    /// this install's id and the cached entitlements and configuration from `storage`, and
    /// sends nothing until a call.
    ///
    /// - Parameters:
    ///   - configuration: Where the server is, and the tunables.
    ///   - tokenStore: Where the refresh token is kept: `KeychainTokenStore` on Apple
    ///     platforms, ``FileTokenStore`` elsewhere, ``MemoryTokenStore`` in tests and previews.
    ///   - storage: Where non-secret data is kept, deleted with the app: ``UserDefaultsStorage``
    ///     on iOS, ``DirectoryStorage`` elsewhere, ``MemoryStorage`` in tests and previews.
    ///   - transport: How requests reach the server; ``URLSessionTransport`` by default.
    ///   - clock: Time and waiting; ``SystemClientClock`` by default, a fake one in tests.
    public init(
        configuration: ClientConfiguration, tokenStore: any TokenStore, storage: any ClientStorage,
        transport: any HTTPTransport = URLSessionTransport(), clock: any ClientClock = SystemClientClock()
    ) {
        self.configuration = configuration
        self.transport = transport
        self.tokenStore = tokenStore
        self.storage = storage
        self.clock = clock
        if let data = storage.data(forKey: "install_id"), let id = String(data: data, encoding: .utf8), !id.isEmpty {
            installID = id
        } else {
            let id = UUID().uuidString.lowercased()
            storage.set(Data(id.utf8), forKey: "install_id")
            installID = id
        }
        entitlementCache = storage.decoded(CachedEntitlements.self, forKey: "entitlements")
        configurationCache = storage.decoded(PublicConfiguration.self, forKey: "config")
    }

    // MARK: State changes

    /// The current state first, then every change, for as long as the stream is iterated.
    public var authStateChanges: AsyncStream<AuthEvent> {
        let (stream, continuation) = AsyncStream<AuthEvent>.makeStream(bufferingPolicy: .unbounded)
        let id = UUID()
        continuation.yield(.initial(state))
        observers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeObserver(id) }
        }
        return stream
    }

    private func removeObserver(_ id: UUID) { observers[id] = nil }

    func emit(_ event: AuthEvent) {
        for continuation in observers.values { continuation.yield(event) }
    }

    // MARK: Restore

    /// On launch: the saved session, confirmed with the server (a refresh and `/v1/me`), tried
    /// `restoreAttempts` times while the server cannot be reached. Calling it again while it
    /// runs joins the run in progress; cancelling the call that started it cancels the run.
    @discardableResult
    public func restore() async -> RestoreOutcome {
        if let restoreInFlight { return await restoreInFlight.value }
        let task = Task { await self.runRestore() }
        restoreInFlight = task
        let outcome = await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
        restoreInFlight = nil
        return outcome
    }

    private func runRestore() async -> RestoreOutcome {
        if case .signedIn(let user, false) = state { return .restored(user) }
        // Read without the network; a locked Keychain keeps `.restoring` until it answers.
        guard await readSavedSession() else { return .storageLocked }
        guard stored != nil else {
            let reason = signedOutReason
            markSignedOut(reason)
            return .signedOut(reason)
        }
        for attempt in 0..<max(1, configuration.restoreAttempts) {
            if attempt > 0 { try? await clock.sleep(seconds: configuration.retryDelay * pow(2, Double(attempt - 1))) }
            // A call made meanwhile may have refreshed already.
            let refreshed: Result<String, GatehouseClientError> =
                if let freshAccessToken { .success(freshAccessToken) } else { await refresh(replacing: accessToken) }
            switch refreshed {
            case .success:
                do {
                    let me = try await call(Endpoints.me, auth: .required)
                    updateUser(me.user, announce: false)
                    markSignedIn(me.user, offline: false)
                    storeEntitlements(me.entitlements)
                    return .restored(me.user)
                } catch {
                    if stored == nil { return .signedOut(signedOutReason) }
                }
            case .failure:
                // The server ended the session: no point trying again.
                if stored == nil { return .signedOut(signedOutReason) }
            }
        }
        // Every attempt failed without the server ending the session: keep it, and keep trying
        // in the background.
        if let user = stored?.user {
            isOffline = true
            markSignedIn(user, offline: true)
            scheduleRefreshRetry()
            return .offline(user)
        }
        // Never confirmed and no user to show: start signed out, but keep the session; the next
        // sign-in replaces it.
        markSignedOut(nil)
        return .signedOut(nil)
    }

    /// Reads the saved session once per launch, discarding one an earlier install left in the
    /// Keychain (the person deleted the app: start signed out). A call made without `restore()`
    /// reads it here too; the state leaves `.restoring` once a refresh confirms the session (or at
    /// once when there is none), so the app hears `signedIn` or `signedOut` either way.
    ///
    /// Answers false, changing nothing, while the store cannot be read yet (a Keychain before
    /// the device's first unlock): the next use reads it again.
    @discardableResult
    func loadSavedSession() -> Bool {
        guard !savedSessionLoaded else { return true }
        guard stored == nil else {
            savedSessionLoaded = true
            return true
        }
        let saved: StoredSession?
        do {
            saved = try tokenStore.load()
        } catch let error as any TokenStoreAvailabilityError where error.isTemporarilyUnavailable {
            return false
        } catch {
            // Unreadable for good: as if there were none.
            saved = nil
        }
        savedSessionLoaded = true
        guard let saved else {
            if state == .restoring, restoreInFlight == nil { markSignedOut(nil) }
            return true
        }
        guard saved.installID == installID else {
            try? tokenStore.clear()
            markSignedOut(.reinstalled)
            return true
        }
        stored = saved
        return true
    }

    /// The person this device holds a session for: the confirmed user, or the one saved with the
    /// session before any call confirmed it. Gates and the snapshot go by this, so a signed-in
    /// person is never judged as a guest because the app has not called `restore()`.
    var sessionUser: UserPayload? {
        if let user = state.user { return user }
        loadSavedSession()
        return stored?.user
    }

    /// The person of the saved session, at once and without the network: the confirmed user when
    /// there is one, else the last one the server returned before the app was closed. Nil when no
    /// session is saved (or the Keychain is still locked). A launch screen can show it while
    /// ``state`` is `.restoring`.
    public var lastKnownUser: UserPayload? { sessionUser }

    /// Whether a session from this install is saved (a relaunch will try to restore it).
    public var hasSavedSession: Bool {
        loadSavedSession()
        return stored != nil
    }

    private var signedOutReason: SignOutReason? {
        if case .signedOut(let reason) = state { return reason }
        return nil
    }

    // MARK: Sessions

    /// Starts the session a sign-in returned.
    func begin(_ session: SessionPayload, user: UserPayload, provider: SignInProvider) throws(GatehouseClientError) {
        let saved = StoredSession(
            refreshToken: session.refreshToken, sessionID: session.sessionID, installID: installID, provider: provider.rawValue, user: user)
        do {
            try atomically { try tokenStore.save(saved) }
        } catch {
            throw GatehouseClientError(code: .internalError, message: "The session could not be saved on this device.")
        }
        refreshRetry?.task.cancel()
        refreshRetry = nil
        stored = saved
        savedSessionLoaded = true
        accessToken = session.accessToken
        accessExpiry = clock.uptime() + TimeInterval(session.expiresIn)
        isOffline = false
        if entitlementCache?.userID != user.id { entitlementCache = nil }
        pendingChallenge = nil
        markSignedIn(user, offline: false)
    }

    /// Ends the session on this device (the server has already ended it, or is told first).
    func end(_ reason: SignOutReason) {
        guard stored != nil || state.user != nil else { return }
        let ended = stored?.sessionID
        // A session another process sharing the store has signed in since is theirs to keep.
        try? atomically {
            if tokenStore.sessionLock != nil, let current = try? tokenStore.load(), current.sessionID != ended { return }
            try tokenStore.clear()
        }
        refreshRetry?.task.cancel()
        refreshRetry = nil
        stored = nil
        accessToken = nil
        accessExpiry = 0
        isOffline = false
        entitlementCache = nil
        storage.set(nil, forKey: "entitlements")
        markSignedOut(reason)
    }

    /// Signed in as `user`: `signedIn` is announced once per person, whichever path got there
    /// (a sign-in, `restore()`, or a call that refreshed a saved session); a later confirmation
    /// of the same person changes the state quietly (or announces `userUpdated` if it changed).
    func markSignedIn(_ user: UserPayload, offline: Bool) {
        let before = state.user
        state = .signedIn(user, offline: offline)
        if before?.id != user.id {
            emit(.signedIn(user))
        } else if before != user {
            emit(.userUpdated(user))
        }
    }

    /// A sign-in answered with a challenge: kept until completed or cancelled. The state shows
    /// it only when nobody is signed in here (a signed-in person stays so meanwhile).
    func markSecondFactorRequired(_ challenge: MFAChallengePayload, provider: SignInProvider) {
        pendingChallenge = (challenge, provider)
        guard state.user == nil else { return }
        state = .secondFactorRequired(challenge)
        emit(.secondFactorRequired(challenge))
    }

    /// Signed out: announced when the state changes.
    func markSignedOut(_ reason: SignOutReason?) {
        guard state != .signedOut(reason) else { return }
        state = .signedOut(reason)
        emit(.signedOut(reason))
    }

    /// Keeps the user the server returned, in the saved session too (shown while offline).
    /// Another account's user (a verification link opened on this device for another address)
    /// changes nothing here.
    func updateUser(_ user: UserPayload, announce: Bool = true) {
        if var saved = stored, saved.user?.id ?? state.user?.id == user.id, saved.user != user {
            saved.user = user
            stored = saved
            saveUser(user, of: saved)
        }
        if case .signedIn(let current, let offline) = state, current.id == user.id, current != user {
            state = .signedIn(user, offline: offline)
            if announce { emit(.userUpdated(user)) }
        }
    }

    /// The last provider used, for the re-auth screen (CH07 §7.1).
    public var lastProvider: SignInProvider? {
        loadSavedSession()
        return stored.map { SignInProvider(rawValue: $0.provider) }
    }

    /// The access token while it has at least `refreshAhead` seconds left.
    var freshAccessToken: String? {
        guard let accessToken, clock.uptime() < accessExpiry - configuration.refreshAhead else { return nil }
        return accessToken
    }

    /// An access token with at least `refreshAhead` seconds left, refreshed when needed; a
    /// refresh that fails for want of network is retried with backoff.
    func validAccessToken() async throws(GatehouseClientError) -> String {
        if let freshAccessToken { return freshAccessToken }
        guard stored != nil else { throw Self.notSignedIn }
        var attempt = 0
        while true {
            switch await refresh(replacing: accessToken) {
            case .success(let token):
                return token
            case .failure(let error):
                guard error.isNetworkFailure, attempt < configuration.networkRetries, stored != nil else {
                    // Not the server ending the session: it is kept, and refreshed again later.
                    scheduleRefreshRetry(after: error)
                    throw error
                }
                try? await clock.sleep(seconds: configuration.retryDelay * pow(2, Double(attempt)))
                attempt += 1
            }
        }
    }

    /// One refresh, shared by every caller waiting at the same time. `replacing` is the access
    /// token the caller found wanting: if another refresh has replaced it meanwhile, the new one
    /// is returned without another refresh.
    func refresh(replacing used: String?) async -> Result<String, GatehouseClientError> {
        if let refreshInFlight { return await refreshInFlight.value }
        if let used, let accessToken, accessToken != used, clock.uptime() < accessExpiry { return .success(accessToken) }
        guard let saved = stored else { return .failure(Self.notSignedIn) }
        let task = Task { await self.performRefresh(saved) }
        refreshInFlight = task
        let result = await task.value
        refreshInFlight = nil
        return result
    }
}
