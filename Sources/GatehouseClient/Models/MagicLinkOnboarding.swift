import Foundation
import GatehouseCore
import GatehouseWire
import Observation

/// Hannah Health's way in (magic link only): the address, then "check your email", then the
/// link opened in the app or the 6-digit code typed (for a link opened in another browser),
/// then signed in; a new account's 7-day trial starts with it, and the model says so.
@MainActor @Observable
public final class MagicLinkOnboarding {
    public enum Step: Sendable, Equatable {
        case email
        case sent
        case signedIn(newAccount: Bool)
    }

    public var email = ""
    public var code = ""
    public private(set) var step: Step = .email
    public private(set) var isWorking = false
    public private(set) var errorMessage: String?
    /// The trial's days left once signed in on a trial (`trialStarted` is shown for a new one).
    public private(set) var trialDaysLeft: Int?

    private let client: GatehouseClient

    public init(client: GatehouseClient) { self.client = client }

    public var canSend: Bool { EmailAddress.isValid(email.trimmingCharacters(in: .whitespaces)) && !isWorking }
    public var canSubmitCode: Bool { step == .sent && code.count == 6 && code.allSatisfy(\.isNumber) && !isWorking }

    /// "Check your email" with the address the link went to.
    public var sentMessage: String {
        get async {
            await client.text("magic.sent", "We sent a sign-in link to {email}. Open it on this phone, or type the 6-digit code.")
                .replacingOccurrences(of: "{email}", with: email.trimmingCharacters(in: .whitespaces))
        }
    }

    /// Shown once after a new account's first sign-in.
    public var trialStartedMessage: String? {
        get async {
            guard step == .signedIn(newAccount: true), trialDaysLeft != nil else { return nil }
            return await client.text("trial.started", "Your 7-day free trial has started. No payment details required.")
        }
    }

    /// Sends (or sends again) the link; true when the server took it.
    public func send() async -> Bool {
        guard canSend else { return false }
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            try await client.sendMagicLink(email: email.trimmingCharacters(in: .whitespaces))
            errorMessage = nil
            step = .sent
            return true
        } catch {
            errorMessage = error.message
            return false
        }
    }

    /// The app was opened with `url` (the link from the mail); true when it signed in.
    public func open(_ url: URL) async -> Bool {
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            guard let result = try await client.handle(url: url) else { return false }
            await finish(result)
            return true
        } catch {
            errorMessage = error.message
            return false
        }
    }

    /// The code typed from the mail; true when it signed in.
    public func submitCode() async -> Bool {
        guard canSubmitCode else { return false }
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            await finish(try await client.verifyMagicLink(email: email.trimmingCharacters(in: .whitespaces), code: code))
            return true
        } catch {
            errorMessage = error.message
            return false
        }
    }

    /// Back to the address (a typo in it).
    public func changeAddress() {
        step = .email
        code = ""
        errorMessage = nil
    }

    private func finish(_ result: SignInResult) async {
        errorMessage = nil
        let snapshot = try? await client.entitlements()
        trialDaysLeft = snapshot?.planState == "trial" ? snapshot?.trial?.daysLeft : nil
        step = .signedIn(newAccount: result.created)
    }
}
