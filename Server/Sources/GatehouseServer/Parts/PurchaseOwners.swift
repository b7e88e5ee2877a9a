import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Who owns a purchase, as every source that binds one to an account answers it (the App Store's
/// `appAccountToken`, Google Play's obfuscated account id): 409 `subscription_in_use` with the
/// owner's masked way to sign in, never more of the other account.
enum PurchaseOwners {
    /// 409 `subscription_in_use`, with the owner's masked address to sign in with.
    static func inUse(by owner: User?, in reader: any UserStore & IdentityStore) async throws -> GatehouseError {
        var hint: String?
        if let owner { hint = try await Self.hint(for: owner, in: reader) }
        var error = GatehouseError(
            status: 409, code: .subscriptionInUse, message: "This purchase belongs to another account. Sign in to that account to use it.")
        error.details = ["owned_by_account": .bool(true), "sign_in_hint": hint.map(JSONValue.string) ?? .null]
        return error
    }

    /// `a•••@x.io` for an account with an address, else its sign-in provider.
    static func hint(for user: User, in reader: any UserStore & IdentityStore) async throws -> String? {
        if let email = user.email, let at = email.firstIndex(of: "@"), at != email.startIndex {
            return "\(email[email.startIndex])\u{2022}\u{2022}\u{2022}\(email[at...])"
        }
        let providers = try await reader.identities(of: user.id).map(\.provider)
        if providers.contains(.apple) { return "Apple" }
        if providers.contains(.google) { return "Google" }
        return nil
    }
}
