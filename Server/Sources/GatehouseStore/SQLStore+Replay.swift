import Foundation
import GatehouseCore

extension SQLStore {
    public func recordMessageID(issuer: String, id: String, keepUntil: Date) async throws(StoreError) -> Bool {
        !(try await executor.query(
            "INSERT INTO used_message_ids (issuer, message_id, keep_until) VALUES (?, ?, ?) ON CONFLICT DO NOTHING RETURNING message_id",
            [.text(issuer), .text(id), .integer(keepUntil.unixSeconds)]
        ).isEmpty)
    }
}
