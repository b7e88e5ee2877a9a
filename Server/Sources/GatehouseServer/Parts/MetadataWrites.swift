import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The one write of an account's metadata, for every surface (`PATCH /v1/me`, `/auth/v1`'s
/// sign-up `data` and `PUT /user`, the service role's admin calls, the admin API, the console):
/// in the caller's transaction, with the account's row held, merged with what is stored at that
/// moment under `AccountMetadata`'s rules, so two writers racing lose no key.
enum MetadataWrites {
    typealias Writing = any UserStore

    /// Merges each patch; refuses a kind `writer` may not write (403) and an object over the
    /// limit (400 `invalid_request`). Returns the kinds that changed.
    @discardableResult
    static func apply(
        _ work: Work<Writing>, user id: UserID, _ patches: [AccountMetadata.Kind: [String: JSONValue]], by writer: AccountMetadata.Writer
    ) async throws -> [AccountMetadata.Kind] {
        let patches = patches.filter { !$0.value.isEmpty }
        guard !patches.isEmpty else { return [] }
        for kind in patches.keys where !kind.writable(by: writer) {
            throw GatehouseError(status: 403, code: .forbidden, message: "Only operators may write \(kind.rawValue).")
        }
        try await work.tx.lockUser(id)
        guard let stored = try await work.tx.user(id: id) else { throw GatehouseError.notFound("User not found") }
        var changed: [AccountMetadata.Kind] = []
        for kind in AccountMetadata.Kind.allCases {
            guard let patch = patches[kind] else { continue }
            let current = kind == .user ? stored.userMetadata : stored.appMetadata
            let merged = try AccountMetadata.merged(current, patch, kind: kind)
            guard merged != current else { continue }
            try await work.tx.setMetadata(id, kind, merged, now: work.now)
            changed.append(kind)
        }
        return changed
    }
}
