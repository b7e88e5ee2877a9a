import Foundation
import GatehouseCore

extension SQLStore {
    public func identity(provider: Provider, subject: String) async throws(StoreError) -> Identity? {
        try await executor.query(
            """
            SELECT id, user_id, provider, subject, email, is_private_relay, created_at
            FROM identities WHERE provider = ? AND subject = ?
            """, [.text(provider.rawValue), .text(subject)]
        ).first.map(Self.identity(from:))
    }

    public func updateIdentity(_ id: UUID, email: String?, isPrivateRelay: Bool) async throws(StoreError) {
        try await executor.query(
            "UPDATE identities SET email = ?, is_private_relay = ? WHERE id = ?",
            [SQLValue(email), SQLValue(isPrivateRelay), .text(id.uuidString.lowercased())])
    }

    public func deleteIdentities(of userID: UserID, provider: Provider) async throws(StoreError) -> Int {
        try await executor.query(
            "DELETE FROM identities WHERE user_id = ? AND provider = ? RETURNING id", [.text(userID.description), .text(provider.rawValue)]
        ).count
    }

    public func fillProfile(_ id: UserID, displayName: String?, avatarURL: String?, now: Date) async throws(StoreError) {
        try await executor.query(
            """
            UPDATE users SET display_name = COALESCE(display_name, ?), avatar_url = COALESCE(avatar_url, ?), updated_at = ?
            WHERE id = ?
            """, [SQLValue(displayName), SQLValue(avatarURL), .integer(now.unixSeconds), .text(id.description)])
    }

    public func updateEmail(
        _ id: UserID, email: String?, normalizedEmail: String?, verifiedAt: Date?, now: Date
    ) async throws(StoreError) {
        try await executor.query(
            "UPDATE users SET email = ?, email_normalized = ?, email_verified_at = ?, updated_at = ? WHERE id = ?",
            [SQLValue(email), SQLValue(normalizedEmail), SQLValue(verifiedAt?.unixSeconds), .integer(now.unixSeconds), .text(id.description)])
    }

    public func deleteUser(_ id: UserID) async throws(StoreError) -> Bool {
        let rows = try await executor.query("DELETE FROM users WHERE id = ? RETURNING email", [.text(id.description)])
        guard let row = rows.first else { return false }
        try await executor.query(
            "UPDATE audit_log SET ip_address = NULL, user_agent = NULL WHERE user_id = ?", [.text(id.description)])
        if let email = try row.optionalString("email") {
            try await executor.query(
                "UPDATE outbox SET recipient = '', text_body = NULL, html_body = NULL WHERE lower(recipient) = lower(?)", [.text(email)])
        }
        return true
    }
}
