import Foundation
import GatehouseCore
import GatehouseWire
import Observation

/// The offer to add a passkey once signed in, and the account's passkeys: after a sign-up or a
/// magic-link sign-in, or on an anonymous account (which the passkey upgrades, keeping its id).
/// Offered while the preset enables passkeys and the account has none, until "Not now".
@MainActor @Observable
public final class PasskeyEnrollment {
    /// The account's passkeys (`load()` and every change fill it).
    public private(set) var passkeys: [PasskeyPayload] = []
    /// True while a passkey is being added; the Add button stays off meanwhile.
    public private(set) var isWorking = false
    /// The server's or the device's refusal, in the preset's words; nil after a cancelled sheet.
    public private(set) var errorMessage: String?
    /// Set when the server wants a fresh sign-in before a passkey is added (`reauthentication_required`).
    public private(set) var needsReauthentication = false
    /// "Passkey added…", after one was.
    public private(set) var notice: String?

    private let client: Gatehouse
    private var enabled = false
    private var dismissed = false
    private var copy: [String: String] = [:]

    /// An offer for the account signed in to `client`; hidden until ``load()`` runs.
    public init(client: Gatehouse) { self.client = client }

    /// Reads whether the preset enables passkeys and, when signed in, the account's passkeys.
    public func load() async {
        enabled = await client.offersPasskeys()
        copy = await client.copy
        if enabled, await client.state.user != nil, let list = try? await client.passkeys() {
            passkeys = list
        }
    }

    /// Whether to show the offer now.
    public var isOffered: Bool { enabled && passkeys.isEmpty && !dismissed && notice == nil }

    /// The offer's heading in the preset's words.
    public var title: String { copy["passkey.offer_title"] ?? "Sign in faster next time" }
    /// The offer's text under the heading, in the preset's words.
    public var message: String {
        copy["passkey.offer_message"] ?? "Save a passkey on this device and sign in with Face ID or Touch ID. No password to remember."
    }
    /// The label of the button that runs ``add(using:name:)``.
    public var addLabel: String { copy["passkey.add"] ?? "Add a passkey" }
    /// The label of the button that runs ``notNow()``.
    public var notNowLabel: String { copy["passkey.not_now"] ?? "Not now" }

    /// "Not now": the offer stays away until the next `PasskeyEnrollment`.
    public func notNow() { dismissed = true }

    /// Asks the device for a passkey and adds it to the account; true when added.
    public func add(using device: some PasskeyAuthenticator, name: String? = nil) async -> Bool {
        guard !isWorking else { return false }
        isWorking = true
        defer { isWorking = false }
        do throws(GatehouseClientError) {
            // Only ever to this account: signed out, `not_signed_in`, never a new account.
            passkeys.append(try await client.addPasskeyToAccount(using: device, name: name))
            errorMessage = nil
            needsReauthentication = false
            notice = copy["passkey.added"] ?? "Passkey added. Next time, sign in with it."
            return true
        } catch {
            fail(error)
            return false
        }
    }

    /// Renames one of the account's passkeys.
    public func rename(_ passkey: PasskeyPayload, to name: String) async {
        do throws(GatehouseClientError) {
            let renamed = try await client.renamePasskey(id: passkey.id, name: name)
            passkeys = passkeys.map { $0.id == renamed.id ? renamed : $0 }
            errorMessage = nil
        } catch {
            fail(error)
        }
    }

    /// Removes one; the server refuses the account's last way in (`last_identity`) and the
    /// model shows its message.
    public func remove(_ passkey: PasskeyPayload) async {
        do throws(GatehouseClientError) {
            try await client.deletePasskey(id: passkey.id)
            passkeys.removeAll { $0.id == passkey.id }
            errorMessage = nil
        } catch {
            fail(error)
        }
    }

    private func fail(_ error: GatehouseClientError) {
        needsReauthentication = error.code == .reauthenticationRequired
        errorMessage = error.code == .passkeyCancelled ? nil : error.message
    }
}
