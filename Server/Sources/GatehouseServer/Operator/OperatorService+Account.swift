import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// An operator's changes to an account's data (issue 46): its metadata and its address. Today
/// through `/auth/v1/admin/users` with the service role key (GoTrue's `PUT /admin/users/{id}`);
/// another operator surface would call the same actions.
extension OperatorService {
    /// Merges `user_metadata` and `app_metadata` (top level; `null` removes a key) under
    /// `AccountMetadata`'s rules; audited once per object changed.
    func setMetadata(
        _ reference: String, userMetadata: [String: JSONValue]?, appMetadata: [String: JSONValue]?, by actor: String = operatorActor,
        client: ClientInfo? = nil
    ) async throws {
        let user = try await find(reference)
        var patches: [AccountMetadata.Kind: [String: JSONValue]] = [:]
        patches[.user] = userMetadata
        patches[.app] = appMetadata
        try await unitOfWork.run(client: client) { [patches] work in
            for kind in try await MetadataWrites.apply(work.narrowed { $0 }, user: user.id, patches, by: .operator) {
                try await work.audit(.metadataChanged, user: user.id, details: ["kind": kind.rawValue, "by": actor])
            }
        }
    }

    /// Changes the account's address as the operator says, without a mail: unverified unless
    /// `verified` (the operator vouches for it), under `AddressChange`'s rules; sessions stay.
    /// 409 `email_in_use` when another account has it.
    func changeEmail(_ reference: String, to address: String, verified: Bool, by actor: String = operatorActor, client: ClientInfo? = nil) async throws {
        let user = try await find(reference)
        guard EmailAddress.isValid(address) else {
            throw GatehouseError(status: 400, code: .invalidEmail, message: "Unable to validate email address: invalid format")
        }
        do {
            try await unitOfWork.run(client: client) { work in
                try await work.tx.lockUser(user.id)
                guard let stored = try await work.tx.user(id: user.id) else { throw GatehouseError.notFound("User not found") }
                guard case .changed(let nowVerified) = try await AddressChange.apply(work.narrowed { $0 }, stored, to: address, verified: verified) else {
                    return
                }
                try await work.audit(.emailChanged, user: user.id, details: ["by": actor, "verified": String(nowVerified)])
            }
        } catch let error as StoreError where AddressChange.inUse(error) {
            throw GatehouseError(status: 409, code: .emailInUse, message: "This email is already in use.")
        }
    }
}
