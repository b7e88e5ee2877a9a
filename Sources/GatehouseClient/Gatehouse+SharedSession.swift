import Foundation
import GatehouseWire

/// The refresh, and the session shared with other processes (issue 64).
///
/// Processes sharing one ``TokenStore`` (an app and its widget, its share extension, its
/// notification service) share one session and one chain of refresh tokens. Two of them
/// presenting the same refresh token would look to the server like a stolen token, and it would
/// end the session everywhere. So a refresh runs under the store's ``SessionLock``:
/// 1. the lease is taken (waiting while another process holds it);
/// 2. the stored session is read again, and what another process wrote is adopted: the token it
///    rotated, the session it signed in, or no session when it signed out;
/// 3. the newest refresh token is presented, once;
/// 4. the rotated token is written only if the store still holds the one presented (a
///    compare-and-write under the lock's exclusive section), then the lease is given back.
/// Sign-ins, sign-outs and user snapshots write through the same exclusive section, so none of
/// them is overwritten by a refresh that was under way.
extension Gatehouse {
    /// Runs `body`, which reads and writes the store, where no other sharing process writes it
    /// meanwhile (the lock's exclusive section); as is when one process alone uses the store.
    nonisolated func atomically<T>(_ body: () throws -> T) throws -> T {
        guard let lock = tokenStore.sessionLock else { return try body() }
        return try lock.exclusively(body)
    }

    /// Reads the saved session at launch, while the store is locked (a Keychain before the
    /// device's first unlock) reading it again as soon as iOS says protected data is available,
    /// or after a wait that doubles up to `maxRetryDelay`. False when the wait was cancelled.
    func readSavedSession() async -> Bool {
        var attempt = 0.0
        while !loadSavedSession() {
            guard await waitForStorage(seconds: min(configuration.retryDelay * pow(2, attempt), configuration.maxRetryDelay)) else {
                return false
            }
            attempt += 1
        }
        return true
    }

    /// What UIKit posts when the device is unlocked and the Keychain can be read
    /// (`UIApplication.protectedDataDidBecomeAvailableNotification`), by name: the SDK imports
    /// Foundation only.
    static let protectedDataDidBecomeAvailable = Notification.Name("UIApplicationProtectedDataDidBecomeAvailable")

    /// Waits `seconds`, or until protected data becomes available if that comes first; false
    /// when the task is cancelled.
    private func waitForStorage(seconds: TimeInterval) async -> Bool {
        let clock = self.clock
        let woken = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                do {
                    try await clock.sleep(seconds: seconds)
                    return true
                } catch {
                    return false
                }
            }
            group.addTask {
                let (unlocked, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
                let observer = NotificationCenter.default.addObserver(forName: Self.protectedDataDidBecomeAvailable, object: nil, queue: nil) { _ in
                    continuation.yield()
                }
                defer { NotificationCenter.default.removeObserver(observer) }
                for await _ in unlocked { return true }
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        return woken && !Task.isCancelled
    }

    /// Keeps a newer user snapshot in the stored session, on top of whatever refresh token the
    /// store holds now (another process may have rotated it).
    func saveUser(_ user: UserPayload, of session: StoredSession) {
        try? atomically {
            guard tokenStore.sessionLock != nil else { return try tokenStore.save(session) }
            guard var current = try tokenStore.load(), current.sessionID == session.sessionID else { return }
            current.user = user
            try tokenStore.save(current)
        }
    }

    // MARK: The refresh

    /// Refreshes `saved`, under the store's lock when processes share it.
    func performRefresh(_ saved: StoredSession) async -> Result<String, GatehouseClientError> {
        guard let lock = tokenStore.sessionLock else { return await rotate(saved) }
        guard await takeLease(lock) else {
            // Held longer than its lease allows: someone else's clock, or starvation. Kept and tried again.
            return .failure(GatehouseClientError(code: .networkUnavailable, message: "The session is being refreshed by another process."))
        }
        defer { try? lock.release(owner: lockOwner) }
        var current = saved
        // A session another process changed mid-way is adopted, then refreshed; three at most.
        for _ in 0..<3 {
            switch adoptShared(current) {
            case .ended: return .failure(Self.notSignedIn)
            case .unreadable(let error): return .failure(error)
            case .current(let session): current = session
            }
            let result = await rotate(current)
            if case .failure(let error) = result, error == Self.storeChanged { continue }
            return result
        }
        return .failure(Self.storeChanged)
    }

    /// Waits for the lease, polling; false after one lease and a second more (the lock is
    /// held beyond what a lease allows) or when cancelled. A lock that cannot be opened counts
    /// as taken: a broken lock file must not stop the session from being refreshed.
    private func takeLease(_ lock: any SessionLock) async -> Bool {
        let deadline = ProcessInfo.processInfo.systemUptime + lock.lease + 1
        while true {
            do {
                if try lock.tryAcquire(owner: lockOwner) { return true }
            } catch {
                return true
            }
            if ProcessInfo.processInfo.systemUptime > deadline || Task.isCancelled { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    private enum Shared {
        case current(StoredSession)
        case ended
        case unreadable(GatehouseClientError)
    }

    /// What the store holds now, adopted: a token another process rotated, or a session it
    /// signed in. A store another process emptied ends the session here too.
    private func adoptShared(_ saved: StoredSession) -> Shared {
        let current: StoredSession?
        do {
            current = try tokenStore.load()
        } catch {
            // Locked, or broken: never a reason to sign out, nor to refresh blind.
            return .unreadable(GatehouseClientError(code: .networkUnavailable, message: "The session could not be read on this device."))
        }
        guard let current, current.installID == installID else {
            end(.sharedSessionEnded)
            return .ended
        }
        guard current != saved else { return .current(saved) }
        stored = current
        if current.sessionID != saved.sessionID {
            // Signed in anew elsewhere: this process's access token is for the old session.
            accessToken = nil
            accessExpiry = 0
            if let user = current.user {
                if entitlementCache?.userID != user.id { entitlementCache = nil }
                markSignedIn(user, offline: isOffline)
            }
        }
        return .current(current)
    }

    /// The store changed between the read and the write of a refresh (a sign-in elsewhere).
    static let storeChanged = GatehouseClientError(code: .networkUnavailable, message: "The stored session changed.")

    /// Presents `saved`'s refresh token and keeps what comes back.
    private func rotate(_ saved: StoredSession) async -> Result<String, GatehouseClientError> {
        let response: HTTPResponse
        do {
            response = try await send(Endpoints.refresh, body: RefreshRequest(refreshToken: saved.refreshToken))
        } catch {
            isOffline = true
            return .failure(error)
        }
        // Meanwhile the person may have signed out or in again: this answer is for an old session.
        guard stored?.sessionID == saved.sessionID else { return .failure(Self.notSignedIn) }
        guard (200..<300).contains(response.status) else {
            let error = Self.error(from: response)
            if response.status == 401 {
                end(Self.reason(endedBy: error))
            } else if response.status >= 500 || response.status == 429 {
                isOffline = true
            }
            return .failure(error)
        }
        let body: SessionResponse
        do throws(GatehouseClientError) {
            body = try Self.decode(response)
        } catch {
            return .failure(error)
        }
        var next = saved
        next.refreshToken = body.session.refreshToken
        if let user = stored?.user { next.user = user }
        // Saved before it is used: a crash now still leaves the newest refresh token (and the
        // server answers the previous one with this same successor for a short while). Shared,
        // it is written only over the token presented.
        do {
            try atomically {
                if tokenStore.sessionLock != nil {
                    guard let current = try? tokenStore.load(), current.sessionID == saved.sessionID, current.refreshToken == saved.refreshToken
                    else { throw Self.storeChanged }
                }
                try tokenStore.save(next)
            }
        } catch let error as GatehouseClientError where error == Self.storeChanged {
            return .failure(error)
        } catch {
            // Not written (the store refused): the session goes on in memory.
        }
        stored = next
        accessToken = body.session.accessToken
        accessExpiry = clock.uptime() + TimeInterval(body.session.expiresIn)
        isOffline = false
        if case .signedIn(let user, true) = state {
            state = .signedIn(user, offline: false)
        } else if state.user == nil, restoreInFlight == nil, let user = next.user {
            // A call made without `restore()` has just confirmed the saved session.
            markSignedIn(user, offline: false)
        }
        emit(.tokenRefreshed)
        return .success(body.session.accessToken)
    }

    /// Why the server's 401 on a refresh ended the session: `details.reason` names a reused
    /// refresh token; any other revocation is `.sessionRevoked`, an unknown token `.sessionExpired`.
    static func reason(endedBy error: GatehouseClientError) -> SignOutReason {
        guard error.code == .sessionRevoked else { return .sessionExpired }
        if case .string("refresh_token_reuse")? = error.details?["reason"] { return .reuseDetected }
        return .sessionRevoked
    }

    // MARK: Trying again

    /// After a refresh that failed without the server ending the session (no network, a 500, a
    /// 429): refreshes again in the background with backoff (`retryDelay` doubling up to
    /// `maxRetryDelay`, never sooner than a `Retry-After` the server sent), up to
    /// `refreshRetries` times, until one succeeds or the server ends the session. Any call that
    /// needs a token refreshes too, so the session never stops renewing.
    func scheduleRefreshRetry(after error: GatehouseClientError? = nil) {
        guard refreshRetry == nil, stored != nil, configuration.refreshRetries > 0 else { return }
        let id = UUID()
        refreshRetry = (id, Task { await self.retryRefreshes(id, after: error) })
    }

    private func retryRefreshes(_ id: UUID, after first: GatehouseClientError?) async {
        // A run cancelled by a sign-in or out must not forget the run started after it.
        defer { if refreshRetry?.id == id { refreshRetry = nil } }
        var asked = first?.retryAfter
        for attempt in 0..<configuration.refreshRetries {
            let backoff = min(configuration.retryDelay * pow(2, Double(attempt)), configuration.maxRetryDelay)
            do {
                try await clock.sleep(seconds: max(backoff, TimeInterval(asked ?? 0)))
            } catch {
                return
            }
            guard !Task.isCancelled, stored != nil, freshAccessToken == nil else { return }
            switch await refresh(replacing: accessToken) {
            case .success: return
            case .failure(let error): asked = error.retryAfter
            }
        }
    }
}
