import Foundation
import GatehouseWire
import Observation

/// Profile set-up after sign-up (Handz CH07 §8.6): a display name, an optional handle checked
/// against the server while the person types (after a pause, so one request per pause rather
/// than per keystroke), the initials avatar, Continue to save and Skip to keep the temporary
/// handle the account was created with (decision 9).
@MainActor @Observable
public final class ProfileSetupModel {
    /// What the handle field says about the handle typed, as the availability check answers.
    public enum HandleStatus: Sendable, Equatable {
        /// Nothing typed: the temporary handle stays.
        case empty
        /// A handle is typed and the check is waiting for the pause or the server's answer;
        /// Continue is off.
        case checking
        /// The server says the handle can be had.
        case available
        /// The server's reason (`taken`, `too_short`, `too_long`, `invalid_characters`,
        /// `reserved`) and the words to show.
        case unavailable(reason: String, message: String)
        /// The check could not be made (offline); Continue will ask the server anyway.
        case unknown
    }

    /// The display name as typed; starts as the account's own, and the avatar follows it.
    public var displayName = ""
    /// The handle as typed; each change starts a new availability check after the pause.
    public var handle = "" {
        didSet { if handle != oldValue { scheduleCheck() } }
    }
    /// What the last availability check said about ``handle``; decides whether Continue is on.
    public private(set) var handleStatus: HandleStatus = .empty
    /// True while Continue is saving the profile.
    public private(set) var isSaving = false
    /// Why the last save failed, in the server's words; nil after one that worked.
    public private(set) var errorMessage: String?
    /// The account as the server last described it.
    public private(set) var user: UserPayload

    private let client: Gatehouse
    private let pause: Duration
    private var check: Task<Void, Never>?
    /// How many availability requests were sent (one per pause in typing).
    public private(set) var checksSent = 0

    /// Profile set-up for the account just created.
    ///
    /// - Parameters:
    ///   - client: The client the handle checks and the save go through.
    ///   - user: The signed-in account, for its display name, temporary handle and avatar.
    ///   - pause: How long typing must stop before the handle is checked; 300 ms by default.
    public init(client: Gatehouse, user: UserPayload, pause: Duration = .milliseconds(300)) {
        self.client = client
        self.user = user
        self.pause = pause
        displayName = user.displayName ?? ""
    }

    /// The temporary handle the account has until the person picks one.
    public var currentHandle: String? { user.handle }

    /// Initials and colour for the avatar tile, following the name as it is typed.
    public var avatar: AvatarPlaceholder {
        var preview = user
        if !displayName.isEmpty { preview.displayName = displayName }
        return AvatarPlaceholder(user: preview)
    }

    /// Whether Continue is on: nothing being saved, and no handle that is still being checked
    /// or is unavailable.
    public var canContinue: Bool {
        guard !isSaving else { return false }
        switch handleStatus {
        case .empty, .available, .unknown: return true
        case .checking, .unavailable: return false
        }
    }

    private func scheduleCheck() {
        check?.cancel()
        let typed = handle.trimmingCharacters(in: .whitespaces)
        guard !typed.isEmpty else {
            handleStatus = .empty
            return
        }
        handleStatus = .checking
        check = Task { [pause, client] in
            do { try await Task.sleep(for: pause) } catch { return }
            self.checksSent += 1
            let answer: HandleAvailability
            do {
                answer = try await client.handleAvailability(typed)
            } catch {
                if self.handle.trimmingCharacters(in: .whitespaces) == typed { self.handleStatus = .unknown }
                return
            }
            // A later keystroke owns the status.
            guard !Task.isCancelled, self.handle.trimmingCharacters(in: .whitespaces) == typed else { return }
            if answer.available {
                self.handleStatus = .available
            } else {
                let reason = answer.reason ?? "taken"
                self.handleStatus = .unavailable(reason: reason, message: await Self.message(for: reason, client: client))
            }
        }
    }

    /// Waits for the check in flight, if any (views do not need this; tests do).
    public func settle() async { await check?.value }

    static func message(for reason: String, client: Gatehouse) async -> String {
        let fallback: String
        switch reason {
        case "taken": fallback = "That handle is taken."
        case "too_short", "too_long": fallback = "Handles are 3 to 20 characters."
        case "invalid_characters": fallback = "Use letters, numbers and underscores only."
        case "reserved": fallback = "That handle is not available."
        default: fallback = "That handle is not available."
        }
        return await client.text("handle.\(reason)", fallback)
    }

    /// Continue: saves the name and, when one was typed, the handle; true when saved.
    public func save() async -> Bool {
        guard canContinue else { return false }
        isSaving = true
        defer { isSaving = false }
        let name = displayName.trimmingCharacters(in: .whitespaces)
        let typed = handle.trimmingCharacters(in: .whitespaces)
        do throws(GatehouseClientError) {
            user = try await client.updateProfile(ProfilePatch(displayName: name.isEmpty ? nil : name, handle: typed.isEmpty ? nil : typed))
            errorMessage = nil
            return true
        } catch {
            errorMessage = error.message
            if error.code == .handleTaken {
                handleStatus = .unavailable(reason: "taken", message: await Self.message(for: "taken", client: client))
            }
            return false
        }
    }

    /// Skip: nothing is sent; the temporary handle stays.
    public func skip() {
        check?.cancel()
        handle = ""
    }
}
