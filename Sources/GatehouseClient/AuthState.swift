import Foundation
import GatehouseWire

/// Where the person stands, as the app's root view shows it.
public enum AuthState: Sendable, Equatable {
    /// Before the saved session has been read and confirmed: show a splash, not the sign-in
    /// screen. `lastKnownUser` has the saved person meanwhile. It lasts while the Keychain is
    /// locked (before the device's first unlock): a locked Keychain never signs anyone out.
    case restoring
    /// Nobody is signed in: show the sign-in screen. The reason says why a session ended; nil
    /// when there was none to end (a first launch, a cancelled second factor).
    case signedOut(SignOutReason?)
    /// `offline` while the session could not be confirmed with the server (it is kept).
    case signedIn(UserPayload, offline: Bool)
    /// A sign-in proved its first factor and waits for the second: show the code screen for
    /// the challenge's factors, then `completeSignIn(factorID:code:)` or
    /// `completeSignIn(recoveryCode:)`; `cancelSecondFactor()` goes back.
    case secondFactorRequired(MFAChallengePayload)

    /// The signed-in person, also while `offline`; nil in every other state.
    public var user: UserPayload? {
        if case .signedIn(let user, _) = self { return user }
        return nil
    }
}

/// Why a session ended. Only the person or the server ends one; a network failure, a server
/// error or a locked Keychain never does. "Why was I signed out" in the SDK's guide lists them.
public enum SignOutReason: String, Sendable, Equatable, Codable, CaseIterable {
    /// The person signed out on this device (`signOut(scope:)`, or `revokeSession(id:)` of
    /// this device's own session).
    case userSignedOut = "user_signed_out"
    /// The server no longer knows the session (expired, or its refresh token was reused).
    case sessionExpired = "session_expired"
    /// Ended elsewhere: another device signed out everywhere, a password reset, an admin.
    case sessionRevoked = "session_revoked"
    /// The server saw a refresh token come back after it had been replaced (a stolen or copied
    /// token, or two processes sharing a session without a ``SessionLock``) and ended the session.
    case reuseDetected = "reuse_detected"
    /// Another process sharing this session (the app, a widget, an extension) signed out or was
    /// signed out: the stored session is gone.
    case sharedSessionEnded = "shared_session_ended"
    /// The person deleted the account from this device (`deleteAccount(proof:)`).
    case accountDeleted = "account_deleted"
    /// The Keychain held a session from an earlier install of the app (decision: a fresh install
    /// starts signed out).
    case reinstalled
    /// Apple says the person stopped using Sign in with Apple with this app (checked at launch).
    case appleCredentialRevoked = "apple_credential_revoked"
}

/// What `authStateChanges` yields: the current state first, then each change.
public enum AuthEvent: Sendable, Equatable {
    /// The state when the stream was made, always the first event.
    case initial(AuthState)
    /// A person is signed in, announced once per person whatever the path: a sign-in,
    /// `restore()`, or a call that confirmed the saved session.
    case signedIn(UserPayload)
    /// `nil` when a launch found no session to restore (the first launch, after a sign-out).
    case signedOut(SignOutReason?)
    /// A refresh gave the session new tokens; `state` may have left `offline` with it.
    case tokenRefreshed
    /// The signed-in person's user changed (a profile edit, a verified address, a linked
    /// sign-in, or a newer copy from the server).
    case userUpdated(UserPayload)
    /// A snapshot from the server differs from the one kept (a purchase, a trial, a plan
    /// change): update what the plan unlocks.
    case entitlementsChanged(EntitlementsPayload)
    /// A sign-in needs its second factor (`AuthState.secondFactorRequired`).
    case secondFactorRequired(MFAChallengePayload)
}

/// How `restore()` ended.
public enum RestoreOutcome: Sendable, Equatable {
    /// The session is confirmed by the server.
    case restored(UserPayload)
    /// The server could not be reached after every attempt: the session is kept and the person
    /// stays signed in with the last user known; calls refresh it when the network is back.
    case offline(UserPayload)
    /// Nobody is signed in: the reason the saved session ended (`.sessionExpired`,
    /// `.reinstalled`, …), or nil when there was none to restore.
    case signedOut(SignOutReason?)
    /// The `restore()` task was cancelled while the saved session could not be read yet (the
    /// device has not been unlocked since it started): the state stays `.restoring`, and the
    /// next `restore()` or call reads the session again.
    case storageLocked
}
