import Foundation
import GatehouseCore
import GatehouseWire
import Observation

/// OKLah's anonymous onboarding (§7–§11) as a state machine a SwiftUI view binds to:
/// privacy screen → Start → creating the account → Home, or an error with Try Again.
@MainActor @Observable
public final class OnboardingModel {
    /// OKLah §8's states.
    public enum State: String, Sendable, Equatable {
        /// Before ``OnboardingModel/launch()`` has finished, when no session was saved: nothing to
        /// show yet.
        case notOnboarded = "NOT_ONBOARDED"
        /// The privacy screen with Start: nobody is signed in.
        case privacyScreen = "PRIVACY_SCREEN"
        /// After Start: the anonymous account is being created (show the loading text).
        case creatingAccount = "CREATING_ACCOUNT"
        /// Signed in: Home shows.
        case onboarded = "ONBOARDED"
        /// The account could not be created: the error text with Try Again.
        case error = "ERROR"
        /// At launch, while a saved session is being restored; Home follows when it is, the
        /// privacy screen when it is not.
        case sessionExpired = "SESSION_EXPIRED"
    }

    /// The screen to show; changes as ``launch()``, ``start()``, ``tryAgain()`` and
    /// ``didBecomeActive()`` run.
    public private(set) var state: State = .notOnboarded
    /// The three names the new account may choose from.
    public private(set) var nameSuggestions: [String] = []
    /// The Home screen's motivational message, picked at random from the preset.
    public private(set) var homeMessage: String?
    /// The account once signed in (created by ``start()`` or restored by ``launch()``), updated
    /// by ``chooseName(_:)``; nil until then.
    public private(set) var user: UserPayload?
    /// The new account still has to pick one of `nameSuggestions` (shown on Home).
    public var needsName: Bool { state == .onboarded && !nameSuggestions.isEmpty && user?.onboardingComplete == false }
    /// How many times Try Again was tapped.
    public private(set) var attempts = 0

    /// "Start" is tappable only on the privacy screen: disabled from the first tap (VR-ONB-001).
    public var isStartEnabled: Bool { state == .privacyScreen }

    // Copy from the preset (decision 28), with OKLah's words when no configuration is loaded yet.
    /// The privacy screen's heading.
    public var title: String { text("privacy.title", "Welcome") }
    /// The privacy screen's three bullet points, in order.
    public var bullets: [String] {
        [
            text("privacy.bullet_1", "Private by design"), text("privacy.bullet_2", "No personal details needed"),
            text("privacy.bullet_3", "Your details stay private"),
        ]
    }
    /// The label of the privacy screen's button that runs ``start()``.
    public var startLabel: String { text("privacy.start", "Start") }
    /// What shows while the account is being created.
    public var loadingText: String { text("onboarding.loading", "Setting things up...") }
    /// What the error screen says when the account could not be created.
    public var errorText: String { text("onboarding.error", "Your account could not be created. Check your connection and try again.") }
    /// The label of the error screen's button that runs ``tryAgain()``.
    public var tryAgainLabel: String { text("onboarding.try_again", "Try Again") }

    private let client: Gatehouse
    private let appVersion: String
    private var copy: [String: String] = [:]
    private var messages: [String] = []
    /// When the privacy screen showed, on the client's monotonic clock (`ClientClock.uptime`):
    /// `duration_ms` is measured from it, unmoved by a change of the device's date.
    private var privacyShownAt: TimeInterval?
    /// The creation in flight, so any number of taps make one request.
    private var creation: Task<Void, Never>?
    /// Set when the app went to the background while the account was being created.
    private var interruptedInBackground = false
    private var retriedAfterBackground = false

    /// An onboarding that has not started; call ``launch()`` when the app starts.
    ///
    /// - Parameters:
    ///   - client: The client the anonymous account is created and restored through.
    ///   - appVersion: The app's version, sent as `app_version` with the onboarding events.
    public init(client: Gatehouse, appVersion: String) {
        self.client = client
        self.appVersion = appVersion
    }

    private func text(_ key: String, _ fallback: String) -> String { copy[key] ?? fallback }

    /// At launch: a saved session goes straight to Home (US-ONB-003), after a silent restore of
    /// up to three attempts; none (or one the server ended) shows the privacy screen.
    public func launch() async {
        await loadCopy()
        let saved = await client.hasSavedSession
        if saved { state = .sessionExpired }
        switch await client.restore() {
        case .restored(let user), .offline(let user):
            self.user = user
            // Every visit to Home gets a message (decision 27), a relaunch too.
            homeMessage = messages.randomElement()
            state = .onboarded
        case .signedOut:
            showPrivacyScreen()
        case .storageLocked:
            // Cancelled before the Keychain could be read: the next launch() reads it.
            break
        }
    }

    private func loadCopy() async {
        if let configuration = try? await client.loadConfiguration() {
            messages = configuration.app.homeMessages
        }
        copy = await client.copy
    }

    private func showPrivacyScreen() {
        state = .privacyScreen
        privacyShownAt = client.clock.uptime()
        let properties = eventProperties()
        Task { await client.track("onboarding_start", properties) }
    }

    /// "Start": one anonymous account, however fast the taps.
    public func start() {
        guard state == .privacyScreen || state == .error, creation == nil else { return }
        state = .creatingAccount
        interruptedInBackground = false
        creation = Task { await self.create() }
    }

    /// Waits for the creation in flight (for tests and for a view's `.task`).
    public func waitForCreation() async {
        await creation?.value
    }

    private func create() async {
        defer { creation = nil }
        do {
            let account = try await client.signInAnonymously()
            user = account.user
            nameSuggestions = account.nameSuggestions
            homeMessage = messages.randomElement()
            state = .onboarded
        } catch {
            if interruptedInBackground && !retriedAfterBackground {
                // §11 edge case 7: back in the foreground, one silent retry before the error.
                return
            }
            state = .error
            await client.track(
                "onboarding_error",
                eventProperties().merging(["error_code": .string(error.code.rawValue)]) { $1 })
        }
    }

    /// "Try Again" on the error screen.
    public func tryAgain() {
        guard state == .error else { return }
        attempts += 1
        let properties = eventProperties().merging(["attempt_number": .number(Double(attempts))]) { $1 }
        Task { await client.track("onboarding_retry", properties) }
        start()
    }

    /// OKLah §13's common properties, the time on the client's clock.
    private func eventProperties() -> [String: JSONValue] {
        ["app_version": .string(appVersion), "timestamp": .string(client.clock.now().rfc3339)]
    }

    /// The app went to the background.
    public func didEnterBackground() {
        if state == .creatingAccount { interruptedInBackground = true }
    }

    /// Back in the foreground (§11 edge case 7): if the creation did not complete, retry it once
    /// silently; if that fails too, the error screen shows.
    public func didBecomeActive() async {
        await creation?.value
        guard interruptedInBackground, state == .creatingAccount, !retriedAfterBackground else { return }
        retriedAfterBackground = true
        creation = Task { await self.create() }
        await creation?.value
    }

    /// Picks one of the offered names (`POST /v1/me/anonymous-name`). Onboarding is then
    /// complete (decision 24: after the name is chosen and Home is reached): the account is
    /// marked `onboarding_complete` and `onboarding_complete` is reported with its duration.
    public func chooseName(_ name: String) async throws(GatehouseClientError) {
        user = try await client.chooseName(name)
        user = try await client.updateProfile(ProfilePatch(onboardingComplete: true))
        var properties = eventProperties()
        if let id = user?.id { properties["user_id"] = .string(id) }
        if let privacyShownAt {
            properties["duration_ms"] = .number(((client.clock.uptime() - privacyShownAt) * 1000).rounded())
        }
        await client.track("onboarding_complete", properties)
    }
}
