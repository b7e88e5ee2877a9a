import Foundation
import GatehouseCore
import GatehouseWire
import Observation

/// The "Delete account" screen (App Store guideline 5.1.1(v)): asks for what the server needs,
/// and nothing more.
///
/// A session signed in within the last five minutes deletes at once. An older one is refused
/// with `reauthentication_required`; the model then asks for the password when the account has
/// one (``Route/password``), or says to sign in again (``Route/signInAgain``). A preset whose gate
/// asks for a second factor before deletion gets a ``StepUpPrompt`` (``Route/stepUp``); once it
/// is complete, ``delete()`` tries again.
///
/// ```swift
/// let deletion = AccountDeletionModel(client: gatehouse)
/// if await deletion.delete() { /* signed out: .signedOut(.accountDeleted) */ }
/// if deletion.route == .password { deletion.password = "…"; await deletion.delete() }
/// ```
@MainActor @Observable
public final class AccountDeletionModel {
    /// What the screen shows.
    public enum Route: Sendable, Equatable {
        /// The confirmation: ``deleteLabel`` deletes.
        case confirm
        /// The session is too old: the password field (``password``), then ``delete()``.
        case password
        /// The session is too old and the account has no password: sign out and sign in again
        /// (``guidance``), then delete within five minutes.
        case signInAgain
        /// A second factor is needed first: show ``stepUp``, then call ``delete()`` again.
        case stepUp
        /// The account is gone; the client is signed out.
        case deleted
    }

    /// What the screen shows now.
    public private(set) var route: Route = .confirm
    /// The password, on ``Route/password``.
    public var password = ""
    /// True while a deletion is under way.
    public private(set) var isWorking = false
    /// The server's words for the last refusal (why the password or a new sign-in is needed, or
    /// that the password was wrong); nil before one.
    public private(set) var message: String?
    /// The second-factor prompt, on ``Route/stepUp``.
    public private(set) var stepUp: StepUpPrompt?

    private let client: Gatehouse
    private var copy: [String: String] = [:]

    /// A deletion screen for the account signed in to `client`.
    public init(client: Gatehouse) {
        self.client = client
    }

    /// Loads the preset's copy for the labels.
    public func load() async {
        copy = await client.copy
    }

    /// The screen's heading.
    public var title: String { copy["delete.title"] ?? "Delete account" }
    /// The button that deletes.
    public var deleteLabel: String { copy["delete.button"] ?? "Delete my account" }
    /// The password field's label.
    public var passwordLabel: String { copy["delete.password_label"] ?? "Password" }
    /// What ``Route/signInAgain`` says under ``message``.
    public var guidance: String {
        route == .signInAgain ? copy["delete.sign_in_again"] ?? "Sign out, then sign in again and delete your account within five minutes." : ""
    }

    /// Whether the delete button is on.
    public var canDelete: Bool {
        switch route {
        case .confirm: !isWorking
        case .password: !isWorking && !password.isEmpty
        case .stepUp: !isWorking && stepUp?.isComplete == true
        case .signInAgain, .deleted: false
        }
    }

    /// Deletes the account with what the route asks for; true once it is gone. A refusal moves
    /// to the route that answers it, with the server's words in ``message``; a wrong password
    /// stays on ``Route/password`` with the field emptied.
    @discardableResult
    public func delete() async -> Bool {
        guard canDelete else { return false }
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            try await client.deleteAccount(proof: route == .password ? .password(password) : .none)
            password = ""
            message = nil
            stepUp = nil
            route = .deleted
            return true
        } catch {
            password = ""
            message = error.message
            if error.code == .reauthenticationRequired {
                // The proofs that fit this account; a wrong password keeps asking for one.
                let proofs = error.details?["proofs"]?.decoded(as: [String].self)
                route = proofs.map { $0.contains("password") } ?? (route == .password) ? .password : .signInAgain
            } else if error.code == .mfaRequired, let prompt = StepUpPrompt(client: client, error: error) {
                stepUp = prompt
                route = .stepUp
                await prompt.load()
            }
            return false
        }
    }
}
